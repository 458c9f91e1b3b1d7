/* allgather.c: allgather and allgatherv over blocks of any size, in place: the ring
 * allgather over segments sized by each rank's count (ring.c), or the hierarchical
 * one across nodes (hier_other.c). */
#include "algo.h"

hv_result_t hv__allgather(hv__algo_ctx_t *ctx, void *buf, const size_t *off, size_t es) {
  size_t total = off[ctx->transport.size];
  if (hv__hier_other_wanted(ctx, total * es)) return hv__allgather_hier(ctx, buf, off, es);
  return hv__ring_allgather(ctx, buf, off, es);
}
