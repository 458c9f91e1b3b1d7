/* allreduce_shm.c: allreduce through the node's shared-memory slots (shm_region.h),
 * for jobs on one node (allreduce_hier_shm.c pipelines the same node phases with a
 * cross-node phase), synchronised by one flag per rank instead of barriers.
 *
 * The buffer goes in steps of at most half a slot; step t uses half t mod 2 of every
 * slot. With l ranks on the node, rank i owning segment i of the step (segments cut
 * at cache lines), a step is:
 *   1. rank i copies the segments the others own into its half-slot ((l-1)/l of the
 *      step) and posts its flag: 2t-1;
 *   2. it waits for every other flag to reach 2t-1, reduces its own segment from its
 *      send buffer and the others' half-slots into its receive buffer and into its
 *      half-slot (where no peer reads in this phase), and posts 2t;
 *   3. it waits for every other flag to reach 2t and copies the others' reduced
 *      segments out of their half-slots ((l-1)/l).
 * Small steps, where waiting costs more than bytes, skip phases 2-3 (one flag instead
 * of two): every rank copies the whole step in, posts 2t-1, waits, and reduces the
 * whole step from all half-slots in local-rank order (the same operations everywhere,
 * so the same bits), straight into its receive buffer.
 * No step ends with a wait: rank i writes half t mod 2 again in step t+2, after
 * waiting in step t+1 for every flag to reach 2(t+1)-1, which each peer posts only
 * once it has finished reading step t. Each segment is reduced by one rank and
 * copied by all, so every rank gets bitwise the same result.
 *
 * Memory traffic per rank for a step of S bytes: S (l-1)/l copied in, S/l reduced
 * against (l-1) S/l read from peers, S (l-1)/l copied out; a flag wait is one cache
 * line crossing between cores (a barrier's counter is one line every rank writes,
 * and needs a third for the slots' reuse). The flags' orders: a post is a release
 * store after the data it announces, a wait an acquire load before reading it.
 *
 * The buffer is a list of pieces (algo.h): the tensors of a fused batch where the
 * caller keeps them. Copies into the slots read the pieces' send buffers, the
 * reduction reads them and writes their receive buffers, and copies out of the slots
 * write those: the engine's packing into a fusion buffer and unpacking out of it
 * (two more passes over the whole batch, half the time of 256 fused 4 KiB tensors)
 * are not needed. A plain buffer is one piece.
 *
 * Batches from 2 MiB, where the node allows cross-memory attach, go to the single-copy
 * allreduce instead (allreduce_shm_cma.c: no copy through the slots), as one step of
 * the same sequence of flags and halves. */
#include <string.h>

#include "algo.h"
#include "reduce.h"

/* Steps whose peers' bytes (l-1) S are at most this are reduced whole by every rank
 * (one flag wait instead of two). Measured on 2 ranks (hvbench --no-engine, p50):
 * 4 KiB 1.50 us against 1.64 with both phases; 8 KiB 2.5 against 2.1, 16 KiB 4.7
 * against 3.8: reading a whole peer's step from another core's cache soon costs more
 * than the second wait. */
#define REDUCE_ALL_PEER_BYTES ((size_t)4 << 10)
/* The ordered whole-step reduction's blocks (dst stays in L1 across the half-slots). */
#define ORDERED_BLOCK_BYTES ((size_t)8 << 10)

size_t hv__piece_at(const hv__piece_t *p, size_t n, size_t at) {
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
  for (size_t i = hv__piece_at(p, n, at); len; i++) {
    size_t off = at - p[i].start, k = p[i].count - off < len ? p[i].count - off : len;
    if (k && to_slot) hv__shm_copy(slot + (at - base) * es, p[i].send + off * es, k * es);
    if (k && !to_slot) hv__shm_copy(p[i].recv + off * es, slot + (at - base) * es, k * es);
    at += k;
    len -= k;
  }
}

/* recv of the step's elements [done, done + n) = half-slot 0 op half-slot 1 op ... ,
 * per piece, in blocks that stay in L1 between the reductions with each half-slot. */
