/* int8_quant_gpu.h: the int8 comm hook's device kernels (trainer/gpu/ddp_hook_int8_gpu.c),
 * the arithmetic of the host hook (trainer/ddp_hook_int8.c: ddp_int8_quantize and the
 * rank-ordered sum) with each rounding spelled out, so that a GPU model's averaged
 * gradients and residuals equal a CPU model's bit for bit (tests/trainer/
 * gpu_int8_hook.c). A record is what one rank sends: `chunks` float scales, then n
 * int8 values (the host hook's layout). Every call enqueues on stream (a
 * cudaStream_t) and returns 0 or the CUDA error code of the launch. */
#ifndef HV_KERNELS_INT8_QUANT_GPU_H
#define HV_KERNELS_INT8_QUANT_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* x = error + grad (error := x), then per chunk of `chunk` elements the scale s (the
 * smallest power of two with 127 s >= max|x|; NaN for a chunk with an inf or NaN,
 * whose residual becomes 0; 0 for an all-zero chunk), q = round(x / s) into record,
 * and error := x - s q. */
int gpu_int8_quantize(size_t n, size_t chunk, const float *grad, float *error, uint8_t *record, void *stream);

/* grad[i] = (sum over ranks r = 0..size-1, in order, of s_r q_r[i]) / size, from the
 * size records of `record_bytes` each in wire. */
int gpu_int8_average(size_t n, size_t chunk, int size, const uint8_t *wire, size_t record_bytes, float *grad,
                     void *stream);

#ifdef __cplusplus
}
#endif
#endif
