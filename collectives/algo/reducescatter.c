/* reducescatter.c: reduce-scatter of equal blocks, in place: the ring's
 * reduce-scatter phase (ring.c) over segments of one block each. */
#include <stdint.h>

#include "algo.h"

hv_result_t hv__reducescatter(hv__algo_ctx_t *ctx, void *buf, size_t block, hv_dtype_t dtype, hv_op_t op) {
  if (block == 0) return HV_SUCCESS;
  /* The buffer holds size blocks: their offsets, in elements and in bytes, must fit
   * (the engine checks this at submission; callers of the algorithm may not). */
  size_t n = (size_t)ctx->transport.size, es = hv_dtype_size(dtype);
  if (block > SIZE_MAX / n / es)
    return hv__fail(&ctx->host->errors, HV_ERR_INVALID_ARGUMENT,
                    "reduce-scatter: a block of %zu elements x %zu ranks x %zu bytes (%s) does not fit in size_t", block,
                    n, es, hv_dtype_name(dtype));
  size_t *off = ctx->seg_off;
  for (int q = 0; q <= ctx->transport.size; q++) off[q] = (size_t)q * block;
  return hv__ring_reduce_scatter(ctx, buf, off, dtype, op == HV_AVERAGE ? HV_SUM : op);
}
