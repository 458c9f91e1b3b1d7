/* engine_execute.c: runs the execution list of a negotiation round, in order, on
 * every rank.
 *
 * Allreduce: consecutive entries with the same wire dtype and reduction are fused
 * greedily, whole tensors at a time (a grouped request brings a list of them), up to
 * HV_FUSION_THRESHOLD into the persistent fusion buffer: packing applies the
 * prescale factor and 16-bit compression, one algorithm call reduces the whole
 * buffer, unpacking decompresses and applies postscale (and 1/size for AVERAGE). A
 * lone tensor without compression or prescaling skips the copies and is reduced in
 * its receive buffer. When shared memory carries the batch (one node) and nothing
 * needs converting while packing, there is no fusion buffer at all: the algorithm
 * reads every tensor's send buffer and writes its receive buffer directly
 * (hv__allreduce_shm_pieces), which saves two copies of the whole batch. Other
 * collectives run one by one. */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "hv_internal.h"
#include "reduce.h"
#include "timeline.h"

/* memmove that accepts NULL buffers when there is nothing to move (count 0 tensors
 * may come with NULL pointers; the C library's functions must not see those). */
static void move_bytes(void *dst, const void *src, size_t n) {
  if (n && dst != src) memmove(dst, src, n);
}

static hv_dtype_t wire_dtype(const struct hv_handle *h) {
  if (h->meta.dtype == HV_FLOAT32 && h->meta.compression == HV_COMPRESSION_FP16) return HV_FLOAT16;
  if (h->meta.dtype == HV_FLOAT32 && h->meta.compression == HV_COMPRESSION_BF16) return HV_BFLOAT16;
  return (hv_dtype_t)h->meta.dtype;
}

static hv_op_t wire_op(const struct hv_handle *h) {
  return h->meta.op == HV_AVERAGE ? HV_SUM : (hv_op_t)h->meta.op;
}

static hv_result_t fusion_reserve(hv_comm_t *comm, size_t bytes) {
  if (bytes <= comm->fusion_bytes) return HV_SUCCESS;
  void *p = malloc(bytes);
  if (!p) return hv__set_error(comm, HV_ERR_NO_MEMORY, "cannot allocate a %zu-byte fusion buffer", bytes);
  free(comm->fusion_buf);
  comm->fusion_buf = p;
  comm->fusion_bytes = bytes;
  return HV_SUCCESS;
}

static hv_result_t pieces_reserve(hv_comm_t *comm, size_t n) {
  if (n <= comm->pieces_cap) return HV_SUCCESS;
  size_t cap = comm->pieces_cap ? comm->pieces_cap : 64;
  while (cap < n) cap *= 2;
  hv__piece_t *p = realloc(comm->pieces, cap * sizeof *p);
  if (p) comm->pieces = p;
  struct hv_handle **o = p ? realloc(comm->piece_owner, cap * sizeof *o) : NULL;
  if (o) comm->piece_owner = o;
  if (!p || !o) return hv__set_error(comm, HV_ERR_NO_MEMORY, "cannot allocate the list of %zu fused tensors", n);
  comm->pieces_cap = cap;
  return HV_SUCCESS;
}

/* Whether the batch's pieces can be reduced where they lie: shared memory is the
 * algorithm for it, and packing would have nothing to convert or prescale. */
static int reduce_where_tensors_lie(hv_comm_t *comm, size_t np, size_t bytes) {
  if (comm->algo.transport.size == 1 || !hv__allreduce_shm_usable(&comm->algo) ||
      hv__allreduce_select(&comm->algo, comm->config.allreduce_algo, bytes)->id != HV__ALGO_SHM)
    return 0;
  for (size_t i = 0; i < np; i++) {
    const struct hv_handle *h = comm->piece_owner[i];
    if ((i == 0 || h != comm->piece_owner[i - 1]) && (wire_dtype(h) != (hv_dtype_t)h->meta.dtype || h->prescale != 1.0))
      return 0;
  }
  return 1;
}

