/* allreduce_shm.c: allreduce through the node's shared-memory slots (shm_region.h),
 * for jobs on one node (allreduce_hier_shm.c pipelines the same node phases with a
 * cross-node phase).
 *
 * Piece by piece (a slot's size at a time), with l ranks on the node, rank i owning
 * segment i of the piece:
 *   1. every rank copies the segments the others own into its own slot
 *                                                   ((l-1)/l of the piece)
 *   2. barrier; rank i reduces its segment in its own buffer, over the other slots,
 *      and publishes the result in its slot      (all ranks reduce in parallel)
 *   3. barrier; every rank copies the others' reduced segments out ((l-1)/l)
 *   4. before the slots are written again (the next piece, or the next call): barrier.
 * Through MPI, each intra-node message is copied twice (into a shared fragment and
 * out of it) and a ring moves 2(l-1)/l of the buffer that way; here each byte not
 * owned is copied in once and out once, and the owned segment never leaves the
 * buffer until it is published. With 2 ranks the memory traffic per rank is 2.5 S
 * read and 2 S written, against 3 S and 2.5 S when every byte went through the slot
 * both ways (measured: 1-4 MiB, in cache, where MPI's single-copy transfers are
 * hardest to beat). Each segment is reduced by one rank and copied by all, so every
 * rank gets bitwise the same result.
 *
 * Small buffers (at most HV_SMALL_ALLREDUCE_BYTES and half a slot), where barriers
 * cost more than bytes: every rank copies in, one barrier, and every rank reduces
 * the whole buffer over all slots in local-rank order (the same operations, so the
 * same bits everywhere). Consecutive small calls alternate between the two halves of
 * the slots, so none needs a closing barrier: a rank writes a half again two calls
 * later, after the barrier of the call in between, which every reader of that half
 * had reached. Measured on 2 ranks, 4 KiB: one barrier instead of three.
 *
 * The buffer is a list of pieces (algo.h): the tensors of a fused batch where the
 * caller keeps them. Copies into the slots read the pieces' send buffers, the
 * reduction reads them and writes their receive buffers, and copies out of the slots
 * write those: the engine's packing into a fusion buffer and unpacking out of it
 * (two more passes over the whole batch, half the time of 256 fused 4 KiB tensors)
 * are not needed. A plain buffer is one piece. */
#include <string.h>

#include "algo.h"
#include "reduce.h"

