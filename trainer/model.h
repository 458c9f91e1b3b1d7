/* model.h: a model as a list of layers in execution order (a DAG: each layer reads
 * earlier outputs), one flat parameter array with its gradient, one flat buffer array
 * (batch-norm running statistics), forward, loss, and backward with a per-layer hook
 * (DDP starts a bucket's allreduce from it).
 *
 * Build: model_create, then model_add_* (each returns the new layer's id, or -1 with
 * the model's error set), then model_finalize (allocates and initialises). Parameters
 * are laid out in the order the layers were added, so "reverse layer order" is simply
 * the flat array read from its end. */
#ifndef HV_TRAINER_MODEL_H
#define HV_TRAINER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "layer.h"
#include "real.h"
#include "rng.h"

typedef enum init_mode {
  INIT_PYTORCH_DEFAULT = 0,  /* nn.Conv2d/nn.Linear defaults: kaiming_uniform_(a=sqrt(5))
                                on weights, U(+-1/sqrt(fan_in)) on biases */
  INIT_KAIMING_NORMAL_FAN_OUT = 1  /* WRN: convs N(0, 2/fan_out) (kaiming_normal_, relu,
                                      fan_out); linear bias 0; linear weight default */
} init_mode_t;

/* SyncBatchNorm (model_set_bn_sync): how batch-norm layers in training sum their
 * per-channel statistics over the processes of a data-parallel job. */
typedef struct model_bn_sync {
  /* Sums v[0..n) over the processes in place, v in the model's kind of memory (host
   * doubles for a CPU model, device doubles for a GPU one); name identifies the
   * collective ("<layer>/stats"). 0, or -1 with a message in err. */
  int (*allreduce_sum)(void *ctx, const char *name, double *v, size_t n, char *err, size_t errlen);
  void *ctx;
} model_bn_sync_t;

typedef struct model {
  layer_t *layers;
  int n_layers, cap_layers;
  int in_c, in_h, in_w;     /* input shape per image */
  int max_batch, batch;     /* allocation size; images of the current forward */
  const struct device_ops *dev; /* where it runs: device.h's table, chosen once */
  init_mode_t init;
  real_t *params, *grads;   /* (n_params) each, layers' parameters in add order */
  size_t n_params;
  real_t *buffers;          /* (n_buffers) running statistics */
  size_t n_buffers;
  const real_t *input;      /* (batch, in_c, in_h, in_w): the current forward's input */
  int want_input_grad;      /* compute dL/dx of the model input (off in training) */
  real_t *dinput_buf;       /* (max_batch, in_c, in_h, in_w): dL/dinput (checks, saliency) */
  real_t *ws;               /* shared scratch (convolution columns) */
  size_t ws_elems;
  rng_t rng;                /* initialisation and dropout masks */
  int blocked_layout;       /* activations between convolutions in oneDNN's nChw16c */
  int conv_fallback_test;   /* tests only: convolutions take their im2col fallback */
  int failed;               /* a layer could not run (err says why): model_forward returns NULL */
  void *gpu;                /* gpu/model_gpu.c's state of a model on the GPU */
  model_bn_sync_t bn_sync;  /* allreduce_sum NULL: batch statistics are this process's */
  int finalized;
  char err[256];
} model_t;

/* A new empty model for images of (c, h, w); NULL only when out of memory. */
model_t *model_create(int c, int h, int w);
void model_free(model_t *m);

/* Layer builders: input ids are earlier layer ids or -1 (the model input). */
int model_add_conv2d(model_t *m, const char *name, int in, int out_ch, int ksize, int stride,
                     int pad, int bias);
int model_add_batchnorm2d(model_t *m, const char *name, int in);
int model_add_relu(model_t *m, const char *name, int in);
int model_add_maxpool(model_t *m, const char *name, int in, int ksize, int stride);
int model_add_avgpool(model_t *m, const char *name, int in, int ksize, int stride);
int model_add_global_avgpool(model_t *m, const char *name, int in);
int model_add_linear(model_t *m, const char *name, int in, int out, int bias);
int model_add_dropout(model_t *m, const char *name, int in, real_t p);
int model_add_add(model_t *m, const char *name, int a, int b);
int model_add_flatten(model_t *m, const char *name, int in);

/* Allocates activations for max_batch images and initialises parameters from seed
 * (same seed, same parameters on every rank). 0, or -1 with m->err set. */
int model_finalize(model_t *m, int max_batch, init_mode_t init, uint64_t seed);

/* SyncBatchNorm: from now on every batch-norm layer in training normalises with the
 * statistics of the batch over all processes (sync->allreduce_sum sums them), and its
 * backward is that of the global batch (torch.nn.SyncBatchNorm); NULL goes back to
 * per-process statistics. A training forward then fails (model_forward NULL, m->err)
 * on every process when any of them has a batch of one image. ddp_enable_sync_bn
 * installs hv's allreduce. */
void model_set_bn_sync(model_t *m, const model_bn_sync_t *sync);

/* Re-initialises every parameter and buffer from seed. */
void model_init_params(model_t *m, uint64_t seed);

/* Forward pass of n <= max_batch images; returns the last layer's output (N, classes),
 * or NULL with m->err set when n is outside 1..max_batch or a layer could not run
 * (m->failed: then every later call fails too, backward's failures included).
 * train: batch statistics and dropout; else running statistics, no dropout. */
const real_t *model_forward(model_t *m, const real_t *x /* (N, C, H, W) */, int n, int train);

/* Softmax cross-entropy on the last forward's output: returns the summed loss of the
 * n images, sets dL/dlogits = grad_scale * (softmax - onehot) for backward (grad_scale
 * 1/N for PyTorch's mean), and counts correct predictions when correct != NULL. */
double model_loss(model_t *m, const uint8_t *labels, real_t grad_scale, int *correct);

/* Called after layer `layer`'s backward: its parameter gradients are final. */
typedef void (*model_backward_hook_t)(void *ctx, model_t *m, int layer);

/* Backward from the gradient model_loss set; accumulates into m->grads (call
 * model_zero_grad before a step that must not accumulate). hook may be NULL. */
void model_backward(model_t *m, model_backward_hook_t hook, void *ctx);
void model_zero_grad(model_t *m);

/* dL/dx of the last backward (N, C, H, W), when want_input_grad was set. */
const real_t *model_input_grad(const model_t *m);

/* The output of the last layer and its width (classes). */
const real_t *model_output(const model_t *m);
int model_output_size(const model_t *m);

/* Parameter and gradient of one layer (weight at [0, weight_count), then bias). */
real_t *model_layer_params(model_t *m, int layer);
real_t *model_layer_grads(model_t *m, int layer);

/* One line per layer: name, kind, output shape, parameter count. */
void model_summary(const model_t *m, char *buf, size_t len);

#endif /* HV_TRAINER_MODEL_H */
