/* gemm.c: the CBLAS binding of gemm.h. Every matrix product of the CPU kernels comes
 * through here, so the BLAS library (and its threads) is chosen in one place. */
#include "gemm.h"

#include <cblas.h>

void gemm(int ta, int tb, int M, int N, int K, real_t alpha, const real_t *A, int lda,
          const real_t *B, int ldb, real_t beta, real_t *C, int ldc) {
  if (M == 0 || N == 0) return;
#if HV_REAL_F64
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

void gemv(int ta, int M, int N, real_t alpha, const real_t *A, int lda, const real_t *x,
          real_t beta, real_t *y) {
  if (M == 0 || N == 0) return;
#if HV_REAL_F64
  cblas_dgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, M, N, alpha, A, lda, x, 1, beta,
              y, 1);
#else
  cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, M, N, alpha, A, lda, x, 1, beta,
              y, 1);
#endif
}
