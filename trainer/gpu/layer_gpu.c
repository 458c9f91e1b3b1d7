/* layer_gpu.c: the GPU column of the layer ops (the GPU device table's layer_ops): each layer
 * kind's forward and backward on device buffers through kernels/cuda/ (cuDNN for
 * convolution, batch norm, pooling, ReLU and adds; cuBLAS for linear layers). Shapes
 * and initialisation are the CPU ops' (a model is built on the CPU, then moved:
 * model_gpu.h). Backward accumulates into input gradients, as on the CPU. A call that
 * fails sets m->failed and m->err; model_forward then returns NULL. Dropout has no GPU
 * version yet. With mixed precision (model_gpu_enable_amp) every context runs in
 * float16 NHWC, convolutions and linear layers read the float16 parameter copy, and a
 * convolution's float16 weight gradients are summed into the float32 master ones.
 * tests/trainer/gpu_train_step.c compares each mode with the CPU. */
#include <stdio.h>

#include "batchnorm_sync.h"
#include "batchnorm_sync_gpu.h"
#include "cublas_linear.h"
#include "cudnn_ops.h"
#include "gpu_internal.h"
#include "half_layout.h"
#include "layer_bn_sync.h"
#include "model_gpu.h"
#include "model_internal.h"

static void failed(layer_t *l, model_t *m, const char *why) {
  if (m->failed) return;
  snprintf(m->err, sizeof m->err, "layer '%s' on the GPU: %s", l->name, why);
  m->failed = 1;
}

static void *cudnn_make(void) { return cudnn_ctx_create(); }
static void cudnn_free_impl(void *p) { cudnn_ctx_free(p); }
static void *cublas_make(void) { return cublas_linear_create(); }
static void cublas_free_impl(void *p) { cublas_linear_free(p); }

/* The layer's library context (cuDNN or cuBLAS), made on first use; *made says so. */
static void *impl_of(layer_t *l, model_t *m, void *(*make)(void), void (*destroy)(void *), const char *what,
                     int *made) {
  *made = 0;
  if (!l->impl) {
    l->impl = make();
    if (!l->impl) {
      failed(l, m, what);
      return NULL;
    }
    l->impl_free = destroy;
    *made = 1;
  }
  return l->impl;
}

static cudnn_ctx_t *dnn(layer_t *l, model_t *m) {
  int made;
  cudnn_ctx_t *c = impl_of(l, m, cudnn_make, cudnn_free_impl, "cuDNN did not start", &made);
  if (made && model_gpu_amp(m)) cudnn_ctx_set_half(c, 1);
  return c;
}

/* The parameters a layer's kernels read: the float16 copy under mixed precision. */
static const real_t *param(const model_t *m, const real_t *p) {
  return model_gpu_amp(m) ? model_gpu_half_of(m, p) : p;
}

#define DNN_OR_RETURN(c) \
  cudnn_ctx_t *c = dnn(l, m); \
  if (!c) return

#define CHECK_CALL(call) \
  do {                   \
    if ((call) != 0) failed(l, m, cudnn_ctx_error(c)); \
  } while (0)

/* Mixed precision has no input gradient: the batch went in as a float16 copy. */
static real_t *dsrc_or_null(layer_t *l, model_t *m, int k) {
  return l->in[k] < 0 && (!m->want_input_grad || model_gpu_amp(m)) ? NULL : model_dsrc(m, l->in[k]);
}

static size_t count(const layer_t *l, const model_t *m) { return (size_t)m->batch * layer_out_size(l); }

static void conv_fwd(layer_t *l, model_t *m, int train) {
  DNN_OR_RETURN(c);
  l->train = train;
  conv2d_shape_t s = layer_conv2d_shape(l, m->batch);
  CHECK_CALL(cudnn_conv2d_forward(c, &s, model_src(m, l->in[0]), param(m, layer_w(m, l)), param(m, layer_b(m, l)),
                                  l->out, NULL));
}

