/* gemm.h: row-major matrix products through CBLAS (OpenBLAS), in the build's real_t:
 * cblas_sgemm for float, cblas_dgemm for the float64 reference build. */
#ifndef HV_KERNELS_GEMM_H
#define HV_KERNELS_GEMM_H

#include "real.h"

/* C (M, N) = alpha * op(A) op(B) + beta * C, row-major; op(A) is (M, K), op(B) (K, N);
 * ta / tb transpose A / B. lda, ldb, ldc are the row strides as stored. */
void gemm(int ta, int tb, int M, int N, int K, real_t alpha, const real_t *A, int lda,
          const real_t *B, int ldb, real_t beta, real_t *C, int ldc);

/* y (N) = alpha * A x + beta * y, A (M, N) row-major transposed when ta: y has M
 * entries (ta = 0) or N entries (ta = 1). */
void gemv(int ta, int M, int N, real_t alpha, const real_t *A, int lda, const real_t *x,
          real_t beta, real_t *y);

#endif /* HV_KERNELS_GEMM_H */
