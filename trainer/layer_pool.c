/* layer_pool.c: max pooling, average pooling (square window, no padding) and global
 * average pooling layers. Max pooling reads a blocked input (model.c's layouts) and
 * writes blocked or, before a linear layer, NCHW. */
#include <stdio.h>

#include "model_internal.h"
#include "pool.h"

static pool_shape_t shape_of(const layer_t *l, int n) {
  pool_shape_t s = {.n = n, .c = l->in_c, .h = l->in_h, .w = l->in_w, .k = l->ksize,
                    .stride = l->stride};
  pool_shape_init(&s);
  return s;
}

static int pool_setup(layer_t *l, char *err, size_t errlen) {
  pool_shape_t s = {.n = 1, .c = l->in_c, .h = l->in_h, .w = l->in_w, .k = l->ksize,
                    .stride = l->stride};
  if (pool_shape_init(&s)) {
    snprintf(err, errlen, "pool '%s': window %d stride %d does not fit input %dx%dx%d", l->name,
             l->ksize, l->stride, l->in_c, l->in_h, l->in_w);
    return -1;
  }
  l->c = l->in_c;
  l->h = s.ho;
  l->w = s.wo;
  return 0;
}

static void maxpool_fwd(layer_t *l, model_t *m, int train) {
  pool_shape_t s = shape_of(l, m->batch);
  if (model_src_blocked(m, l->in[0]))
    maxpool_forward_blocked(&s, model_src(m, l->in[0]), l->out, l->blocked, l->argmax);
  else
    maxpool_forward(&s, model_src(m, l->in[0]), l->out, l->argmax);
}

static void maxpool_bwd(layer_t *l, model_t *m) {
  pool_shape_t s = shape_of(l, m->batch);
  if (!(l->in[0] >= 0 || m->want_input_grad)) return;
  if (model_src_blocked(m, l->in[0]))
    maxpool_backward_blocked(&s, l->dout, l->blocked, l->argmax, model_dsrc(m, l->in[0]),
                             l->dx_overwrite);
  else
    maxpool_backward(&s, l->dout, l->argmax, model_dsrc(m, l->in[0]), l->dx_overwrite);
}

static void avgpool_fwd(layer_t *l, model_t *m, int train) {
  pool_shape_t s = shape_of(l, m->batch);
  avgpool_forward(&s, model_src(m, l->in[0]), l->out);
}

static void avgpool_bwd(layer_t *l, model_t *m) {
  pool_shape_t s = shape_of(l, m->batch);
  if (l->in[0] >= 0 || m->want_input_grad) avgpool_backward(&s, l->dout, model_dsrc(m, l->in[0]));
}

static int gap_setup(layer_t *l, char *err, size_t errlen) {
  l->c = l->in_c;
  l->h = l->w = 1;
  return 0;
}

static void gap_fwd(layer_t *l, model_t *m, int train) {
  (model_src_blocked(m, l->in[0]) ? global_avgpool_forward_blocked
                                  : global_avgpool_forward)(m->batch, l->c, l->in_h * l->in_w,
                                                            model_src(m, l->in[0]), l->out);
}

static void gap_bwd(layer_t *l, model_t *m) {
  if (l->in[0] >= 0 || m->want_input_grad)
    (model_src_blocked(m, l->in[0]) ? global_avgpool_backward_blocked
                                    : global_avgpool_backward)(m->batch, l->c, l->in_h * l->in_w, l->dout,
                                                               model_dsrc(m, l->in[0]));
}

const layer_ops_t layer_maxpool_cpu_ops = {"maxpool", pool_setup, NULL, maxpool_fwd, maxpool_bwd};
const layer_ops_t layer_avgpool_cpu_ops = {"avgpool", pool_setup, NULL, avgpool_fwd, avgpool_bwd};
const layer_ops_t layer_global_avgpool_cpu_ops = {"global_avgpool", gap_setup, NULL, gap_fwd,
                                                  gap_bwd};
