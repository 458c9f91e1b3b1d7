/* cublas_linear.c: the fully connected layer through cuBLAS (cublas_linear.h).
 * cuBLAS is column-major: a row-major (r, c) matrix is its (c, r) transpose there, so
 *   y  (N, out)  = x (N, in) W^T   is  Y' = W'^T X'   : gemm(T, N, out, N, in, W, X)
 *   dw (out, in) += dy^T x         is dW' += X' dY'^T : gemm(N, T, in, out, N, X, dY)
 *   dx (N, in)  += dy W            is dX' += W' dY'   : gemm(N, N, in, N, out, W, dY)
 * and the bias is a rank-one update with a vector of ones (forward) or a product
 * with it (backward). */
#include "cublas_linear.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

struct cublas_linear {
  cublasHandle_t handle;
  float *ones; /* device vector of ones, grow-only */
  int ones_len;
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

/* At least n ones on the device, written on stream. */
static int ones(cublas_linear_t *c, int n, cudaStream_t stream) {
  if (n <= c->ones_len) return 0;
  cudaFree(c->ones);
  c->ones = NULL;
  c->ones_len = 0;
  float *host = malloc((size_t)n * sizeof *host);
  if (!host) return failed(c, "malloc of the ones vector", 0);
  for (int i = 0; i < n; i++) host[i] = 1;
  cudaError_t rc = cudaMalloc((void **)&c->ones, (size_t)n * sizeof *host);
  if (rc == cudaSuccess) rc = cudaMemcpyAsync(c->ones, host, (size_t)n * sizeof *host, cudaMemcpyHostToDevice, stream);
  if (rc == cudaSuccess) rc = cudaStreamSynchronize(stream); /* host is freed next */
  free(host);
  if (rc != cudaSuccess) return failed(c, "the ones vector", (int)rc);
  c->ones_len = n;
  return 0;
}

int cublas_linear_forward(cublas_linear_t *c, int n, int in, int out, const float *x, const float *w, const float *b,
                          float *y, void *stream) {
  const float one = 1, zero = 0;
  CUBLAS_TRY(c, cublasSetStream(c->handle, (cudaStream_t)stream));
  CUBLAS_TRY(c, cublasSgemm(c->handle, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, w, in, x, in, &zero, y, out));
  if (b) {
    if (ones(c, n, (cudaStream_t)stream)) return -1;
    CUBLAS_TRY(c, cublasSger(c->handle, out, n, &one, b, 1, c->ones, 1, y, out));
  }
  return 0;
}

int cublas_linear_backward(cublas_linear_t *c, int n, int in, int out, const float *x, const float *w,
                           const float *dy, float *dx, float *dw, float *db, void *stream) {
  const float one = 1;
  CUBLAS_TRY(c, cublasSetStream(c->handle, (cudaStream_t)stream));
  CUBLAS_TRY(c, cublasSgemm(c->handle, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &one, x, in, dy, out, &one, dw, in));
  if (dx) CUBLAS_TRY(c, cublasSgemm(c->handle, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &one, w, in, dy, out, &one, dx, in));
  if (db) {
    if (ones(c, n, (cudaStream_t)stream)) return -1;
    CUBLAS_TRY(c, cublasSgemv(c->handle, CUBLAS_OP_N, out, n, &one, dy, out, c->ones, 1, &one, db, 1));
  }
  return 0;
}