static void reduce_all_ordered(hv__shm_t *shm, size_t half, const hv__piece_t *p, size_t np, size_t done, size_t n,
                               size_t es, hv_dtype_t dtype, hv_op_t op) {
  const size_t block = ORDERED_BLOCK_BYTES / es;
  const int l = shm->local_size;
  for (size_t at = done, i = hv__piece_at(p, np, at), stop = done + n; at < stop; i++) {
    size_t off = at - p[i].start, k = p[i].count - off < stop - at ? p[i].count - off : stop - at;
    for (size_t b = 0; b < k; b += block) {
      const size_t m = k - b < block ? k - b : block, slot_at = half + (at + b - done) * es;
      char *dst = p[i].recv + (off + b) * es;
      if (l == 1) memcpy(dst, hv__shm_slot(shm, 0) + slot_at, m * es);
      else hv__reduce_to(dst, hv__shm_slot(shm, 0) + slot_at, hv__shm_slot(shm, 1) + slot_at, m, dtype, op);
      for (int q = 2; q < l; q++) hv__reduce(dst, hv__shm_slot(shm, q) + slot_at, m, dtype, op);
    }
    at += k;
  }
}

/* One step: elements [done, done + n) of the pieces. */
static hv_result_t shm_step(hv__shm_t *shm, const hv__piece_t *p, size_t np, size_t done, size_t n, size_t es,
                            hv_dtype_t dtype, hv_op_t op) {
  const int l = shm->local_size, me = shm->local_rank;
  const unsigned long t = ++shm->steps;
  const size_t half = (++shm->halves & 1u) * hv__shm_half_bytes(shm);
  char *mine = hv__shm_slot(shm, me) + half;
  if ((size_t)(l - 1) * n * es <= REDUCE_ALL_PEER_BYTES) {
    copy_pieces(mine, done, p, np, done, n, es, 1);
    hv__shm_post(shm, 2 * t - 1);
    HV_CHECK(hv__shm_wait_all(shm, 2 * t - 1, 0, NULL));
    reduce_all_ordered(shm, half, p, np, done, n, es, dtype, op);
    return HV_SUCCESS;
  }
  size_t a, len, qa, qlen;
  for (int q = 0; q < l; q++) {
    hv__shm_line_segment(shm, n, q, es, &qa, &qlen);
    if (q != me) copy_pieces(mine, done, p, np, done + qa, qlen, es, 1);
  }
  hv__shm_post(shm, 2 * t - 1);
  HV_CHECK(hv__shm_wait_all(shm, 2 * t - 1, 0, NULL));
  hv__shm_line_segment(shm, n, me, es, &a, &len);
  /* My segment, tensor by tensor: received = sent op the others' half-slots, published
   * in mine. */
  for (size_t at = done + a, i = hv__piece_at(p, np, at), end = at + len; at < end; i++) {
    size_t off = at - p[i].start, k = p[i].count - off < end - at ? p[i].count - off : end - at;
    if (k)
      HV_CHECK(hv__shm_reduce_segment(shm, p[i].recv + off * es, p[i].send + off * es, mine + (at - done) * es,
                                      half + (at - done) * es, k, dtype, op, NULL));
    at += k;
  }
  hv__shm_post(shm, 2 * t);
  HV_CHECK(hv__shm_wait_all(shm, 2 * t, 0, NULL));
  for (int q = 0; q < l; q++) {
    hv__shm_line_segment(shm, n, q, es, &qa, &qlen);
    if (q != me) copy_pieces(hv__shm_slot(shm, q) + half, done, p, np, done + qa, qlen, es, 0);
  }
  return HV_SUCCESS;
}

static hv_result_t shm_run(hv__algo_ctx_t *ctx, const hv__piece_t *p, size_t np, size_t count,
                           hv_dtype_t dtype, hv_op_t op) {
  hv__shm_t *shm = ctx->shm;
  const size_t es = hv_dtype_size(dtype), step = hv__shm_half_bytes(shm) / es;
  shm->runs++;
  if (hv__allreduce_shm_cma_wanted(ctx, np, count * es)) return hv__allreduce_shm_cma(ctx, p, np, count, dtype, op);
  shm->flags_pending = 1; /* the last steps end without a wait: hv__shm_settle */
  for (size_t done = 0; done < count; done += step)
    HV_CHECK(shm_step(shm, p, np, done, count - done < step ? count - done : step, es, dtype, op));
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