/* The last piece starting at or before element at (pieces are in order). */
static size_t piece_at(const hv__piece_t *p, size_t n, size_t at) {
  size_t lo = 0, hi = n;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (p[mid].start <= at) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* Elements [at, at + len) between the pieces and slot (element base at slot[0]): from
 * their send buffers into the slot (to_slot), else from the slot to their receive
 * buffers. */
static void copy_pieces(char *slot, size_t base, const hv__piece_t *p, size_t n, size_t at, size_t len, size_t es,
                        int to_slot) {
  for (size_t i = piece_at(p, n, at); len; i++) {
    size_t off = at - p[i].start, k = p[i].count - off < len ? p[i].count - off : len;
    if (k && to_slot) memcpy(slot + (at - base) * es, p[i].send + off * es, k * es);
    if (k && !to_slot) memcpy(p[i].recv + off * es, slot + (at - base) * es, k * es);
    at += k;
    len -= k;
  }
}

static hv_result_t shm_small(hv__algo_ctx_t *ctx, const hv__piece_t *p, size_t n, size_t count,
                             hv_dtype_t dtype, hv_op_t op) {
  hv__shm_t *shm = ctx->shm;
  const size_t es = hv_dtype_size(dtype);
  if (shm->whole_pending) HV_CHECK(hv__shm_settle(shm));
  const size_t half = (shm->small_calls++ & 1u) * hv__shm_half_bytes(shm);
  copy_pieces(hv__shm_slot(shm, shm->local_rank) + half, 0, p, n, 0, count, es, 1);
  HV_CHECK(hv__shm_barrier(shm));
  /* recv = slot 0 op slot 1 op ...: the first two in one pass, no copy of slot 0 first. */
  if (shm->local_size == 1) copy_pieces(hv__shm_slot(shm, 0) + half, 0, p, n, 0, count, es, 0);
  for (size_t i = 0; i < n; i++)
    for (int q = 1; q < shm->local_size; q++)
      if (p[i].count)
        hv__reduce_to(p[i].recv, q == 1 ? hv__shm_slot(shm, 0) + half + p[i].start * es : p[i].recv,
                      hv__shm_slot(shm, q) + half + p[i].start * es, p[i].count, dtype, op);
  shm->small_pending = 1;
  return HV_SUCCESS;
}

static hv_result_t shm_run(hv__algo_ctx_t *ctx, const hv__piece_t *p, size_t np, size_t count,
                           hv_dtype_t dtype, hv_op_t op) {
  hv__shm_t *shm = ctx->shm;
  const size_t es = hv_dtype_size(dtype);
  shm->runs++;
  if (count * es <= ctx->host->small_allreduce_bytes && count * es <= hv__shm_half_bytes(shm))
    return shm_small(ctx, p, np, count, dtype, op);
  HV_CHECK(hv__shm_settle(shm));
  int l = shm->local_size, me = shm->local_rank;
  size_t piece = shm->slot_bytes / es;
  char *mine = hv__shm_slot(shm, me);
  for (size_t done = 0; done < count; done += piece) {
    size_t n = count - done < piece ? count - done : piece;
    if (done) HV_CHECK(hv__shm_barrier(shm)); /* step 4 of the previous piece */
    size_t a, len, qa, qlen;
    for (int q = 0; q < l; q++) {
      hv__shm_segment(shm, n, q, &qa, &qlen);
      if (q != me) copy_pieces(mine, done, p, np, done + qa, qlen, es, 1);
    }
    HV_CHECK(hv__shm_barrier(shm));
    hv__shm_segment(shm, n, me, &a, &len);
    /* My segment, tensor by tensor: received = sent op the others' slots, published in mine. */
    for (size_t at = done + a, i = piece_at(p, np, at), end = at + len; at < end; i++) {
      size_t off = at - p[i].start, k = p[i].count - off < end - at ? p[i].count - off : end - at;
      if (k)
        HV_CHECK(hv__shm_reduce_segment(shm, p[i].recv + off * es, p[i].send + off * es, mine + (at - done) * es,
                                        (at - done) * es, k, dtype, op, NULL));
      at += k;
    }
    HV_CHECK(hv__shm_barrier(shm));
    for (int q = 0; q < l; q++) {
      hv__shm_segment(shm, n, q, &qa, &qlen);
      if (q != me) copy_pieces(hv__shm_slot(shm, q), done, p, np, done + qa, qlen, es, 0);
    }
  }
  shm->whole_pending = 1; /* step 4 of the last piece: hv__shm_settle, in the next call */
  return HV_SUCCESS;
}

int hv__allreduce_shm_usable(const hv__algo_ctx_t *ctx) {
  return ctx->shm && ctx->shm->local_size == ctx->transport.size;
}

hv_result_t hv__allreduce_shm_pieces(hv__algo_ctx_t *ctx, const hv__piece_t *pieces, size_t npieces,
                                     hv_dtype_t dtype, hv_op_t op) {
  if (!npieces) return HV_SUCCESS;
  size_t count = pieces[npieces - 1].start + pieces[npieces - 1].count;
  if (count == 0) return HV_SUCCESS;
  return shm_run(ctx, pieces, npieces, count, dtype, op);
}

hv_result_t hv__allreduce_shm(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op) {
  if (count == 0) return HV_SUCCESS;
  /* Not one node, or no shared memory: the ring, which hv__allreduce_select reports
   * as what ran. */
  if (!hv__allreduce_shm_usable(ctx)) return hv__allreduce_ring(ctx, buf, count, dtype, op);
  hv__piece_t whole = {buf, buf, 0, count};
  return shm_run(ctx, &whole, 1, count, dtype, op);
}