/* Postscale, then the division of AVERAGE, on one unpacked tensor of h. */
static void finish_scaling(const hv_comm_t *comm, const struct hv_handle *h, void *recv, size_t count) {
  hv__scale(recv, count, (hv_dtype_t)h->meta.dtype, h->postscale);
  if (h->meta.op == HV_AVERAGE) hv__divide(recv, count, (hv_dtype_t)h->meta.dtype, comm->size);
}

/* One timeline span per request of the batch (its tensors are adjacent). */
static void batch_spans(hv_comm_t *comm, size_t np, const char *what, double t0, double t1) {
  if (!comm->timeline) return;
  for (size_t i = 0; i < np; i++)
    if (i == 0 || comm->piece_owner[i] != comm->piece_owner[i - 1])
      hv__timeline_span(comm->timeline, comm->piece_owner[i]->name, what, t0, t1);
}

/* A failed collective leaves the ranks out of step (some finished it, some did not,
 * a peer may be gone): nothing more can run on this communicator. The entries from
 * `from` on, not completed, move to the front of the list; the engine logs them and
 * fails them with the cause. */
static hv_result_t stop_at(hv_comm_t *comm, size_t from, hv_result_t rc) {
  memmove(comm->exec, comm->exec + from, (comm->exec_count - from) * sizeof *comm->exec);
  comm->exec_count -= from;
  return rc;
}

/* Reduces one batch: comm->pieces[0, np), `total` elements of the wire dtype, whose
 * requests share wire dtype and op (comm->piece_owner says whose each piece is). */
static hv_result_t run_allreduce_batch(hv_comm_t *comm, size_t np, size_t total) {
  const struct hv_handle *first = comm->piece_owner[0];
  hv_dtype_t wire = wire_dtype(first);
  hv_op_t op = wire_op(first);
  size_t wes = hv_dtype_size(wire);
  const hv__piece_t *p = comm->pieces;
  const char *algo_name = "";
  double t0 = hv__now_us();

  if (reduce_where_tensors_lie(comm, np, total * wes)) {
    HV_CHECK(hv__allreduce_shm_pieces(&comm->algo, p, np, wire, op));
    double t1 = hv__now_us();
    for (size_t i = 0; i < np; i++) finish_scaling(comm, comm->piece_owner[i], p[i].recv, p[i].count);
    batch_spans(comm, np, "shm", t0, t1);
    return HV_SUCCESS;
  }

  if (np == 1 && wire == first->meta.dtype && first->prescale == 1.0) {
    /* Lone tensor: reduce in the receive buffer itself. */
    move_bytes(p[0].recv, p[0].send, total * wes);
    HV_CHECK(hv__allreduce_run(&comm->algo, comm->config.allreduce_algo, p[0].recv, total, wire, op, &algo_name));
    double t1 = hv__now_us();
    finish_scaling(comm, first, p[0].recv, total);
    batch_spans(comm, np, algo_name, t0, t1);
    return HV_SUCCESS;
  }

  HV_CHECK(fusion_reserve(comm, total * wes));
  char *fused = comm->fusion_buf;
  for (size_t i = 0; i < np; i++) {
    const struct hv_handle *h = comm->piece_owner[i];
    hv__convert(fused + p[i].start * wes, wire, p[i].send, (hv_dtype_t)h->meta.dtype, p[i].count, h->prescale);
  }
  double t1 = hv__now_us();
  HV_CHECK(hv__allreduce_run(&comm->algo, comm->config.allreduce_algo, fused, total, wire, op, &algo_name));
  double t2 = hv__now_us();
  for (size_t i = 0; i < np; i++) {
    const struct hv_handle *h = comm->piece_owner[i];
    hv__convert(p[i].recv, (hv_dtype_t)h->meta.dtype, fused + p[i].start * wes, wire, p[i].count, 1.0);
    finish_scaling(comm, h, p[i].recv, p[i].count);
  }
  double t3 = hv__now_us();
  batch_spans(comm, np, "FUSION_PACK", t0, t1);
  batch_spans(comm, np, algo_name, t1, t2);
  batch_spans(comm, np, "FUSION_UNPACK", t2, t3);
  return HV_SUCCESS;
}

