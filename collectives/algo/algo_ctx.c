/* algo_ctx.c: set-up of an algorithm context (host, transport, grow-only scratch
 * and request arrays, segment table) and its release (with the 2-D grid's). */
#include <stdlib.h>
#include <string.h>

#include "algo.h"

hv_result_t hv__algo_ctx_init(hv__algo_ctx_t *ctx, const hv__algo_host_t *host, const hv__transport_t *transport) {
  memset(ctx, 0, sizeof *ctx);
  ctx->host = host;
  ctx->mpi = MPI_COMM_NULL;
  ctx->transport = *transport;
  ctx->seg_off = calloc((size_t)ctx->transport.size + 1, sizeof *ctx->seg_off);
  if (!ctx->seg_off) return hv__fail(&host->errors, HV_ERR_NO_MEMORY, "segment table");
  return HV_SUCCESS;
}

hv_result_t hv__algo_ctx_init_mpi(hv__algo_ctx_t *ctx, const hv__algo_host_t *host, MPI_Comm mpi) {
  memset(ctx, 0, sizeof *ctx);
  ctx->host = host;
  ctx->mpi = mpi;
  HV_CHECK(hv__transport_mpi_init(&ctx->transport, host, &ctx->mpi));
  ctx->seg_off = calloc((size_t)ctx->transport.size + 1, sizeof *ctx->seg_off);
  if (!ctx->seg_off) return hv__fail(&host->errors, HV_ERR_NO_MEMORY, "segment table");
  return HV_SUCCESS;
}

void hv__algo_ctx_free(hv__algo_ctx_t *ctx) {
  hv__scratch_free(ctx->scratch, ctx->scratch_shared);
  free(ctx->seg_off);
  free(ctx->reqs);
  free(ctx->groups);
  hv__grid_free(ctx->grid);
  memset(ctx, 0, sizeof *ctx);
}

size_t hv__chunk_bytes(const hv__algo_ctx_t *ctx) {
  return ctx->spans_nodes && ctx->host->net_chunk_bytes ? ctx->host->net_chunk_bytes : ctx->host->ring_chunk_bytes;
}

size_t hv__recv_depth(size_t chunk_bytes) {
  const size_t d = chunk_bytes ? ((size_t)4 << 20) / chunk_bytes : 4;
  return d < 4 ? 4 : d > 64 ? 64 : d;
}

hv_result_t hv__algo_scratch(hv__algo_ctx_t *ctx, size_t bytes, void **out) {
  if (bytes > ctx->scratch_bytes) {
    int shared = 0;
    void *p = hv__scratch_alloc(bytes, &shared);
    if (!p)
      return hv__fail(&ctx->host->errors, HV_ERR_NO_MEMORY, "cannot allocate %zu bytes of algorithm scratch", bytes);
    hv__scratch_free(ctx->scratch, ctx->scratch_shared);
    ctx->scratch = p;
    ctx->scratch_shared = shared;
    ctx->scratch_bytes = bytes;
  }
  *out = ctx->scratch;
  return HV_SUCCESS;
}

hv_result_t hv__algo_reqs(hv__algo_ctx_t *ctx, size_t n, hv__request_t **out) {
  if (n > ctx->reqs_cap) {
    size_t cap = n < 64 ? 64 : n + n / 2;
    hv__request_t *p = realloc(ctx->reqs, cap * sizeof *p);
    if (!p) return hv__fail(&ctx->host->errors, HV_ERR_NO_MEMORY, "request array of %zu", cap);
    ctx->reqs = p;
    ctx->reqs_cap = cap;
  }
  *out = ctx->reqs;
  return HV_SUCCESS;
}
