/* engine_execute.c: runs the execution list of a negotiation round, in order, on
 * every rank: allreduce requests fused (fusion.c), the other collectives one by one
 * through their algorithms (algo/), each request completed or failed here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flight_recorder.h"
#include "hv_internal.h"
#include "reduce.h"
#include "timeline.h"

/* memmove that accepts NULL buffers when there is nothing to move (count 0 tensors
 * may come with NULL pointers; the C library's functions must not see those). */
void hv__move_bytes(void *dst, const void *src, size_t n) {
  if (n && dst != src) memmove(dst, src, n);
}

/* A failed collective leaves the ranks out of step (some finished it, some did not,
 * a peer may be gone): nothing more can run on this communicator. The entries from
 * `from` on, not completed, move to the front of the list; the engine logs them and
 * fails them with the cause. */
/* Appends h to the execution list; -1 when out of memory. */
int hv__exec_add(hv_comm_t *comm, struct hv_handle *h) {
  if (comm->exec_count == comm->exec_cap) {
    size_t cap = comm->exec_cap ? comm->exec_cap * 2 : 64;
    hv__exec_t *e = realloc(comm->exec, cap * sizeof *e);
    if (!e) return -1;
    comm->exec = e;
    comm->exec_cap = cap;
  }
  comm->exec[comm->exec_count++].handle = h;
  return 0;
}

hv_result_t hv__exec_stop_at(hv_comm_t *comm, size_t from, hv_result_t rc) {
  memmove(comm->exec, comm->exec + from, (comm->exec_count - from) * sizeof *comm->exec);
  comm->exec_count -= from;
  return rc;
}

static hv_result_t run_broadcast(hv_comm_t *comm, struct hv_handle *h) {
  size_t bytes = h->meta.count * hv_dtype_size((hv_dtype_t)h->meta.dtype);
  return hv__broadcast(&comm->algo, h->recvbuf, bytes, h->meta.root);
}

/* Allgather and allgatherv: in the receive buffer, with segments sized by each
 * rank's count. */
static hv_result_t run_allgather(hv_comm_t *comm, struct hv_handle *h, char **detail) {
  size_t es = hv_dtype_size((hv_dtype_t)h->meta.dtype);
  size_t *off = comm->algo.seg_off;
  off[0] = 0;
  for (int q = 0; q < comm->size; q++) {
    uint64_t c = h->all_counts ? h->all_counts[q] : h->meta.count;
    /* Every rank sees the same counts, so every rank fails here alike, before the ring. */
    if (c > SIZE_MAX / es - off[q]) {
      *detail = hv__strdup_printf("tensor '%s': allgatherv of %s: the ranks' counts add up past size_t (%zu "
                                  "elements up to rank %d, then %llu)", h->name, hv_dtype_name((hv_dtype_t)h->meta.dtype),
                                  off[q], q, (unsigned long long)c);
      return HV_SUCCESS;
    }
    off[q + 1] = off[q] + c;
  }
  size_t total = off[comm->size];
  char *dest = h->recvbuf;
  if (h->meta.coll == HV__COLL_ALLGATHERV) {
    for (int q = 0; q < comm->size; q++) h->recvcounts[q] = off[q + 1] - off[q];
    if (total > h->recv_capacity) {
      /* Every other rank runs the ring regardless: take part through scratch space,
       * then fail this rank's handle with the size it needs. */
      HV_CHECK(hv__algo_scratch(&comm->algo, total * es + 1, (void **)&dest));
      *detail = hv__strdup_printf("tensor '%s': allgatherv needs a receive capacity of %zu elements, "
                                  "but rank %d gave %zu", h->name, total, comm->rank, h->recv_capacity);
    }
  }
  char *mine = dest + off[comm->rank] * es;
  hv__move_bytes(mine, h->sendbuf, (off[comm->rank + 1] - off[comm->rank]) * es);
  return hv__allgather(&comm->algo, dest, off, es);
}

/* Reduce-scatter: the send buffer is copied into the fusion buffer, reduced there,
 * and this rank's block copied out (divided for AVERAGE). */
