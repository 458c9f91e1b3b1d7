/* ddp_hooks.h: the built-in communication hooks of ddp.h (PyTorch's
 * ddp_comm_hooks), and the spec strings that name them:
 *   allreduce             the default: float32 (real_t) allreduce of the bucket
 *   fp16, bf16            the bucket allreduced with 16-bit wire compression
 *   powersgd[:rank=R,start=S,min_rate=C,seed=N]
 *                         PowerSGD (Vogels et al. 2019) as torch's powerSGD_hook
 *   int8[:chunk=N]        8-bit quantisation with per-chunk scales and error feedback
 * PowerSGD and int8 run on CPU models and on GPU models (device memory: cuBLAS and
 * cuSOLVER, gpu/ddp_hook_powersgd_gpu.c; kernels/cuda/int8_quant.cu,
 * gpu/ddp_hook_int8_gpu.c; in builds with the GPU trainer); fp16 and bf16 on CPU
 * models (host memory): on a GPU model their start fails with a message.
 * A hook's state belongs to one DDP instance. */
#ifndef HV_TRAINER_DDP_HOOKS_H
#define HV_TRAINER_DDP_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "ddp.h"

typedef struct ddp_powersgd_config {
  int rank;                    /* matrix_approximation_rank [1] */
  long long start_iter;        /* start_powerSGD_iter: plain allreduce for the steps before [1000] */
  double min_compression_rate; /* a matrix is compressed when rows*cols > rate*(rows+cols)*rank [2] */
  int use_error_feedback;      /* [1] */
  int warm_start;              /* reuse Q from the last step [1] */
  uint64_t seed;               /* of the first Q (the same on every rank) [0] */
} ddp_powersgd_config_t;
#define DDP_POWERSGD_CONFIG_INIT {1, 1000, 2.0, 1, 1, 0}

typedef enum { DDP_HOOK_ALLREDUCE = 0, DDP_HOOK_FP16, DDP_HOOK_BF16, DDP_HOOK_POWERSGD, DDP_HOOK_INT8 } ddp_hook_kind_t;

typedef struct ddp_hook_spec {
  ddp_hook_kind_t kind;
  ddp_powersgd_config_t powersgd;
  size_t int8_chunk; /* elements per scale [1024] */
} ddp_hook_spec_t;

/* Parses "allreduce", "fp16", "bf16", "powersgd[:rank=R,start=S,...]", "int8[:chunk=N]".
 * 0, or -1 with one line in err. */
int ddp_hook_spec_parse(const char *text, ddp_hook_spec_t *spec, char *err, size_t errlen);
/* The hook a spec names, ready for ddp_register_comm_hook (which takes over its state).
 * 0, or -1 with a message. */
int ddp_hook_make(const ddp_hook_spec_t *spec, ddp_comm_hook_t *hook, char *err, size_t errlen);

int ddp_hook_half_make(ddp_comm_hook_t *hook, int bf16);
int ddp_hook_powersgd_make(ddp_comm_hook_t *hook, const ddp_powersgd_config_t *cfg, char *err, size_t errlen);
int ddp_hook_int8_make(ddp_comm_hook_t *hook, size_t chunk, char *err, size_t errlen);

/* int8 quantisation of one chunk as the int8 hook does it (exposed for the tests):
 * scale = max|x| / 127, q = round(x / scale), and x becomes the residual
 * x - scale * q, which is exact (Sterbenz). Returns the scale. */
float ddp_int8_quantize(real_t *x, size_t n, int8_t *q);

#endif /* HV_TRAINER_DDP_HOOKS_H */
