/* cublas_linear.h: the fully connected layer on the GPU through cuBLAS, with
 * linear.h's contract on device pointers: y = x W^T + b; backward accumulates
 * dw += dy^T x, db += sum over rows of dy, dx += dy W. float32, row-major as the CPU
 * trainer keeps them. Returns 0, or -1 with the cuBLAS or CUDA error in the
 * context's err. */
#ifndef HV_KERNELS_CUBLAS_LINEAR_H
#define HV_KERNELS_CUBLAS_LINEAR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cublas_linear cublas_linear_t;

cublas_linear_t *cublas_linear_create(void);
void cublas_linear_free(cublas_linear_t *c);
const char *cublas_linear_error(const cublas_linear_t *c);
/* Mixed precision: x, w, b, y, dy, dx are float16 behind the float pointers (the
 * products in float32 arithmetic); dw and db stay float32 and are accumulated there. */
void cublas_linear_set_half(cublas_linear_t *c, int half);

int cublas_linear_forward(cublas_linear_t *c, int n, int in, int out, const float *x, const float *w, const float *b,
                          float *y, void *stream);
int cublas_linear_backward(cublas_linear_t *c, int n, int in, int out, const float *x, const float *w,
                           const float *dy, float *dx /* or NULL */, float *dw, float *db /* or NULL */,
                           void *stream);

#ifdef __cplusplus
}
#endif
#endif
