/* kblock.h: kernel blocks K(queries, support vectors) for ovr_predict, two sources:
 *  - kblock_dist: exponentiates a precomputed squared-distance matrix (no flops but
 *    the exp), used for validation folds when the whole matrix is kept;
 *  - kblock_gemm: squared norms + SGEMM + exp against feature rows, used for the test
 *    set and when the distance matrix does not fit the memory budget. */
#ifndef HV_SVM_KBLOCK_H
#define HV_SVM_KBLOCK_H

#include <stddef.h>

#include "svm_data.h"

typedef struct kblock_dist_ctx {
  const float *dist; /* (N, N) squared distances over the whole training set */
  size_t ld;
  const int *qidx;   /* query r is row qidx[r] of dist */
  const int *tidx;   /* training point c is column tidx[c] of dist */
  double gamma;
} kblock_dist_ctx_t;

typedef struct kblock_gemm_ctx {
  const svm_set_t *q; /* queries (centred, with squared norms) */
  const svm_set_t *t; /* training points */
  double gamma;
  float *sv_x;        /* scratch for the gathered support vectors, grown on demand */
  float *sv_sq;
  int sv_cap;
  const int *sv_cols; /* the columns gathered last time (ovr_predict passes the same) */
  int sv_n;
} kblock_gemm_ctx_t;

/* ovr_kblock_fn implementations; ctx is the matching struct above. */
void kblock_dist(void *ctx, int q0, int nq, const int *cols, int ncols, float *out);
void kblock_gemm(void *ctx, int q0, int nq, const int *cols, int ncols, float *out);

void kblock_gemm_free(kblock_gemm_ctx_t *c);

#endif /* HV_SVM_KBLOCK_H */
