/* rbf_gpu.h: the SVM's squared-distance blocks (the dot products of the RBF kernel,
 * rbf_kernel.h) through cuBLAS, for mnist_svm --device cuda. The GPU does the SGEMMs,
 * block by block of output rows so device memory stays bounded; the host adds the
 * squared norms and clamps at 0, as rbf_kernel.c does, and a matrix of a set against
 * itself is made exactly symmetric from its upper triangle, as SSYRK's is. Built when
 * the CUDA toolkit is there (HV_SVM_CUDA). */
#ifndef HV_SVM_RBF_GPU_H
#define HV_SVM_RBF_GPU_H

#include <stddef.h>

typedef struct rbf_gpu rbf_gpu_t;

/* NULL with the reason in err when there is no usable CUDA device. */
rbf_gpu_t *rbf_gpu_create(char *err, size_t errlen);
void rbf_gpu_free(rbf_gpu_t *g);

/* rbf_sqdist_block and rbf_sqdist_self on the GPU (same arguments and results, up to
 * the rounding of the dot products); 0, or -1 with the CUDA or cuBLAS error in err. */
int rbf_gpu_sqdist_block(rbf_gpu_t *g, const float *a, const float *sqa, int na, const float *b, const float *sqb,
                         int nb, int d, float *out, size_t ldo, char *err, size_t errlen);
int rbf_gpu_sqdist_self(rbf_gpu_t *g, const float *x, const float *sq, int n, int d, float *out, char *err,
                        size_t errlen);

#endif
