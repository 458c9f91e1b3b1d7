/* layer_eltwise.c: the layers without parameters that work element by element:
 * ReLU, dropout (inverted: kept values scaled by 1/(1-p) in training, identity in
 * evaluation, as nn.Dropout), residual add, and flatten (a view: it shares its
 * input's buffers, so forward and backward do nothing). */
#include <stdio.h>
#include <string.h>

#include "eltwise.h"
#include "model_internal.h"

static int same_setup(layer_t *l, char *err, size_t errlen) {
  l->c = l->in_c;
  l->h = l->in_h;
  l->w = l->in_w;
  return 0;
}

static size_t count(const layer_t *l, const model_t *m) {
  return (size_t)m->batch * layer_out_size(l);
}

/* A ReLU whose batch norm computes it (layer.h: fused_relu) has nothing to do. */
static int relu_done_by_producer(const layer_t *l, const model_t *m) {
  return l->fused_into_producer && layer_bn_relu_fused(&m->layers[l->in[0]], m);
}

static void relu_fwd(layer_t *l, model_t *m, int train) {
  if (relu_done_by_producer(l, m)) return;
  relu_forward(count(l, m), model_src(m, l->in[0]), l->out);
}

static void relu_bwd(layer_t *l, model_t *m) {
  if (relu_done_by_producer(l, m)) return;
  if (l->in[0] >= 0 || m->want_input_grad)
    (l->dx_overwrite ? relu_backward_write : relu_backward)(count(l, m), l->out, l->dout, model_dsrc(m, l->in[0]));
}

static int dropout_setup(layer_t *l, char *err, size_t errlen) {
  if (!(l->p >= 0 && l->p < 1)) {
    snprintf(err, errlen, "dropout '%s': p = %g must be in [0, 1)", l->name, (double)l->p);
    return -1;
  }
  return same_setup(l, err, errlen);
}

static void dropout_fwd(layer_t *l, model_t *m, int train) {
  const size_t n = count(l, m);
  l->train = train && l->p > 0;
  if (!l->train) {
    memcpy(l->out, model_src(m, l->in[0]), n * sizeof(real_t));
    return;
  }
  const real_t keep = (real_t)1 / (1 - l->p);
  for (size_t i = 0; i < n; i++) l->save[i] = rng_uniform(&m->rng) < l->p ? 0 : keep;
  mask_forward(n, model_src(m, l->in[0]), l->save, l->out);
}

static void dropout_bwd(layer_t *l, model_t *m) {
  if (l->in[0] < 0 && !m->want_input_grad) return;
  if (l->train)
    mask_backward(count(l, m), l->dout, l->save, model_dsrc(m, l->in[0]));
  else
    axpy_add(count(l, m), l->dout, model_dsrc(m, l->in[0]));
}

static int add_setup(layer_t *l, char *err, size_t errlen) {
  /* Both inputs must have the same shape; the model checked the ids. */
  same_setup(l, err, errlen);
  return 0;
}

static void add_fwd(layer_t *l, model_t *m, int train) {
  add_forward(count(l, m), model_src(m, l->in[0]), model_src(m, l->in[1]), l->out);
}

/* The gradient passes to both inputs unchanged: added into each input's buffer, or
 * (model.c: fuse_layers, layer.h: dout_shared, add_grad_write) already there because
 * the input shares this buffer, or written because this add contributes first. */
static void add_bwd(layer_t *l, model_t *m) {
  for (int k = 0; k < 2; k++) {
    if (l->in[k] < 0 && !m->want_input_grad) continue;
    real_t *dx = model_dsrc(m, l->in[k]);
    if (dx == l->dout) continue;
    (l->add_grad_write >> k & 1 ? axpy_write : axpy_add)(count(l, m), l->dout, dx);
  }
}

static int flatten_setup(layer_t *l, char *err, size_t errlen) {
  l->c = (int)layer_in_size(l);
  l->h = l->w = 1;
  return 0;
}

static void nothing_fwd(layer_t *l, model_t *m, int train) {}
static void nothing_bwd(layer_t *l, model_t *m) {}

const layer_ops_t layer_relu_cpu_ops = {"relu", same_setup, NULL, relu_fwd, relu_bwd};
const layer_ops_t layer_dropout_cpu_ops = {"dropout", dropout_setup, NULL, dropout_fwd,
                                           dropout_bwd};
const layer_ops_t layer_add_cpu_ops = {"add", add_setup, NULL, add_fwd, add_bwd};
const layer_ops_t layer_flatten_cpu_ops = {"flatten", flatten_setup, NULL, nothing_fwd,
                                           nothing_bwd};