static hv_result_t run_reducescatter(hv_comm_t *comm, struct hv_handle *h) {
  hv_dtype_t dt = (hv_dtype_t)h->meta.dtype;
  size_t es = hv_dtype_size(dt), block = h->meta.count;
  if (block == 0) return HV_SUCCESS;
  HV_CHECK(hv__fusion_reserve(comm, block * (size_t)comm->size * es));
  memcpy(comm->fusion_buf, h->sendbuf, block * (size_t)comm->size * es);
  HV_CHECK(hv__reducescatter(&comm->algo, comm->fusion_buf, block, dt, (hv_op_t)h->meta.op));
  memcpy(h->recvbuf, (char *)comm->fusion_buf + (size_t)comm->rank * block * es, block * es);
  if (h->meta.op == HV_AVERAGE) hv__divide(h->recvbuf, block, dt, h->contributors ? h->contributors : comm->size);
  return HV_SUCCESS;
}

static hv_result_t run_alltoall(hv_comm_t *comm, struct hv_handle *h) {
  size_t bytes = h->meta.count * hv_dtype_size((hv_dtype_t)h->meta.dtype);
  return hv__alltoall(&comm->algo, h->sendbuf, h->recvbuf, bytes);
}

/* Large reduces: reduce-scatter (hv's ring, reducescatter.c) in the fusion buffer,
 * then every rank's reduced block to the root (alltoallv.c): Rabenseifner's reduce.
 * Open MPI's MPI_Ireduce (libnbc) took 12 ms for 4 MiB on 2 ranks where its blocking
 * MPI_Reduce took 1.1 ms and hv's reduce-scatter is 3x faster than MPI's (hvbench,
 * 2026-11-27); small ones stay with MPI_Ireduce, one latency-bound tree. */
#define REDUCE_RS_MIN_BYTES ((size_t)64 << 10)

static hv_result_t reduce_rs_gather(hv_comm_t *comm, struct hv_handle *h) {
  hv_dtype_t dt = (hv_dtype_t)h->meta.dtype;
  int n = comm->size, r = comm->rank, root = h->meta.root;
  size_t es = hv_dtype_size(dt), count = h->meta.count, block = (count + (size_t)n - 1) / (size_t)n;
  /* Padded to n equal blocks: the padding's elements are reduced and dropped. */
  HV_CHECK(hv__fusion_reserve(comm, block * (size_t)n * es));
  char *buf = comm->fusion_buf;
  const void *in = h->sendbuf ? h->sendbuf : h->recvbuf; /* NULL sendbuf: in place on the root */
  memcpy(buf, in, count * es);
  memset(buf + count * es, 0, (block * (size_t)n - count) * es);
  HV_CHECK(hv__reducescatter(&comm->algo, buf, block, dt, (hv_op_t)h->meta.op));
  /* Block q holds elements [q * block, min(count, (q + 1) * block)): mine goes to the
   * root, which receives each rank's at its place in recvbuf. */
  size_t *send_off = malloc(2 * ((size_t)n + 1) * sizeof(size_t)), *recv_off = send_off + n + 1;
  if (!send_off) return hv__set_error(comm, HV_ERR_NO_MEMORY, "tensor '%s': block offsets", h->name);
  size_t mine_start = (size_t)r * block;
  size_t mine = mine_start < count ? (count - mine_start < block ? count - mine_start : block) : 0;
  for (int q = 0; q <= n; q++) {
    size_t start = (size_t)q * block;
    recv_off[q] = r == root ? (start < count ? start : count) * es : 0;
    send_off[q] = (q <= root ? mine_start : mine_start + mine) * es;
  }
  hv_result_t rc = hv__alltoallv(&comm->algo, buf, send_off, r == root ? h->recvbuf : NULL, recv_off);
  free(send_off);
  return rc;
}

/* Reduce to the root: MPI's own for small sizes (algo/reduce_root.c), Rabenseifner's
 * above (reduce_rs_gather); AVERAGE divided on the root. */
static hv_result_t run_reduce(hv_comm_t *comm, struct hv_handle *h) {
  hv_dtype_t dt = (hv_dtype_t)h->meta.dtype;
  if (h->meta.count == 0) return HV_SUCCESS;
  if (comm->size > 1 && h->meta.count * hv_dtype_size(dt) >= REDUCE_RS_MIN_BYTES)
    HV_CHECK(reduce_rs_gather(comm, h));
  else
    HV_CHECK(hv__reduce_root(&comm->algo, h->sendbuf, h->recvbuf, h->meta.count, dt, (hv_op_t)h->meta.op,
                             h->meta.root));
  if (h->meta.op == HV_AVERAGE && comm->rank == h->meta.root) hv__divide(h->recvbuf, h->meta.count, dt, comm->size);
  return HV_SUCCESS;
}

