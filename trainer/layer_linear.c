/* layer_linear.c: Linear layer over the flattened input (C*H*W features per image),
 * weight (out, in) as nn.Linear. */
#include <math.h>
#include <stdio.h>

#include "linear.h"
#include "model_internal.h"

static int linear_setup(layer_t *l, char *err, size_t errlen) {
  if (l->out_ch < 1) {
    snprintf(err, errlen, "linear '%s': %d outputs", l->name, l->out_ch);
    return -1;
  }
  l->c = l->out_ch;
  l->h = l->w = 1;
  l->weight_count = (size_t)l->out_ch * layer_in_size(l);
  l->n_params = l->weight_count + (l->bias ? (size_t)l->out_ch : 0);
  return 0;
}

static void linear_init(layer_t *l, model_t *m) {
  const double bound = 1.0 / sqrt((double)layer_in_size(l));
  init_uniform(&m->rng, layer_w(m, l), l->weight_count, bound);
  /* WRN code zeroes linear biases; nn.Linear's default is U(+-1/sqrt(fan_in)). */
  if (l->bias)
    init_uniform(&m->rng, layer_b(m, l), (size_t)l->out_ch,
                 m->init == INIT_KAIMING_NORMAL_FAN_OUT ? 0 : bound);
}

static void lin_forward(layer_t *l, model_t *m, int train) {
  l->train = train;
  linear_forward(m->batch, (int)layer_in_size(l), l->out_ch, model_src(m, l->in[0]),
                 layer_w(m, l), layer_b(m, l), l->out);
}

static void lin_backward(layer_t *l, model_t *m) {
  real_t *dx = l->in[0] < 0 && !m->want_input_grad ? NULL : model_dsrc(m, l->in[0]);
  linear_backward(m->batch, (int)layer_in_size(l), l->out_ch, model_src(m, l->in[0]),
                  layer_w(m, l), l->dout, dx, layer_dw(m, l), layer_db(m, l));
}

const layer_ops_t layer_linear_cpu_ops = {"linear", linear_setup, linear_init, lin_forward,
                                          lin_backward};
