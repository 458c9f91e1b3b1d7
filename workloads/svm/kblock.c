/* kblock.c: the two kernel-block sources of kblock.h. The GEMM source gathers the
 * support vectors into one contiguous matrix once per model (ovr_predict passes the
 * same column list for every block of queries, starting at query 0) so each block is
 * a single SGEMM. */
#include "kblock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rbf_kernel.h"

void kblock_dist(void *ctx, int q0, int nq, const int *cols, int ncols, float *out) {
  const kblock_dist_ctx_t *c = ctx;
  for (int r = 0; r < nq; ++r) {
    const float *src = c->dist + (size_t)c->qidx[q0 + r] * c->ld;
    float *dst = out + (size_t)r * ncols;
    for (int s = 0; s < ncols; ++s) dst[s] = src[c->tidx[cols[s]]];
    rbf_exp_inplace(dst, (size_t)ncols, c->gamma);
  }
}

void kblock_gemm(void *ctx, int q0, int nq, const int *cols, int ncols, float *out) {
  kblock_gemm_ctx_t *c = ctx;
  const int d = c->t->d;
  /* q0 == 0 starts a new ovr_predict call: its column list may sit at a reused address. */
  if (q0 == 0 || c->sv_cols != cols || c->sv_n != ncols) {
    if (ncols > c->sv_cap) {
      free(c->sv_x);
      free(c->sv_sq);
      c->sv_x = malloc((size_t)ncols * d * sizeof(float));
      c->sv_sq = malloc((size_t)ncols * sizeof(float));
      c->sv_cap = c->sv_x && c->sv_sq ? ncols : 0;
      if (!c->sv_cap) {
        /* Out of memory: mark every value as unusable rather than crash. */
        for (size_t i = 0; i < (size_t)nq * ncols; ++i) out[i] = NAN;
        return;
      }
    }
    for (int s = 0; s < ncols; ++s) {
      memcpy(c->sv_x + (size_t)s * d, c->t->x + (size_t)cols[s] * d, (size_t)d * sizeof(float));
      c->sv_sq[s] = c->t->sq[cols[s]];
    }
    c->sv_cols = cols;
    c->sv_n = ncols;
  }
  rbf_kernel_block(c->q->x + (size_t)q0 * d, c->q->sq + q0, nq, c->sv_x, c->sv_sq, ncols, d,
                   c->gamma, out, (size_t)ncols);
}

void kblock_gemm_free(kblock_gemm_ctx_t *c) {
  free(c->sv_x);
  free(c->sv_sq);
  c->sv_x = NULL;
  c->sv_sq = NULL;
  c->sv_cap = 0;
  c->sv_cols = NULL;
  c->sv_n = 0;
}
