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
 * had reached. Measured on 2 ranks, 4 KiB: one barrier instead of three. */
#include <string.h>

#include "algo.h"
#include "hv_internal.h"
#include "reduce.h"

static hv_result_t shm_small(hv__algo_ctx_t *ctx, char *buf, size_t count, hv_dtype_t dtype,
                             hv_op_t op) {
  hv__shm_t *shm = ctx->shm;
  const size_t bytes = count * hv_dtype_size(dtype);
  if (shm->whole_pending) HV_CHECK(hv__shm_settle(shm, ctx->comm));
  const size_t half = (shm->small_calls++ & 1u) * hv__shm_half_bytes(shm);
  memcpy(hv__shm_slot(shm, shm->local_rank) + half, buf, bytes);
  HV_CHECK(hv__shm_barrier(shm, ctx->comm));
  memcpy(buf, hv__shm_slot(shm, 0) + half, bytes);
  for (int q = 1; q < shm->local_size; q++) hv__reduce(buf, hv__shm_slot(shm, q) + half, count, dtype, op);
  shm->small_pending = 1;
  return HV_SUCCESS;
}

static hv_result_t shm_run(hv__algo_ctx_t *ctx, char *buf, size_t count, hv_dtype_t dtype, hv_op_t op) {
  hv__shm_t *shm = ctx->shm;
  hv_comm_t *comm = ctx->comm;
  const size_t bytes = count * hv_dtype_size(dtype);
  if (bytes <= ctx->config->small_allreduce_bytes && bytes <= hv__shm_half_bytes(shm))
    return shm_small(ctx, buf, count, dtype, op);
  HV_CHECK(hv__shm_settle(shm, comm));
  size_t es = hv_dtype_size(dtype);
  int l = shm->local_size, me = shm->local_rank;
  size_t piece = shm->slot_bytes / es;
  char *mine = hv__shm_slot(shm, me);
  for (size_t done = 0; done < count; done += piece) {
    size_t n = count - done < piece ? count - done : piece;
    char *src = buf + done * es;
    if (done) HV_CHECK(hv__shm_barrier(shm, comm)); /* step 4 of the previous piece */
    size_t a, len, qa, qlen;
    for (int q = 0; q < l; q++) {
      hv__shm_segment(shm, n, q, &qa, &qlen);
      if (q != me) memcpy(mine + qa * es, src + qa * es, qlen * es);
    }
    HV_CHECK(hv__shm_barrier(shm, comm));
    hv__shm_segment(shm, n, me, &a, &len);
    HV_CHECK(hv__shm_reduce_segment(shm, src + a * es, src + a * es, mine + a * es, a * es, len, dtype, op, NULL));
    HV_CHECK(hv__shm_barrier(shm, comm));
    for (int q = 0; q < l; q++) {
      hv__shm_segment(shm, n, q, &qa, &qlen);
      if (q != me) memcpy(src + qa * es, hv__shm_slot(shm, q) + qa * es, qlen * es);
    }
  }
  shm->whole_pending = 1; /* step 4 of the last piece: hv__shm_settle, in the next call */
  return HV_SUCCESS;
}

hv_result_t hv__allreduce_shm(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op) {
  if (count == 0) return HV_SUCCESS;
  if (!ctx->shm || ctx->shm->local_size != ctx->transport.size)
    return hv__allreduce_ring(ctx, buf, count, dtype, op); /* not one node, or no shared memory */
  return shm_run(ctx, buf, count, dtype, op);
}
