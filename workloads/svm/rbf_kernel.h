/* rbf_kernel.h: RBF (Gaussian) kernel values computed with BLAS.
 *
 * K(a, b) = exp(-gamma * |a - b|^2), with |a - b|^2 = |a|^2 + |b|^2 - 2 a.b: the
 * squared norms are computed once, the dot products for a whole block of pairs by one
 * SGEMM (or SSYRK for a set against itself), then one exp pass. The squared-distance
 * matrix does not depend on gamma, so callers keep it and exponentiate it once per
 * gamma (and fold) instead of recomputing dot products for every fit. */
#ifndef HV_SVM_RBF_KERNEL_H
#define HV_SVM_RBF_KERNEL_H

#include <stddef.h>

/* sq[i] = |x_i|^2 for the n rows of x (n, d). */
void rbf_sqnorms(const float *x, int n, int d, float *sq);

/* out (na, nb), row stride ldo: squared distances between rows of a (na, d) and rows
 * of b (nb, d), clamped at 0 (the expansion can round slightly below). */
void rbf_sqdist_block(const float *a, const float *sqa, int na, const float *b,
                      const float *sqb, int nb, int d, float *out, size_t ldo);

/* out (n, n): squared distances among the rows of x (n, d), through SSYRK (half the
 * flops of a GEMM); the diagonal is exactly 0. */
void rbf_sqdist_self(const float *x, const float *sq, int n, int d, float *out);

/* v[i] = exp(-gamma * v[i]) for n values. */
void rbf_exp_inplace(float *v, size_t n, double gamma);

/* out (na, nb), stride ldo: K(a_i, b_j) = exp(-gamma |a_i - b_j|^2). */
void rbf_kernel_block(const float *a, const float *sqa, int na, const float *b,
                      const float *sqb, int nb, int d, double gamma, float *out,
                      size_t ldo);

#if HV_SVM_CUDA
/* From now on the two distance functions above run their SGEMMs on this GPU (NULL:
 * back to BLAS on the CPU). mnist_svm --device cuda sets it. */
struct rbf_gpu;
void rbf_use_gpu(struct rbf_gpu *gpu);
#endif

#endif /* HV_SVM_RBF_KERNEL_H */
