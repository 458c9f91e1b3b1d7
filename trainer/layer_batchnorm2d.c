/* layer_batchnorm2d.c: BatchNorm2d (affine, running statistics, PyTorch defaults
 * eps 1e-5, momentum 0.1). Under DDP the statistics stay local to each rank (as
 * PyTorch's DDP without SyncBatchNorm): each rank normalises with its own batch's
 * statistics and keeps its own running statistics; only gamma/beta gradients are
 * averaged. Evaluation uses the running statistics broadcast from rank 0 at start.
 * With model_set_bn_sync (SyncBatchNorm) training takes the statistics of the batch
 * over all ranks instead (kernels/batchnorm_sync.h), in either layout.
 * With l->fused_relu (set by model_finalize) the ReLU after it runs in
 * its passes (batchnorm.h, relu): it writes the ReLU's output and reads the ReLU's
 * output gradient; SyncBatchNorm has no such kernel and runs the two apart. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batchnorm.h"
#include "batchnorm_sync.h"
#include "layer_bn_sync.h"
#include "layout_blocked.h"
#include "model_internal.h"

__attribute__((format(printf, 3, 4))) static void sync_failed(layer_t *l, model_t *m, const char *fmt, ...) {
  if (m->failed) return;
  int w = snprintf(m->err, sizeof m->err, "SyncBatchNorm layer '%s': ", l->name);
  if (w > 0 && (size_t)w < sizeof m->err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + w, sizeof m->err - (size_t)w, fmt, ap);
    va_end(ap);
  }
  m->failed = 1;
}

/* The layer's sums (made on first use); NULL with m->failed when out of memory. */
static double *sync_scratch(layer_t *l, model_t *m) {
  if (!l->sync_scratch && !(l->sync_scratch = malloc(batchnorm_sync_scratch(l->c) * sizeof(double))))
    sync_failed(l, m, "out of memory");
  return l->sync_scratch;
}

static void bn_forward_sync(layer_t *l, model_t *m) {
  real_t *buf = m->buffers + l->buf_off;
  double *scratch = sync_scratch(l, m);
  if (!scratch) return;
  bn_sync_ctx_t ctx = {l, m, ""};
  int ones = 0;
  const int rc = batchnorm_forward_train_sync(m->batch, l->c, l->h * l->w, l->blocked ? CHANNEL_BLOCK : 1,
                                              model_src(m, l->in[0]), layer_w(m, l), layer_b(m, l), l->eps,
                                              l->bn_momentum, buf, buf + l->c, l->save, l->save + l->c, l->out,
                                              scratch, bn_sync_reduce, &ctx, &ones);
  if (rc == -1) sync_failed(l, m, "allreduce of the statistics failed: %s", ctx.err);
  if (rc == -2)
    sync_failed(l, m,
                "a batch of 1 image on %d rank(s): SyncBatchNorm needs at least 2 images per rank "
                "(a global batch of at least 2 x ranks)",
                ones);
}

static int bn_setup(layer_t *l, char *err, size_t errlen) {
  l->c = l->in_c;
  l->h = l->in_h;
  l->w = l->in_w;
  l->weight_count = (size_t)l->c;
  l->n_params = 2 * (size_t)l->c;
  l->n_buffers = 2 * (size_t)l->c;
  return 0;
}

static void bn_init(layer_t *l, model_t *m) {
  real_t *g = layer_w(m, l), *b = layer_b(m, l), *buf = m->buffers + l->buf_off;
  for (int i = 0; i < l->c; i++) g[i] = 1, b[i] = 0, buf[i] = 0, buf[l->c + i] = 1;
}

int layer_bn_relu_fused(const layer_t *bn, const model_t *m) { return bn->fused_relu && !m->bn_sync.allreduce_sum; }

static void bn_forward(layer_t *l, model_t *m, int train) {
  real_t *buf = m->buffers + l->buf_off;
  const int relu = layer_bn_relu_fused(l, m);
  real_t *y = relu ? m->layers[l - m->layers + 1].out : l->out;
  l->train = train;
  if (train && m->bn_sync.allreduce_sum) {
    bn_forward_sync(l, m);
  } else if (l->blocked && train) {
    batchnorm_forward_train_blocked(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                                    layer_b(m, l), l->eps, l->bn_momentum, buf, buf + l->c, l->save,
                                    l->save + l->c, y, relu, l->scratch);
  } else if (l->blocked) {
    batchnorm_forward_eval_blocked(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                                   layer_b(m, l), l->eps, buf, buf + l->c, l->save, l->save + l->c, y, relu,
                                   l->scratch);
  } else if (train && relu) {
    batchnorm_forward_train_relu(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l), layer_b(m, l),
                                 l->eps, l->bn_momentum, buf, buf + l->c, l->save, l->save + l->c, y,
                                 l->save + 2 * l->c);
  } else if (train) {
    batchnorm_forward_train(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                            layer_b(m, l), l->eps, l->bn_momentum, buf, buf + l->c, l->save,
                            l->save + l->c, l->out);
  } else if (relu) {
    batchnorm_forward_eval_relu(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l), layer_b(m, l),
                                l->eps, buf, buf + l->c, l->save, l->save + l->c, y, l->save + 2 * l->c);
  } else {
    batchnorm_forward_eval(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                           layer_b(m, l), l->eps, buf, buf + l->c, l->save, l->save + l->c,
                           l->out);
  }
}

static void bn_backward(layer_t *l, model_t *m) {
  real_t *dx = l->in[0] < 0 && !m->want_input_grad ? NULL : model_dsrc(m, l->in[0]);
  if (l->train && m->bn_sync.allreduce_sum) {
    if (m->failed) return; /* an earlier layer's reduction failed: no more collectives */
    double *scratch = sync_scratch(l, m);
    if (!scratch) return;
    bn_sync_ctx_t ctx = {l, m, ""};
    if (batchnorm_backward_sync(m->batch, l->c, l->h * l->w, l->blocked ? CHANNEL_BLOCK : 1, model_src(m, l->in[0]),
                                l->dout, layer_w(m, l), l->save, l->save + l->c, dx, l->dx_overwrite, layer_dw(m, l),
                                layer_db(m, l), scratch, bn_sync_reduce, &ctx))
      sync_failed(l, m, "allreduce of the gradient sums failed: %s", ctx.err);
    return;
  }
  if (l->blocked) {
    const int relu = layer_bn_relu_fused(l, m);
    batchnorm_backward_blocked(m->batch, l->c, l->h * l->w, l->train, model_src(m, l->in[0]),
                               relu ? m->layers[l - m->layers + 1].dout : l->dout, layer_w(m, l), l->save,
                               l->save + l->c, dx, l->dx_overwrite, layer_dw(m, l), layer_db(m, l), relu,
                               l->scratch);
    return;
  }
  if (layer_bn_relu_fused(l, m)) {
    batchnorm_backward_relu(m->batch, l->c, l->h * l->w, l->train, model_src(m, l->in[0]),
                            m->layers[l - m->layers + 1].dout, layer_w(m, l), l->save, l->save + l->c, dx,
                            l->dx_overwrite, layer_dw(m, l), layer_db(m, l), l->save + 2 * l->c);
    return;
  }
  batchnorm_backward(m->batch, l->c, l->h * l->w, l->train, model_src(m, l->in[0]), l->dout,
                     layer_w(m, l), l->save, l->save + l->c, dx, l->dx_overwrite, layer_dw(m, l), layer_db(m, l));
}

const layer_ops_t layer_batchnorm2d_cpu_ops = {"batchnorm2d", bn_setup, bn_init, bn_forward,
                                               bn_backward};
