/* allreduce_hier.c: hierarchical allreduce for jobs spanning nodes.
 *
 *   1. reduce-scatter inside the node (ring over the local ranks): local rank i
 *      holds segment i of the node's sum;
 *   2. allreduce of segment i among the ranks with local rank i on every node
 *      (recursive doubling or ring over the cross communicator, by size);
 *   3. allgather inside the node.
 *
 * Each node link direction carries S (bytes of the buffer) in total, against 1.5 S
 * for a flat ring over 2 nodes x 2 ranks (the ring crosses each node boundary with
 * 2(n-1)/n of the data): only one reduced copy per local slot leaves the node.
 * Needs the same number of ranks on every node (checked at communicator creation).
 * Results are bitwise identical on every rank: each value is computed once and
 * copied, as in the ring. */
#include "algo.h"

hv_result_t hv__allreduce_hier(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype,
                               hv_op_t op) {
  hv__algo_ctx_t *local = ctx->local, *cross = ctx->cross;
  if (!local || !cross || !ctx->uniform_nodes)
    return hv__fail(&ctx->host->errors, HV_ERR_UNSUPPORTED,
                         "hierarchical allreduce needs the same number of ranks on every node");
  if (count == 0) return HV_SUCCESS;
  if (ctx->shm) return hv__allreduce_hier_shm(ctx, buf, count, dtype, op);
  size_t es = hv_dtype_size(dtype);
  int l = local->transport.size, lr = local->transport.rank;
  hv__ring_even_segments(local, count);
  HV_CHECK(hv__ring_reduce_scatter(local, buf, local->seg_off, dtype, op));
  size_t start = local->seg_off[lr], len = local->seg_off[lr + 1] - start;
  if (cross->transport.size > 1 && len > 0) {
    char *mine = (char *)buf + start * es;
    /* Recursive doubling when small, or between two nodes (one exchange of the
     * whole segment: see allreduce_select.c). */
    if (len * es <= ctx->host->small_allreduce_bytes || cross->transport.size == 2)
      HV_CHECK(hv__allreduce_rd(cross, mine, len, dtype, op));
    else
      HV_CHECK(hv__allreduce_ring(cross, mine, len, dtype, op));
  }
  (void)l;
  return hv__ring_allgather(local, buf, local->seg_off, es);
}
