/* half_layout.h: the layout and precision changes of mixed-precision training on the
 * GPU (model_gpu.h, --amp): float32 NCHW (the model's master parameters, the data
 * batch) to float16 NHWC (what the tensor cores read), and float16 NHWC gradients
 * back onto float32 NCHW ones. A convolution's KCRS weights are the NCHW case with
 * (n, c, h, w) = (K, C, R, S); a bias or a linear layer's (out, in) matrix is the case
 * h = w = 1, where both layouts agree. Rounding to float16 is round-to-nearest-even
 * (__float2half_rn), as PyTorch's .half(). Half arrays are passed as void *. Every
 * call enqueues on stream (a cudaStream_t) and returns 0 or the CUDA error code. */
#ifndef HV_KERNELS_HALF_LAYOUT_H
#define HV_KERNELS_HALF_LAYOUT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dst[((i * h + y) * w + x) * c + ch] = half(src[((i * c + ch) * h + y) * w + x]). */
int gpu_half_nhwc_from_float_nchw(int n, int c, int h, int w, const float *src, void *dst, void *stream);
/* dst[((i * c + ch) * h + y) * w + x] += float(src[((i * h + y) * w + x) * c + ch]). */
int gpu_float_nchw_add_half_nhwc(int n, int c, int h, int w, const void *src, float *dst, void *stream);

#ifdef __cplusplus
}
#endif
#endif