/* Runs exec[from, to), allreduce requests sharing wire dtype and op, as batches of
 * whole tensors (a grouped request brings many), each batch at most
 * HV_FUSION_THRESHOLD bytes on the wire or one larger tensor alone. Every rank cuts
 * the same batches: the names, their order and every request's list of counts agree
 * (negotiation). A request completes with the batch that holds its last tensor. */
static hv_result_t run_allreduce_requests(hv_comm_t *comm, size_t from, size_t to) {
  size_t wes = hv_dtype_size(wire_dtype(comm->exec[from].handle));
  size_t e = from, t = 0; /* the next tensor: exec[e]'s tensor t */
  size_t completed = from; /* exec[from, completed) are complete */
  while (e < to) {
    size_t np = 0, total = 0;
    while (e < to) {
      const struct hv_handle *h = comm->exec[e].handle;
      if (t == h->ntensors) {
        e++, t = 0;
        continue;
      }
      const hv_tensor_t *x = &h->tensors[t];
      if (np && (total + x->count) * wes > comm->config.fusion_threshold) break;
      t++;
      if (x->count == 0) continue; /* nothing to move; NULL buffers allowed */
      hv_result_t rc = pieces_reserve(comm, np + 1);
      if (rc != HV_SUCCESS) return stop_at(comm, completed, rc);
      comm->pieces[np] = (hv__piece_t){x->sendbuf, x->recvbuf, total, x->count};
      comm->piece_owner[np++] = (struct hv_handle *)h;
      total += x->count;
    }
    if (np) {
      hv_result_t rc = run_allreduce_batch(comm, np, total);
      if (rc != HV_SUCCESS) return stop_at(comm, completed, rc);
    }
    hv__handles_complete(comm, comm->exec + completed, e - completed);
    completed = e;
  }
  return HV_SUCCESS;
}

static hv_result_t run_broadcast(hv_comm_t *comm, struct hv_handle *h) {
  size_t bytes = h->meta.count * hv_dtype_size((hv_dtype_t)h->meta.dtype);
  if (hv__hier_other_wanted(&comm->algo, bytes))
    return hv__broadcast_hier(&comm->algo, h->recvbuf, bytes, h->meta.root);
  const size_t piece = HV__TRANSPORT_MAX_MESSAGE;
  for (size_t done = 0; done < bytes; done += piece) {
    size_t len = bytes - done < piece ? bytes - done : piece;
    MPI_Request req;
    HV_MPI_CHECK(comm, MPI_Ibcast((char *)h->recvbuf + done, (int)len, MPI_BYTE, h->meta.root, comm->mpi, &req));
    HV_CHECK(hv__mpi_wait_all(comm, 1, &req, "broadcast", 0));
  }
  return HV_SUCCESS;
}

/* Allgather and allgatherv: the ring allgather over segments sized by each rank's
 * count, directly in the receive buffer (hierarchical across nodes, hier_other.c). */
static hv_result_t run_allgather(hv_comm_t *comm, struct hv_handle *h, char **detail) {
  size_t es = hv_dtype_size((hv_dtype_t)h->meta.dtype);
  size_t *off = comm->algo.seg_off;
  off[0] = 0;
  for (int q = 0; q < comm->size; q++)
    off[q + 1] = off[q] + (h->all_counts ? h->all_counts[q] : h->meta.count);
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
  move_bytes(mine, h->sendbuf, (off[comm->rank + 1] - off[comm->rank]) * es);
  if (hv__hier_other_wanted(&comm->algo, total * es)) return hv__allgather_hier(&comm->algo, dest, off, es);
  return hv__ring_allgather(&comm->algo, dest, off, es);
}

static hv_result_t run_reducescatter(hv_comm_t *comm, struct hv_handle *h) {
  hv_dtype_t dt = (hv_dtype_t)h->meta.dtype;
  size_t es = hv_dtype_size(dt), block = h->meta.count;
  if (block == 0) return HV_SUCCESS;
  HV_CHECK(fusion_reserve(comm, block * (size_t)comm->size * es));
  memcpy(comm->fusion_buf, h->sendbuf, block * (size_t)comm->size * es);
  size_t *off = comm->algo.seg_off;
  for (int q = 0; q <= comm->size; q++) off[q] = (size_t)q * block;
  HV_CHECK(hv__ring_reduce_scatter(&comm->algo, comm->fusion_buf, off,
                                   dt, h->meta.op == HV_AVERAGE ? HV_SUM : (hv_op_t)h->meta.op));
  memcpy(h->recvbuf, (char *)comm->fusion_buf + (size_t)comm->rank * block * es, block * es);
  if (h->meta.op == HV_AVERAGE) hv__divide(h->recvbuf, block, dt, comm->size);
  return HV_SUCCESS;
}

