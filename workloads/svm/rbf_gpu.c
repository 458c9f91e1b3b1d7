/* rbf_gpu.c: squared-distance blocks through cuBLAS (rbf_gpu.h). Row-major
 * out (na, nb) = -2 a b^T is column-major out' (nb, na) = -2 b' a with b', a' the
 * column-major views (d, nb) and (d, na): one SGEMM (T, N) per block of rows. */
#include "rbf_gpu.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

/* Output rows per SGEMM: at most this many floats of output on the device. */
#define OUT_BUDGET_FLOATS ((size_t)64 << 20)

struct rbf_gpu {
  cublasHandle_t handle;
  float *dev;    /* a, then b (when not the same set), then the output block */
  size_t dev_floats;
};

rbf_gpu_t *rbf_gpu_create(char *err, size_t errlen) {
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess || n == 0) {
    snprintf(err, errlen, "no CUDA device is visible (%s)", rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
    return NULL;
  }
  rbf_gpu_t *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (cublasCreate(&g->handle) != CUBLAS_STATUS_SUCCESS) {
    snprintf(err, errlen, "cublasCreate failed");
    free(g);
    return NULL;
  }
  return g;
}

void rbf_gpu_free(rbf_gpu_t *g) {
  if (!g) return;
  cudaFree(g->dev);
  cublasDestroy(g->handle);
  free(g);
}

static int fail(char *err, size_t errlen, const char *what, const char *why) {
  snprintf(err, errlen, "%s: %s", what, why);
  return -1;
}

static int reserve(rbf_gpu_t *g, size_t floats, char *err, size_t errlen) {
  if (floats <= g->dev_floats) return 0;
  cudaFree(g->dev);
  g->dev = NULL;
  g->dev_floats = 0;
  cudaError_t rc = cudaMalloc((void **)&g->dev, floats * sizeof(float));
  if (rc != cudaSuccess) return fail(err, errlen, "cudaMalloc", cudaGetErrorString(rc));
  g->dev_floats = floats;
  return 0;
}

/* out rows [0, na) against b; self: a and b are the same rows. */
static int sqdist(rbf_gpu_t *g, const float *a, const float *sqa, int na, const float *b, const float *sqb, int nb,
                  int d, float *out, size_t ldo, int self, char *err, size_t errlen) {
  if (na <= 0 || nb <= 0) return 0;
  size_t rows = OUT_BUDGET_FLOATS / (size_t)nb;
  if (rows < 1) rows = 1;
  if (rows > (size_t)na) rows = (size_t)na;
  const size_t in_a = (size_t)na * d, in_b = self ? 0 : (size_t)nb * d;
  if (reserve(g, in_a + in_b + rows * (size_t)nb, err, errlen)) return -1;
  float *da = g->dev, *db = self ? g->dev : g->dev + in_a, *dout = g->dev + in_a + in_b;
  cudaError_t rc = cudaMemcpy(da, a, in_a * sizeof(float), cudaMemcpyHostToDevice);
  if (rc == cudaSuccess && !self) rc = cudaMemcpy(db, b, in_b * sizeof(float), cudaMemcpyHostToDevice);
  if (rc != cudaSuccess) return fail(err, errlen, "copy to the GPU", cudaGetErrorString(rc));
  const float alpha = -2.0f, beta = 0.0f;
  for (size_t i0 = 0; i0 < (size_t)na; i0 += rows) {
    const int r = (int)((size_t)na - i0 < rows ? (size_t)na - i0 : rows);
    cublasStatus_t st = cublasSgemm(g->handle, CUBLAS_OP_T, CUBLAS_OP_N, nb, r, d, &alpha, db, d, da + i0 * d, d,
                                    &beta, dout, nb);
    if (st != CUBLAS_STATUS_SUCCESS) return fail(err, errlen, "cublasSgemm", "failed");
    rc = cudaMemcpy2D(out + i0 * ldo, ldo * sizeof(float), dout, (size_t)nb * sizeof(float),
                      (size_t)nb * sizeof(float), (size_t)r, cudaMemcpyDeviceToHost);
    if (rc != cudaSuccess) return fail(err, errlen, "copy from the GPU", cudaGetErrorString(rc));
  }
  for (int i = 0; i < na; ++i) {
    float *o = out + (size_t)i * ldo;
    for (int j = self ? i + 1 : 0; j < nb; ++j) {
      const float v = o[j] + sqa[i] + sqb[j];
      o[j] = v > 0.0f ? v : 0.0f;
      if (self) out[(size_t)j * ldo + i] = o[j];
    }
    if (self) o[i] = 0.0f;
  }
  return 0;
}

int rbf_gpu_sqdist_block(rbf_gpu_t *g, const float *a, const float *sqa, int na, const float *b, const float *sqb,
                         int nb, int d, float *out, size_t ldo, char *err, size_t errlen) {
  return sqdist(g, a, sqa, na, b, sqb, nb, d, out, ldo, 0, err, errlen);
}

int rbf_gpu_sqdist_self(rbf_gpu_t *g, const float *x, const float *sq, int n, int d, float *out, char *err,
                        size_t errlen) {
  return sqdist(g, x, sq, n, x, sq, n, d, out, (size_t)n, 1, err, errlen);
}
