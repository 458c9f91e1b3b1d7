/* allreduce_hier.c: hierarchical allreduce for jobs spanning nodes.
 *
 *   1. reduce-scatter inside the node (ring over the local ranks): local rank i
 *      holds segment i of the node's sum;
 *   2. allreduce of segment i among the ranks with local rank i on every node
 *      (recursive doubling or ring over the cross communicator by size, or what
 *      the host's cross_algo asks for: hv__cross_allreduce_select);
 *   3. allgather inside the node.
 *
 * Each node link direction carries S (bytes of the buffer) in total, against 1.5 S
 * for a flat ring over 2 nodes x 2 ranks (the ring crosses each node boundary with
 * 2(n-1)/n of the data): only one reduced copy per local slot leaves the node.
 * Needs the same number of ranks on every node (checked at communicator creation).
 * Results are bitwise identical on every rank: each value is computed once and
 * copied, as in the ring. The 2-D allreduce (allreduce_2d.c) runs the same two
 * levels over a grid's rows and columns, hence hv__allreduce_two_level. */
#include "algo.h"

hv_result_t hv__allreduce_two_level(hv__algo_ctx_t *inner, hv__algo_ctx_t *outer, void *buf, size_t count,
                                    hv_dtype_t dtype, hv_op_t op) {
  const size_t es = hv_dtype_size(dtype);
  const int ir = inner->transport.rank;
  hv__ring_even_segments(inner, count);
  HV_CHECK(hv__ring_reduce_scatter(inner, buf, inner->seg_off, dtype, op));
  const size_t start = inner->seg_off[ir], len = inner->seg_off[ir + 1] - start;
  if (outer->transport.size > 1 && len > 0) {
    const hv__allreduce_algo_t *algo = hv__cross_allreduce_select(outer, len * es);
    HV_CHECK(algo->run(outer, (char *)buf + start * es, len, dtype, op));
  }
  return hv__ring_allgather(inner, buf, inner->seg_off, es);
}

hv_result_t hv__allreduce_hier(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype,
                               hv_op_t op) {
  hv__algo_ctx_t *local = ctx->local, *cross = ctx->cross;
  if (!local || !cross || !ctx->uniform_nodes)
    return hv__fail(&ctx->host->errors, HV_ERR_UNSUPPORTED,
                         "hierarchical allreduce needs the same number of ranks on every node");
  if (count == 0) return HV_SUCCESS;
  if (ctx->shm) return hv__allreduce_hier_shm(ctx, buf, count, dtype, op);
  return hv__allreduce_two_level(local, cross, buf, count, dtype, op);
}