/* Alltoall: every pair exchanges its blocks directly, in pieces the transport takes. */
static hv_result_t run_alltoall(hv_comm_t *comm, struct hv_handle *h) {
  hv__transport_t *t = &comm->algo.transport;
  int n = comm->size, r = comm->rank;
  size_t bytes = h->meta.count * hv_dtype_size((hv_dtype_t)h->meta.dtype);
  const char *send = h->sendbuf;
  char *recv = h->recvbuf;
  if (bytes == 0) return HV_SUCCESS;
  memcpy(recv + (size_t)r * bytes, send + (size_t)r * bytes, bytes);
  if (n == 1) return HV_SUCCESS;
  size_t piece = HV__TRANSPORT_MAX_MESSAGE, pieces = (bytes + piece - 1) / piece;
  hv__request_t *reqs;
  HV_CHECK(hv__algo_reqs(&comm->algo, 2 * (size_t)(n - 1) * pieces, &reqs));
  size_t nreq = 0;
  for (int k = 1; k < n; k++) {
    int to = (r + k) % n, from = (r - k + n) % n;
    for (size_t done = 0; done < bytes; done += piece) {
      size_t len = bytes - done < piece ? bytes - done : piece;
      HV_CHECK(t->irecv(t, from, HV__TAG_ALLTOALL, recv + (size_t)from * bytes + done, len, &reqs[nreq++]));
      HV_CHECK(t->isend(t, to, HV__TAG_ALLTOALL, send + (size_t)to * bytes + done, len, &reqs[nreq++]));
    }
  }
  return t->waitall(t, reqs, (int)nreq);
}

static int fusable(const struct hv_handle *a, const struct hv_handle *b) {
  return b->meta.coll == HV__COLL_ALLREDUCE && wire_dtype(a) == wire_dtype(b) && wire_op(a) == wire_op(b);
}

hv_result_t hv__execute_list(hv_comm_t *comm) {
  size_t i = 0;
  while (i < comm->exec_count) {
    struct hv_handle *h = comm->exec[i].handle;
    hv_result_t rc = HV_SUCCESS;
    size_t end = i + 1;
    if (h->meta.coll == HV__COLL_ALLREDUCE) {
      while (end < comm->exec_count && fusable(h, comm->exec[end].handle)) end++;
      HV_CHECK(run_allreduce_requests(comm, i, end));
      i = end;
      continue;
    }
    double t0 = hv__now_us();
    char *detail = NULL;
    switch ((hv__coll_t)h->meta.coll) {
      case HV__COLL_BROADCAST: rc = run_broadcast(comm, h); break;
      case HV__COLL_ALLGATHER:
      case HV__COLL_ALLGATHERV: rc = run_allgather(comm, h, &detail); break;
      case HV__COLL_REDUCESCATTER: rc = run_reducescatter(comm, h); break;
      case HV__COLL_ALLTOALL: rc = run_alltoall(comm, h); break;
      case HV__COLL_BARRIER: break;
      default: rc = hv__set_error(comm, HV_ERR_INTERNAL, "unknown collective %d", h->meta.coll);
    }
    if (comm->timeline)
      hv__timeline_span(comm->timeline, h->name, hv__coll_name((hv__coll_t)h->meta.coll), t0, hv__now_us());
    if (rc != HV_SUCCESS) {
      free(detail);
      return stop_at(comm, i, rc);
    } else if (detail) {
      hv__handle_complete(h, HV_ERR_INVALID_ARGUMENT, detail);
    } else {
      hv__handle_complete(h, HV_SUCCESS, NULL);
    }
    i++;
  }
  comm->exec_count = 0;
  return HV_SUCCESS;
}