/* What runs a collective other than allreduce, for the flight recorder: as the
 * algorithms choose (algo/broadcast.c, allgather.c). */
static const char *algo_of(hv_comm_t *comm, const struct hv_handle *h) {
  size_t bytes = h->meta.count * hv_dtype_size((hv_dtype_t)h->meta.dtype);
  switch ((hv__coll_t)h->meta.coll) {
    case HV__COLL_BROADCAST: return hv__hier_other_wanted(&comm->algo, bytes) ? "hier" : "mpi";
    case HV__COLL_ALLGATHER:
    case HV__COLL_ALLGATHERV: return hv__hier_other_wanted(&comm->algo, bytes * (size_t)comm->size) ? "hier" : "ring";
    case HV__COLL_REDUCESCATTER: return "ring";
    case HV__COLL_ALLTOALL:
    case HV__COLL_ALLTOALLV:
    case HV__COLL_GATHER:
    case HV__COLL_GATHERV:
    case HV__COLL_SCATTER:
    case HV__COLL_SCATTERV:
    case HV__COLL_SEND:
    case HV__COLL_RECV: return "pairwise";
    case HV__COLL_REDUCE: return bytes >= REDUCE_RS_MIN_BYTES && comm->size > 1 ? "rs+gather" : "mpi";
    default: return "none";
  }
}

hv_result_t hv__execute_list(hv_comm_t *comm) {
  size_t i = 0;
  while (i < comm->exec_count) {
    struct hv_handle *h = comm->exec[i].handle;
    hv_result_t rc = HV_SUCCESS;
    size_t end = i + 1;
    if (h->meta.coll == HV__COLL_ALLREDUCE) {
      while (end < comm->exec_count && hv__fusion_fusable(h, comm->exec[end].handle)) end++;
      HV_CHECK(hv__fusion_run_allreduce(comm, i, end));
      i = end;
      continue;
    }
    if (comm->flight) hv__fr_started(comm, &h, 1, algo_of(comm, h));
    double t0 = hv__now_us();
    char *detail = NULL;
    hv_result_t detail_code = HV_ERR_INVALID_ARGUMENT; /* the handle's result when detail is set */
    switch ((hv__coll_t)h->meta.coll) {
      case HV__COLL_BROADCAST: rc = run_broadcast(comm, h); break;
      case HV__COLL_ALLGATHER:
      case HV__COLL_ALLGATHERV: rc = run_allgather(comm, h, &detail); break;
      case HV__COLL_REDUCESCATTER: rc = run_reducescatter(comm, h); break;
      case HV__COLL_ALLTOALL: rc = run_alltoall(comm, h); break;
      case HV__COLL_REDUCE: rc = run_reduce(comm, h); break;
      case HV__COLL_ALLTOALLV:
      case HV__COLL_GATHER:
      case HV__COLL_GATHERV:
      case HV__COLL_SCATTER:
      case HV__COLL_SCATTERV:
      case HV__COLL_SEND:
      case HV__COLL_RECV: rc = hv__run_vector(comm, h, &detail_code, &detail); break;
      case HV__COLL_BARRIER: break;
      default: rc = hv__set_error(comm, HV_ERR_INTERNAL, "unknown collective %d", h->meta.coll);
    }
    if (comm->timeline)
      hv__timeline_span(comm->timeline, h->name, hv__coll_name((hv__coll_t)h->meta.coll), t0, hv__now_us());
    if (rc != HV_SUCCESS) {
      free(detail);
      return hv__exec_stop_at(comm, i, rc);
    } else {
      /* Cleared first: once complete, the handle is its caller's to free (hv__exec_t). */
      comm->exec[i].handle = NULL;
      hv__handle_complete(h, detail ? detail_code : HV_SUCCESS, detail);
    }
    i++;
  }
  comm->exec_count = 0;
  return HV_SUCCESS;
}
