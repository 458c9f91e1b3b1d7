/* fusion.c: allreduce requests of one execution list, fused.
 *
 * Consecutive entries with the same wire dtype and reduction are fused greedily,
 * whole tensors at a time (a grouped request brings a list of them), up to
 * HV_FUSION_THRESHOLD into the persistent fusion buffer: packing applies the
 * prescale factor and 16-bit compression, one algorithm call reduces the whole
 * buffer, unpacking decompresses and applies postscale (and 1/size for AVERAGE). A
 * lone tensor without compression or prescaling skips the copies and is reduced in
 * its receive buffer. When shared memory carries the batch (one node) and nothing
 * needs converting while packing, there is no fusion buffer at all: the algorithm
 * reads every tensor's send buffer and writes its receive buffer directly
 * (hv__allreduce_shm_pieces), which saves two copies of the whole batch. */
#include <stdlib.h>
#include <string.h>

#include "flight_recorder.h"
#include "hv_internal.h"
#include "reduce.h"
#include "timeline.h"

static hv_dtype_t wire_dtype(const struct hv_handle *h) {
  const int c = h->meta.compression;
  if (h->meta.dtype == HV_FLOAT32 && (c == HV_COMPRESSION_FP16 || c == HV_COMPRESSION_FP16_1R)) return HV_FLOAT16;
  if (h->meta.dtype == HV_FLOAT32 && (c == HV_COMPRESSION_BF16 || c == HV_COMPRESSION_BF16_1R)) return HV_BFLOAT16;
  return (hv_dtype_t)h->meta.dtype;
}

/* fp16-1r/bf16-1r: reduced by the single-rounding algorithm (allreduce_1r.c). */
static int one_rounding(const struct hv_handle *h) {
  return h->meta.dtype == HV_FLOAT32 &&
         (h->meta.compression == HV_COMPRESSION_FP16_1R || h->meta.compression == HV_COMPRESSION_BF16_1R);
}

static hv_op_t wire_op(const struct hv_handle *h) {
  return h->meta.op == HV_AVERAGE ? HV_SUM : (hv_op_t)h->meta.op;
}

hv_result_t hv__fusion_reserve(hv_comm_t *comm, size_t bytes) {
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
  if (h->meta.op == HV_AVERAGE)
    hv__divide(recv, count, (hv_dtype_t)h->meta.dtype, h->contributors ? h->contributors : comm->size);
}

/* One more batch reduced by algorithm id (hv_comm_allreduce_count). A single rank
 * communicates with nobody: nothing ran. */
static void count_run(hv_comm_t *comm, hv__algo_t id) {
  if (comm->size > 1) atomic_fetch_add_explicit(&comm->allreduce_runs[id], 1, memory_order_relaxed);
}

/* One timeline span per request of the batch (its tensors are adjacent). */
static void batch_spans(hv_comm_t *comm, size_t np, const char *what, double t0, double t1) {
  if (!comm->timeline) return;
  for (size_t i = 0; i < np; i++)
    if (i == 0 || comm->piece_owner[i] != comm->piece_owner[i - 1])
      hv__timeline_span(comm->timeline, comm->piece_owner[i]->name, what, t0, t1);
}

/* Reduces one batch: comm->pieces[0, np), `total` elements of the wire dtype, whose
 * requests share wire dtype and op (comm->piece_owner says whose each piece is). */