static void conv_bwd(layer_t *l, model_t *m) {
  DNN_OR_RETURN(c);
  conv2d_shape_t s = layer_conv2d_shape(l, m->batch);
  if (!model_gpu_amp(m)) {
    CHECK_CALL(cudnn_conv2d_backward(c, &s, model_src(m, l->in[0]), layer_w(m, l), l->dout, dsrc_or_null(l, m, 0),
                                     layer_dw(m, l), layer_db(m, l), NULL));
    return;
  }
  /* cuDNN writes float16 weight gradients (KRSC): into zeroed scratch, then summed
   * into the float32 master gradients (KCRS), as the layers accumulate. */
  real_t *dw = model_gpu_half_of(m, layer_dw(m, l)), *db = model_gpu_half_of(m, layer_db(m, l));
  model_gpu_zero(dw, l->n_params * sizeof(uint16_t)); /* float16 */
  CHECK_CALL(cudnn_conv2d_backward(c, &s, model_src(m, l->in[0]), param(m, layer_w(m, l)), l->dout,
                                   dsrc_or_null(l, m, 0), dw, db, NULL));
  if (!m->failed && (gpu_float_nchw_add_half_nhwc(s.k, s.c, s.kh, s.kw, dw, layer_dw(m, l), NULL) ||
                     (db && gpu_float_nchw_add_half_nhwc(1, s.k, 1, 1, db, layer_db(m, l), NULL))))
    failed(l, m, "adding the float16 weight gradients to the float32 ones failed");
}

/* SyncBatchNorm (model_set_bn_sync): batchnorm_sync_gpu.h's kernels, the reductions
 * through the model's allreduce on device doubles (layer_bn_sync.h). */
static double *sync_scratch(layer_t *l, model_t *m) {
  if (!l->sync_scratch &&
      model_gpu_alloc((void **)&l->sync_scratch, batchnorm_sync_scratch(l->c) * sizeof(double)))
    failed(l, m, "SyncBatchNorm: out of device memory");
  return l->sync_scratch;
}

/* The layer's message for a failed sync call (formatted here: precisions keep it in m->err). */
static void sync_result(layer_t *l, model_t *m, int rc, const bn_sync_ctx_t *ctx, int ones) {
  if (rc == 0 || m->failed) return;
  if (rc == -1)
    snprintf(m->err, sizeof m->err, "layer '%.47s' on the GPU: SyncBatchNorm: allreduce failed: %.140s", l->name,
             ctx->err);
  else if (rc == -2)
    snprintf(m->err, sizeof m->err,
             "layer '%.47s' on the GPU: SyncBatchNorm: a batch of 1 image on %d rank(s): SyncBatchNorm needs at "
             "least 2 images per rank (a global batch of at least 2 x ranks)",
             l->name, ones);
  else
    snprintf(m->err, sizeof m->err, "layer '%.47s' on the GPU: SyncBatchNorm: a CUDA kernel failed to launch",
             l->name);
  m->failed = 1;
}

static void bn_fwd_sync(layer_t *l, model_t *m) {
  if (model_gpu_amp(m)) {
    failed(l, m, "SyncBatchNorm runs in float32 on the GPU (not with mixed precision yet)");
    return;
  }
  double *scratch = sync_scratch(l, m);
  if (!scratch) return;
  real_t *buf = m->buffers + l->buf_off;
  bn_sync_ctx_t ctx = {l, m, ""};
  int ones = 0;
  const int rc = gpu_batchnorm_forward_train_sync(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                                                  layer_b(m, l), l->eps, l->bn_momentum, buf, buf + l->c, l->save,
                                                  l->save + l->c, l->out, scratch, bn_sync_reduce, &ctx, &ones, NULL);
  sync_result(l, m, rc, &ctx, ones);
}

