/* rbf_kernel.c: RBF kernel blocks as squared norms + one SGEMM/SSYRK + exp.
 *
 * Numerics: the expansion |a|^2 + |b|^2 - 2 a.b loses digits when a and b are close
 * and their norms large, so callers centre the data first (distances do not change,
 * norms shrink). Results are clamped at 0 so exp never sees a positive exponent. */
#include "rbf_kernel.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

void rbf_sqnorms(const float *x, int n, int d, float *sq) {
  for (int i = 0; i < n; ++i) {
    const float *r = x + (size_t)i * d;
    double s = 0.0; /* double: d may be large, and the norms feed every distance */
    for (int k = 0; k < d; ++k) s += (double)r[k] * r[k];
    sq[i] = (float)s;
  }
}

#if HV_SVM_CUDA
#include <stdio.h>

#include "rbf_gpu.h"

static rbf_gpu_t *g_gpu;

void rbf_use_gpu(rbf_gpu_t *gpu) { g_gpu = gpu; }

/* A GPU call that failed: said once on stderr, and the CPU computes the block (the
 * results stay right; only the speed changes). */
static int gpu_failed(const char *err) {
  static int said;
  if (!said) fprintf(stderr, "mnist_svm: warning: GPU distance block failed (%s); computing on the CPU\n", err);
  said = 1;
  return 0;
}
#endif

void rbf_sqdist_block(const float *a, const float *sqa, int na, const float *b,
                      const float *sqb, int nb, int d, float *out, size_t ldo) {
  if (na <= 0 || nb <= 0) return;
#if HV_SVM_CUDA
  char err[256];
  if (g_gpu && (rbf_gpu_sqdist_block(g_gpu, a, sqa, na, b, sqb, nb, d, out, ldo, err, sizeof err) == 0 ||
                gpu_failed(err)))
    return;
#endif
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, na, nb, d, -2.0f, a, d, b, d, 0.0f,
              out, (int)ldo);
  for (int i = 0; i < na; ++i) {
    float *o = out + (size_t)i * ldo;
    float si = sqa[i];
    for (int j = 0; j < nb; ++j) {
      float v = o[j] + si + sqb[j];
      o[j] = v > 0.0f ? v : 0.0f;
    }
  }
}

void rbf_sqdist_self(const float *x, const float *sq, int n, int d, float *out) {
  if (n <= 0) return;
#if HV_SVM_CUDA
  char err[256];
  if (g_gpu && (rbf_gpu_sqdist_self(g_gpu, x, sq, n, d, out, err, sizeof err) == 0 || gpu_failed(err))) return;
#endif
  /* SSYRK fills the upper triangle only; mirror it after adding the norms. */
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, d, -2.0f, x, d, 0.0f, out, n);
  for (int i = 0; i < n; ++i) {
    float *o = out + (size_t)i * n;
    o[i] = 0.0f;
    for (int j = i + 1; j < n; ++j) {
      float v = o[j] + sq[i] + sq[j];
      v = v > 0.0f ? v : 0.0f;
      o[j] = v;
      out[(size_t)j * n + i] = v;
    }
  }
}

/* exp(-a) for a = gamma * v >= 0 (Cephes expf: -a = k ln2 + r, |r| <= ln2/2, a degree-6
 * polynomial for e^r, times 2^k built in the exponent bits); within 2 ulp of expf.
 * Written without calls or float branches so GCC vectorises the loop (glibc's scalar
 * expf made the n^2 exps of each (fold, gamma) kernel cost as much as the SMO solves):
 * the clamp of a to 87 and the zeroing of e^-a beyond it (e^-87 ~ 1.6e-38, no weight in
 * any decision value) work on the bit patterns, which order like the values for
 * a >= 0; a NaN also ends up as 0. */
void rbf_exp_inplace(float *v, size_t n, double gamma) {
  const float g = (float)gamma;
  const uint32_t lim = 0x42ae0000u; /* 87.0f */
  for (size_t i = 0; i < n; ++i) {
    float a = g * v[i];
    uint32_t ab;
    memcpy(&ab, &a, sizeof ab);
    uint32_t keep = ab < lim ? 0xffffffffu : 0u;
    ab = ab < lim ? ab : lim;
    memcpy(&a, &ab, sizeof a);
    float x = -a;
    /* round(x / ln2) for x <= 0: truncating t - 0.5 toward zero rounds to nearest. */
    int32_t k = (int32_t)(x * 1.44269504088896341f - 0.5f);
    float kf = (float)k;
    float r = x - kf * 0.693359375f + kf * 2.12194440e-4f; /* ln2 in two parts */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t sb = (k + 127) * (1 << 23);
    float scale;
    memcpy(&scale, &sb, sizeof scale);
    float e = p * scale;
    uint32_t eb;
    memcpy(&eb, &e, sizeof eb);
    eb &= keep;
    memcpy(&v[i], &eb, sizeof eb);
  }
}

void rbf_kernel_block(const float *a, const float *sqa, int na, const float *b,
                      const float *sqb, int nb, int d, double gamma, float *out,
                      size_t ldo) {
  rbf_sqdist_block(a, sqa, na, b, sqb, nb, d, out, ldo);
  for (int i = 0; i < na; ++i) rbf_exp_inplace(out + (size_t)i * ldo, (size_t)nb, gamma);
}
