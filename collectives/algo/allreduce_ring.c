/* allreduce_ring.c: ring allreduce = reduce-scatter then allgather over near-equal
 * segments (ring.c has the phases, the diagram and the pipelining).
 *
 * Cost: each rank sends and receives 2(n-1)/n of the buffer in 2(n-1) latency
 * steps; bandwidth-optimal, so the choice for large messages. Every segment's final
 * value is computed by exactly one rank and then copied, so all ranks end with
 * bitwise identical results. */
#include "algo.h"

hv_result_t hv__allreduce_ring(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype,
                               hv_op_t op) {
  if (ctx->transport.size == 1 || count == 0) return HV_SUCCESS;
  hv__ring_even_segments(ctx, count);
  HV_CHECK(hv__ring_reduce_scatter(ctx, buf, ctx->seg_off, dtype, op));
  return hv__ring_allgather(ctx, buf, ctx->seg_off, hv_dtype_size(dtype));
}
