/* reducescatter.c: reduce-scatter of equal blocks, in place: the ring's
 * reduce-scatter phase (ring.c) over segments of one block each. */
#include "algo.h"

hv_result_t hv__reducescatter(hv__algo_ctx_t *ctx, void *buf, size_t block, hv_dtype_t dtype, hv_op_t op) {
  if (block == 0) return HV_SUCCESS;
  size_t *off = ctx->seg_off;
  for (int q = 0; q <= ctx->transport.size; q++) off[q] = (size_t)q * block;
  return hv__ring_reduce_scatter(ctx, buf, off, dtype, op == HV_AVERAGE ? HV_SUM : op);
}