static void bn_bwd_sync(layer_t *l, model_t *m) {
  if (m->failed) return; /* an earlier layer's reduction failed: no more collectives */
  double *scratch = sync_scratch(l, m);
  if (!scratch) return;
  bn_sync_ctx_t ctx = {l, m, ""};
  const int rc = gpu_batchnorm_backward_sync(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), l->dout,
                                             layer_w(m, l), l->save, l->save + l->c, dsrc_or_null(l, m, 0), 0,
                                             layer_dw(m, l), layer_db(m, l), scratch, bn_sync_reduce, &ctx, NULL);
  sync_result(l, m, rc, &ctx, 0);
}

static void bn_fwd(layer_t *l, model_t *m, int train) {
  real_t *buf = m->buffers + l->buf_off;
  l->train = train;
  if (train && m->bn_sync.allreduce_sum) {
    bn_fwd_sync(l, m);
    return;
  }
  DNN_OR_RETURN(c);
  if (train)
    CHECK_CALL(cudnn_batchnorm_forward_train(c, m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                                             layer_b(m, l), l->eps, l->bn_momentum, buf, buf + l->c, l->save,
                                             l->save + l->c, l->out, NULL));
  else
    CHECK_CALL(cudnn_batchnorm_forward_eval(c, m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                                            layer_b(m, l), l->eps, buf, buf + l->c, l->out, NULL));
}

static void bn_bwd(layer_t *l, model_t *m) {
  if (l->train && m->bn_sync.allreduce_sum) {
    bn_bwd_sync(l, m);
    return;
  }
  DNN_OR_RETURN(c);
  if (!l->train) {
    failed(l, m, "batch norm backward after an evaluation-mode forward is not on the GPU yet");
    return;
  }
  CHECK_CALL(cudnn_batchnorm_backward(c, m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), l->dout, layer_w(m, l),
                                      l->save, l->save + l->c, l->eps, dsrc_or_null(l, m, 0), layer_dw(m, l),
                                      layer_db(m, l), NULL));
}

static void relu_fwd(layer_t *l, model_t *m, int train) {
  DNN_OR_RETURN(c);
  CHECK_CALL(cudnn_relu_forward(c, count(l, m), model_src(m, l->in[0]), l->out, NULL));
}

static void relu_bwd(layer_t *l, model_t *m) {
  DNN_OR_RETURN(c);
  real_t *dx = dsrc_or_null(l, m, 0);
  if (dx) CHECK_CALL(cudnn_relu_backward(c, count(l, m), model_src(m, l->in[0]), l->out, l->dout, dx, NULL));
}

/* Max and average pooling with the layer's window; global pooling with the whole
 * (square) map as the window. */
static void pool_run(layer_t *l, model_t *m, int max, int global, int backward) {
  DNN_OR_RETURN(c);
  if (global && l->in_h != l->in_w) {
    failed(l, m, "global pooling of a map that is not square is not on the GPU yet");
    return;
  }
  const int k = global ? l->in_h : l->ksize, stride = global ? l->in_h : l->stride;
  real_t *dx = backward ? dsrc_or_null(l, m, 0) : NULL;
  if (!backward)
    CHECK_CALL(cudnn_pool_forward(c, max, m->batch, l->in_c, l->in_h, l->in_w, k, stride, model_src(m, l->in[0]),
                                  l->out, NULL));
  else if (dx)
    CHECK_CALL(cudnn_pool_backward(c, max, m->batch, l->in_c, l->in_h, l->in_w, k, stride, model_src(m, l->in[0]),
                                   l->out, l->dout, dx, NULL));
}

static void maxpool_fwd(layer_t *l, model_t *m, int train) { pool_run(l, m, 1, 0, 0); }
static void maxpool_bwd(layer_t *l, model_t *m) { pool_run(l, m, 1, 0, 1); }
static void avgpool_fwd(layer_t *l, model_t *m, int train) { pool_run(l, m, 0, 0, 0); }
static void avgpool_bwd(layer_t *l, model_t *m) { pool_run(l, m, 0, 0, 1); }
static void gap_fwd(layer_t *l, model_t *m, int train) { pool_run(l, m, 0, 1, 0); }
static void gap_bwd(layer_t *l, model_t *m) { pool_run(l, m, 0, 1, 1); }