static hv_result_t run_allreduce_batch(hv_comm_t *comm, size_t np, size_t total) {
  const struct hv_handle *first = comm->piece_owner[0];
  hv_dtype_t wire = wire_dtype(first);
  hv_op_t op = wire_op(first);
  size_t wes = hv_dtype_size(wire);
  const hv__piece_t *p = comm->pieces;
  const hv__allreduce_algo_t *ran = NULL;
  double t0 = hv__now_us();

  const int shm_pieces = reduce_where_tensors_lie(comm, np, total * wes);
  /* The recorder hears which algorithm before it runs (a hang shows it); selection
   * names the one that will really run (algo.h). */
  if (comm->flight)
    hv__fr_started(comm, comm->piece_owner, np,
                   shm_pieces ? "shm" : hv__allreduce_select(&comm->algo, comm->config.allreduce_algo, total * wes)->name);
  if (shm_pieces) {
    HV_CHECK(hv__allreduce_shm_pieces(&comm->algo, p, np, wire, op));
    double t1 = hv__now_us();
    for (size_t i = 0; i < np; i++) finish_scaling(comm, comm->piece_owner[i], p[i].recv, p[i].count);
    count_run(comm, HV__ALGO_SHM);
    batch_spans(comm, np, "shm", t0, t1);
    return HV_SUCCESS;
  }

  if (np == 1 && wire == first->meta.dtype && first->prescale == 1.0) {
    /* Lone tensor: reduce in the receive buffer itself. */
    hv__move_bytes(p[0].recv, p[0].send, total * wes);
    HV_CHECK(hv__allreduce_run(&comm->algo, comm->config.allreduce_algo, p[0].recv, total, wire, op, &ran));
    double t1 = hv__now_us();
    finish_scaling(comm, first, p[0].recv, total);
    count_run(comm, ran->id);
    batch_spans(comm, np, ran->name, t0, t1);
    return HV_SUCCESS;
  }

  HV_CHECK(hv__fusion_reserve(comm, total * wes));
  char *fused = comm->fusion_buf;
  for (size_t i = 0; i < np; i++) {
    const struct hv_handle *h = comm->piece_owner[i];
    hv__convert(fused + p[i].start * wes, wire, p[i].send, (hv_dtype_t)h->meta.dtype, p[i].count, h->prescale);
  }
  double t1 = hv__now_us();
  static const hv__allreduce_algo_t single_rounding = {HV__ALGO_1R, "1r", hv__allreduce_1r};
  if (one_rounding(first)) {
    ran = &single_rounding;
    HV_CHECK(hv__allreduce_1r(&comm->algo, fused, total, wire, op));
  } else {
    HV_CHECK(hv__allreduce_run(&comm->algo, comm->config.allreduce_algo, fused, total, wire, op, &ran));
  }
  double t2 = hv__now_us();
  count_run(comm, ran->id);
  for (size_t i = 0; i < np; i++) {
    const struct hv_handle *h = comm->piece_owner[i];
    hv__convert(p[i].recv, (hv_dtype_t)h->meta.dtype, fused + p[i].start * wes, wire, p[i].count, 1.0);
    finish_scaling(comm, h, p[i].recv, p[i].count);
  }
  double t3 = hv__now_us();
  batch_spans(comm, np, "FUSION_PACK", t0, t1);
  batch_spans(comm, np, ran->name, t1, t2);
  batch_spans(comm, np, "FUSION_UNPACK", t2, t3);
  return HV_SUCCESS;
}

/* Runs exec[from, to), allreduce requests sharing wire dtype and op, as batches of
 * whole tensors (a grouped request brings many), each batch at most
 * HV_FUSION_THRESHOLD bytes on the wire or one larger tensor alone. Every rank cuts
 * the same batches: the names, their order and every request's list of counts agree
 * (negotiation). A request completes with the batch that holds its last tensor. */
hv_result_t hv__fusion_run_allreduce(hv_comm_t *comm, size_t from, size_t to) {
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
      if (rc != HV_SUCCESS) return hv__exec_stop_at(comm, completed, rc);
      comm->pieces[np] = (hv__piece_t){x->sendbuf, x->recvbuf, total, x->count};
      comm->piece_owner[np++] = (struct hv_handle *)h;
      total += x->count;
    }
    if (np) {
      hv_result_t rc = run_allreduce_batch(comm, np, total);
      if (rc != HV_SUCCESS) return hv__exec_stop_at(comm, completed, rc);
    }
    hv__handles_complete(comm, comm->exec + completed, e - completed);
    completed = e;
  }
  return HV_SUCCESS;
}

int hv__fusion_fusable(const struct hv_handle *a, const struct hv_handle *b) {
  return b->meta.coll == HV__COLL_ALLREDUCE && wire_dtype(a) == wire_dtype(b) && wire_op(a) == wire_op(b) &&
         one_rounding(a) == one_rounding(b);
}

