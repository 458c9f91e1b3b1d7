/* cublas_linear.c: the fully connected layer through cuBLAS (cublas_linear.h).
 * cuBLAS is column-major: a row-major (r, c) matrix is its (c, r) transpose there, so
 *   y  (N, out)  = x (N, in) W^T   is  Y' = W'^T X'   : gemm(T, N, out, N, in, W, X)
 *   dw (out, in) += dy^T x         is dW' += X' dY'^T : gemm(N, T, in, out, N, X, dY)
 *   dx (N, in)  += dy W            is dX' += W' dY'   : gemm(N, N, in, N, out, W, dY)
 * and the bias is a rank-one update with a vector of ones (forward) or a product
 * with it (backward). In half mode (mixed precision) the same products run through
 * cublasGemmEx on float16 x, w, b, y, dy, dx with float32 arithmetic, and dw, db are
 * accumulated straight into float32 (the master gradients). */
#include "cublas_linear.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cublas_linear {
  cublasHandle_t handle;
  void *ones; /* device vector of ones (float, or float16 in half mode), grow-only */
  int ones_len;
  int half;
  char err[256];
};

const char *cublas_linear_error(const cublas_linear_t *c) { return c ? c->err : "no cuBLAS context"; }

static int failed(cublas_linear_t *c, const char *what, int code) {
  snprintf(c->err, sizeof c->err, "%s failed (status %d)", what, code);
  return -1;
}

#define CUBLAS_TRY(c, call)                                          \
  do {                                                               \
    cublasStatus_t st_ = (call);                                     \
    if (st_ != CUBLAS_STATUS_SUCCESS) return failed((c), #call, (int)st_); \
  } while (0)

cublas_linear_t *cublas_linear_create(void) {
  cublas_linear_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  if (cublasCreate(&c->handle) != CUBLAS_STATUS_SUCCESS) {
    free(c);
    return NULL;
  }
  return c;
}

void cublas_linear_free(cublas_linear_t *c) {
  if (!c) return;
  cudaFree(c->ones);
  cublasDestroy(c->handle);
  free(c);
}

void cublas_linear_set_half(cublas_linear_t *c, int half) {
  if (c->half == half) return;
  c->half = half;
  cudaFree(c->ones); /* the ones change type */
  c->ones = NULL;
  c->ones_len = 0;
}

/* At least n ones on the device, written on stream. */
static int ones(cublas_linear_t *c, int n, cudaStream_t stream) {
  if (n <= c->ones_len) return 0;
  cudaFree(c->ones);
  c->ones = NULL;
  c->ones_len = 0;
  const size_t es = c->half ? 2 : sizeof(float);
  unsigned char *host = malloc((size_t)n * es);
  if (!host) return failed(c, "malloc of the ones vector", 0);
  const float one = 1;
  const unsigned short half_one = 0x3c00; /* 1.0 in IEEE binary16 */
  for (int i = 0; i < n; i++) memcpy(host + (size_t)i * es, c->half ? (const void *)&half_one : (const void *)&one, es);
  cudaError_t rc = cudaMalloc(&c->ones, (size_t)n * es);
  if (rc == cudaSuccess) rc = cudaMemcpyAsync(c->ones, host, (size_t)n * es, cudaMemcpyHostToDevice, stream);
  if (rc == cudaSuccess) rc = cudaStreamSynchronize(stream); /* host is freed next */
  free(host);
  if (rc != cudaSuccess) return failed(c, "the ones vector", (int)rc);
  c->ones_len = n;
  return 0;
}

/* C (m, n) = alpha A B + beta C on float16 A, B and C of type ctype (column-major). */
static int gemm_half(cublas_linear_t *c, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                     const void *a, int lda, const void *b, int ldb, float beta, void *cm, cudaDataType_t ctype,
                     int ldc) {
  const float one = 1;
  CUBLAS_TRY(c, cublasGemmEx(c->handle, ta, tb, m, n, k, &one, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &beta, cm,
                             ctype, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return 0;
}

static int forward_half(cublas_linear_t *c, int n, int in, int out, const void *x, const void *w, const void *b,
                        void *y, cudaStream_t stream) {
  if (gemm_half(c, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, w, in, x, in, 0, y, CUDA_R_16F, out)) return -1;
  if (b && (ones(c, n, stream) || gemm_half(c, CUBLAS_OP_N, CUBLAS_OP_N, out, n, 1, b, out, c->ones, 1, 1, y,
                                            CUDA_R_16F, out)))
    return -1;
  return 0;
}

static int backward_half(cublas_linear_t *c, int n, int in, int out, const void *x, const void *w, const void *dy,
                         void *dx, float *dw, float *db, cudaStream_t stream) {
  if (gemm_half(c, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, x, in, dy, out, 1, dw, CUDA_R_32F, in)) return -1;
  if (dx && gemm_half(c, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, w, in, dy, out, 1, dx, CUDA_R_16F, in)) return -1;
  if (db && (ones(c, n, stream) || gemm_half(c, CUBLAS_OP_N, CUBLAS_OP_N, out, 1, n, dy, out, c->ones, n, 1, db,
                                             CUDA_R_32F, out)))
    return -1;
  return 0;
}

int cublas_linear_forward(cublas_linear_t *c, int n, int in, int out, const float *x, const float *w, const float *b,
                          float *y, void *stream) {
  const float one = 1, zero = 0;
  CUBLAS_TRY(c, cublasSetStream(c->handle, (cudaStream_t)stream));
  if (c->half) return forward_half(c, n, in, out, x, w, b, y, (cudaStream_t)stream);
  CUBLAS_TRY(c, cublasSgemm(c->handle, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, w, in, x, in, &zero, y, out));
  if (b) {
    if (ones(c, n, (cudaStream_t)stream)) return -1;
    CUBLAS_TRY(c, cublasSger(c->handle, out, n, &one, b, 1, (const float *)c->ones, 1, y, out));
  }
  return 0;
}

int cublas_linear_backward(cublas_linear_t *c, int n, int in, int out, const float *x, const float *w,
                           const float *dy, float *dx, float *dw, float *db, void *stream) {
  const float one = 1;
  CUBLAS_TRY(c, cublasSetStream(c->handle, (cudaStream_t)stream));
  if (c->half) return backward_half(c, n, in, out, x, w, dy, dx, dw, db, (cudaStream_t)stream);
  CUBLAS_TRY(c, cublasSgemm(c->handle, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &one, x, in, dy, out, &one, dw, in));
  if (dx) CUBLAS_TRY(c, cublasSgemm(c->handle, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &one, w, in, dy, out, &one, dx, in));
  if (db) {
    if (ones(c, n, (cudaStream_t)stream)) return -1;
    CUBLAS_TRY(c, cublasSgemv(c->handle, CUBLAS_OP_N, out, n, &one, dy, out, (const float *)c->ones, 1, &one, db, 1));
  }
  return 0;
}