static void add_fwd(layer_t *l, model_t *m, int train) {
  DNN_OR_RETURN(c);
  CHECK_CALL(cudnn_add(c, count(l, m), model_src(m, l->in[0]), model_src(m, l->in[1]), l->out, NULL));
}

static void add_bwd(layer_t *l, model_t *m) {
  DNN_OR_RETURN(c);
  for (int k = 0; k < 2; k++) {
    real_t *dx = dsrc_or_null(l, m, k);
    if (dx) CHECK_CALL(cudnn_accumulate(c, count(l, m), l->dout, dx, NULL));
  }
}

static cublas_linear_t *blas(layer_t *l, model_t *m) {
  int made;
  cublas_linear_t *b = impl_of(l, m, cublas_make, cublas_free_impl, "cuBLAS did not start", &made);
  if (made && model_gpu_amp(m)) cublas_linear_set_half(b, 1);
  return b;
}

static void linear_fwd(layer_t *l, model_t *m, int train) {
  cublas_linear_t *b = blas(l, m);
  l->train = train;
  if (b && cublas_linear_forward(b, m->batch, (int)layer_in_size(l), l->out_ch, model_src(m, l->in[0]),
                                 param(m, layer_w(m, l)), param(m, layer_b(m, l)), l->out, NULL))
    failed(l, m, cublas_linear_error(b));
}

/* Weight and bias gradients go to the float32 master ones in either mode. */
static void linear_bwd(layer_t *l, model_t *m) {
  cublas_linear_t *b = blas(l, m);
  if (b && cublas_linear_backward(b, m->batch, (int)layer_in_size(l), l->out_ch, model_src(m, l->in[0]),
                                  param(m, layer_w(m, l)), l->dout, dsrc_or_null(l, m, 0), layer_dw(m, l),
                                  layer_db(m, l), NULL))
    failed(l, m, cublas_linear_error(b));
}

#define GPU_OPS(cpu, fwd, bwd) {cpu.name, cpu.setup, cpu.init, fwd, bwd}

const layer_ops_t *layer_gpu_ops(layer_kind_t kind) {
  static layer_ops_t table[LAYER_NUM_KINDS];
  static int filled;
  if (!filled) {
    table[LAYER_CONV2D] = (layer_ops_t)GPU_OPS(layer_conv2d_cpu_ops, conv_fwd, conv_bwd);
    table[LAYER_BATCHNORM2D] = (layer_ops_t)GPU_OPS(layer_batchnorm2d_cpu_ops, bn_fwd, bn_bwd);
    table[LAYER_RELU] = (layer_ops_t)GPU_OPS(layer_relu_cpu_ops, relu_fwd, relu_bwd);
    table[LAYER_MAXPOOL] = (layer_ops_t)GPU_OPS(layer_maxpool_cpu_ops, maxpool_fwd, maxpool_bwd);
    table[LAYER_AVGPOOL] = (layer_ops_t)GPU_OPS(layer_avgpool_cpu_ops, avgpool_fwd, avgpool_bwd);
    table[LAYER_GLOBAL_AVGPOOL] = (layer_ops_t)GPU_OPS(layer_global_avgpool_cpu_ops, gap_fwd, gap_bwd);
    table[LAYER_LINEAR] = (layer_ops_t)GPU_OPS(layer_linear_cpu_ops, linear_fwd, linear_bwd);
    table[LAYER_ADD] = (layer_ops_t)GPU_OPS(layer_add_cpu_ops, add_fwd, add_bwd);
    table[LAYER_FLATTEN] = layer_flatten_cpu_ops; /* a view: nothing to run */
    filled = 1;
  }
  return kind < LAYER_NUM_KINDS && table[kind].forward ? &table[kind] : NULL;
}
