/* allreduce_shm.c: allreduce through the node's shared-memory slots (shm_region.h),
 * for jobs on one node (allreduce_hier_shm.c pipelines the same node phases with a
 * cross-node phase).
 *
 * Piece by piece (a slot's size at a time), with l ranks on the node:
 *   1. every rank copies its piece into its own slot              (1 copy per byte)
 *   2. barrier; rank i reduces segment i of the piece over all slots, in its slot
 *      (reads l-1 remote segments: all ranks reduce in parallel);
 *   3. barrier; every rank copies every reduced segment out      (1 copy per byte)
 *   4. barrier, so the next piece may overwrite the slots.
 * Through MPI, each intra-node message is copied twice (into a shared fragment and
 * out of it) and a ring moves 2(l-1)/l of the buffer that way; here each byte is
 * copied in once and out once. Each segment is reduced by one rank and copied by
 * all, so every rank gets bitwise the same result.
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
    memcpy(mine, src, n * es);
    HV_CHECK(hv__shm_barrier(shm, comm));
    size_t a, len;
    hv__shm_segment(shm, n, me, &a, &len);
    for (int q = 0; q < l; q++)
      if (q != me) hv__reduce(mine + a * es, hv__shm_slot(shm, q) + a * es, len, dtype, op);
    HV_CHECK(hv__shm_barrier(shm, comm));
    for (int q = 0; q < l; q++) {
      size_t qa, qlen;
      hv__shm_segment(shm, n, q, &qa, &qlen);
      memcpy(src + qa * es, hv__shm_slot(shm, q) + qa * es, qlen * es);
    }
    HV_CHECK(hv__shm_barrier(shm, comm));
  }
  return HV_SUCCESS;
}

hv_result_t hv__allreduce_shm(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op) {
  if (count == 0) return HV_SUCCESS;
  if (!ctx->shm || ctx->shm->local_size != ctx->transport.size)
    return hv__allreduce_ring(ctx, buf, count, dtype, op); /* not one node, or no shared memory */
  return shm_run(ctx, buf, count, dtype, op);
}
