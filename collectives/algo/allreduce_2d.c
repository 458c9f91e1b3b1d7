/* allreduce_2d.c: a two-level allreduce over a 2-D grid of the ranks (a 2-D ring, or
 * torus), for jobs of many nodes where a flat ring's 2(p-1) steps cost too much
 * latency and a flat recursive doubling too much bandwidth.
 *
 * The p ranks form rows x cols, rank r at row r / cols and column r % cols: cols is
 * the host's grid_cols, else the largest divisor of p at most sqrt(p), so rows of
 * consecutive ranks (usually one node, or a few) and columns across them. Then, as
 * the hierarchical allreduce does for nodes (hv__allreduce_two_level):
 *   1. ring reduce-scatter along each row: column c's rank holds segment c of its
 *      row's reduction;
 *   2. allreduce of segment c down column c (hv__cross_allreduce_select: recursive
 *      doubling when small, the ring otherwise, or the host's cross_algo, e.g. rab);
 *   3. ring allgather along each row.
 * Steps: 2(cols-1) ring steps plus the column's (2(rows-1) for a ring, 2 log2(rows)
 * for rab), against 2(p-1) for a flat ring: 124 instead of 2046 at 32 x 32 with a
 * ring in the columns. Bytes per rank: 2(cols-1)/cols of the buffer along the row
 * and 2(rows-1)/rows of one segment down the column, within 1/cols of the flat
 * ring's. A prime p gives one column of p ranks: a flat allreduce, no worse.
 *
 * Rows and columns are sub-transports of the context's own (transport_sub.c), each
 * with its tag offset, so no communicator is created and MPI and the in-process
 * transport behave alike; their contexts are made on the first call and kept, with
 * their own grow-only scratch.
 *
 * Bitwise identical results: each segment is reduced along its row by one rank,
 * then the column's algorithm leaves the same bits on every rank of the column (see
 * its file), and the allgather copies them. */
#include <stdlib.h>

#include "algo.h"

typedef struct hv__grid {
  int cols;
  int *row_ranks, *col_ranks; /* my row's and my column's ranks, in order */
  hv__transport_sub_t row_sub, col_sub;
  hv__algo_ctx_t row, col;
} hv__grid_t;

void hv__grid_free(hv__grid_t *grid) {
  if (!grid) return;
  hv__algo_ctx_free(&grid->row);
  hv__algo_ctx_free(&grid->col);
  free(grid->row_ranks);
  free(grid->col_ranks);
  free(grid);
}

static hv_result_t grid_make(hv__algo_ctx_t *ctx, int cols, hv__grid_t **out) {
  const int p = ctx->transport.size, r = ctx->transport.rank, rows = p / cols;
  hv__grid_t *g = calloc(1, sizeof *g);
  if (!g) return hv__fail(&ctx->host->errors, HV_ERR_NO_MEMORY, "2-D allreduce grid");
  g->cols = cols;
  g->row_ranks = malloc((size_t)cols * sizeof *g->row_ranks);
  g->col_ranks = malloc((size_t)rows * sizeof *g->col_ranks);
  hv_result_t rc = HV_SUCCESS;
  if (!g->row_ranks || !g->col_ranks) rc = hv__fail(&ctx->host->errors, HV_ERR_NO_MEMORY, "2-D allreduce grid");
  for (int i = 0; rc == HV_SUCCESS && i < cols; i++) g->row_ranks[i] = r / cols * cols + i;
  for (int i = 0; rc == HV_SUCCESS && i < rows; i++) g->col_ranks[i] = i * cols + r % cols;
  hv__transport_t t;
  if (rc == HV_SUCCESS)
    rc = hv__transport_sub_init(&t, &g->row_sub, &ctx->transport, g->row_ranks, cols, HV__TAG_SUB_ROW);
  if (rc == HV_SUCCESS) rc = hv__algo_ctx_init(&g->row, ctx->host, &t);
  if (rc == HV_SUCCESS)
    rc = hv__transport_sub_init(&t, &g->col_sub, &ctx->transport, g->col_ranks, rows, HV__TAG_SUB_COL);
  if (rc == HV_SUCCESS) rc = hv__algo_ctx_init(&g->col, ctx->host, &t);
  if (rc != HV_SUCCESS) {
    hv__grid_free(g);
    return rc;
  }
  *out = g;
  return HV_SUCCESS;
}

/* ctx's grid, made (or remade, if the host's width changed) on demand. */
static hv_result_t grid_get(hv__algo_ctx_t *ctx, hv__grid_t **out) {
  const int p = ctx->transport.size, given = ctx->host->grid_cols;
  if (given < 0 || (given > 0 && p % given))
    return hv__fail(&ctx->host->errors, HV_ERR_INVALID_ARGUMENT,
                    "2-D allreduce: a row width of %d does not divide %d ranks", given, p);
  int cols = given;
  for (int d = 1; !given && (long)d * d <= p; d++)
    if (p % d == 0) cols = d;
  if (!ctx->grid || ctx->grid->cols != cols) {
    hv__grid_free(ctx->grid);
    ctx->grid = NULL;
    HV_CHECK(grid_make(ctx, cols, &ctx->grid));
  }
  *out = ctx->grid;
  return HV_SUCCESS;
}

hv_result_t hv__allreduce_2d(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op) {
  if (ctx->transport.size == 1 || count == 0) return HV_SUCCESS;
  hv__grid_t *g = NULL;
  HV_CHECK(grid_get(ctx, &g));
  return hv__allreduce_two_level(&g->row, &g->col, buf, count, dtype, op);
}
