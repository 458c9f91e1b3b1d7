/* layer.h: one node of a model graph, with explicit forward and backward chosen
 * through an ops table: the model's device table (device.h) gives each kind's, the
 * CPU kernels (device.c) or the GPU's (gpu/layer_gpu.c), without touching model code.
 *
 * A layer reads the outputs of up to two earlier layers (or the model input, id -1),
 * owns its output and output-gradient buffers sized for the model's largest batch,
 * and its parameters live in the model's flat parameter array (so the optimiser,
 * DDP buckets and checkpoints see one contiguous buffer). Backward *accumulates* into
 * its inputs' gradient buffers and into its parameter gradients, so a tensor read by
 * two layers (residual blocks) and gradient accumulation over steps both just work. */
#ifndef HV_TRAINER_LAYER_H
#define HV_TRAINER_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "real.h"

typedef enum layer_kind {
  LAYER_CONV2D = 0,
  LAYER_BATCHNORM2D,
  LAYER_RELU,
  LAYER_MAXPOOL,
  LAYER_AVGPOOL,
  LAYER_GLOBAL_AVGPOOL,
  LAYER_LINEAR,
  LAYER_DROPOUT,
  LAYER_ADD,
  LAYER_FLATTEN,
  LAYER_NUM_KINDS
} layer_kind_t;

typedef enum device_kind { DEVICE_CPU = 0, DEVICE_GPU = 1, DEVICE_NUM_KINDS } device_kind_t;

struct model;
struct layer;

typedef struct layer_ops {
  const char *name;
  /* Output shape and parameter/buffer counts from the input shape and config;
   * -1 with a message in err when the configuration does not fit. */
  int (*setup)(struct layer *l, char *err, size_t errlen);
  /* Fills parameters and buffers (the model's init mode picks the scheme). */
  void (*init)(struct layer *l, struct model *m);
  void (*forward)(struct layer *l, struct model *m, int train);
  void (*backward)(struct layer *l, struct model *m);
} layer_ops_t;

typedef struct layer {
  layer_kind_t kind;
  char name[48];
  const layer_ops_t *ops;
  int in[2], n_in;          /* producer layer ids; -1 is the model input */
  int in_c, in_h, in_w;     /* shape of input 0, per image */
  int c, h, w;              /* output shape, per image */
  /* configuration */
  int out_ch, ksize, stride, pad, bias;  /* conv, pool (ksize/stride), linear (out_ch, bias) */
  real_t p;                              /* dropout probability */
  real_t eps, bn_momentum;               /* batch norm */
  /* parameters: offsets into model->params / grads, weight first then bias */
  size_t param_off, n_params, weight_count;
  size_t buf_off, n_buffers;             /* running statistics in model->buffers */
  /* activations for model->max_batch images */
  real_t *out, *dout;
  int train;                             /* mode of the last forward (dropout, BN) */
  int aliases_input;                     /* flatten: out/dout are its input's */
  real_t *save;                          /* per-kind: BN mean/invstd, dropout mask */
  int32_t *argmax;                       /* max pool */
  size_t ws_per_image;                   /* conv: scratch per image */
  void *impl;                            /* implementation state (oneDNN primitives) */
  void (*impl_free)(void *impl);
  int impl_failed;                       /* the implementation refused: use the fallback */
  /* out/dout in the channel-blocked layout of oneDNN's convolutions (layout_blocked.h),
   * else NCHW; model_finalize chooses (model.c: assign_layouts). */
  int blocked;
  int consumers;                         /* inputs of later layers that this output is */
  /* conv, relu, batch norm: the only consumer of its input, or (fused passes,
   * model.c: fuse_layers) the last of several, whose backward runs first; so backward
   * writes the input gradient instead of adding to it, and model_backward need not
   * zero it first. */
  int dx_overwrite;
  int grad_written;                      /* dout is written whole by its one consumer */
  /* Batch norm + ReLU in one pass (model.c: fuse_layers; CPU, either layout): on the
   * batch norm, the ReLU right after it (id + 1, its only consumer) whose output it
   * writes and whose output gradient it reads; on that ReLU, that its forward and
   * backward are done by its producer. The batch norm's own out/dout are then unused
   * (NULL on the CPU). The GPU's ops ignore both and run the two layers. */
  int fused_relu, fused_into_producer;
  /* Residual adds on the CPU (model.c: fuse_layers): an input whose only consumer is
   * the add shares the add's output gradient (dout_shared: dout is the add's, not
   * owned), since that gradient passes through unchanged, so the add neither zeroes
   * nor adds into it; an input with other consumers whose gradient the add contributes
   * first (the add is its last consumer) gets it written rather than added to a zeroed
   * buffer (bit k of add_grad_write for input k). */
  int dout_shared, add_grad_write;
  real_t *plain;                         /* conv: NCHW copies for the im2col fallback */
  double *scratch;                       /* blocked batch norm: per-row sums */
  double *sync_scratch;                  /* SyncBatchNorm's sums, made on first use (model memory) */
} layer_t;

/* Whether convolutions on the CPU run through oneDNN (built with it, HV_CONV not
 * im2col): the condition for keeping activations in its blocked layout. */
int layer_conv2d_uses_dnnl(void);

const char *layer_kind_name(layer_kind_t kind);

/* The CPU implementations (one per layer file). */
extern const layer_ops_t layer_conv2d_cpu_ops, layer_batchnorm2d_cpu_ops, layer_relu_cpu_ops,
    layer_maxpool_cpu_ops, layer_avgpool_cpu_ops, layer_global_avgpool_cpu_ops,
    layer_linear_cpu_ops, layer_dropout_cpu_ops, layer_add_cpu_ops, layer_flatten_cpu_ops;

#endif /* HV_TRAINER_LAYER_H */
