/* layer_conv2d.c: Conv2d layer (square kernel, stride, zero padding, optional bias)
 * on the CPU: oneDNN when the build has it (float32; HV_CONV=im2col turns it off),
 * else im2col + gemm with scratch from the model's shared workspace. A oneDNN failure
 * (an unsupported shape) falls back to im2col for that layer for good. oneDNN's
 * algorithm per direction: HV_CONV_ALGO=auto (default: Winograd where it is faster,
 * see conv2d_dnnl.c), direct or winograd. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv2d.h"
#include "layout_blocked.h"
#include "model_internal.h"
#include "settings.h"
#if HV_HAVE_DNNL
#include "conv2d_dnnl.h"

static void dnnl_free_impl(void *p) { conv2d_dnnl_free(p); }

/* HV_CONV_ALGO as conv2d_dnnl flags, or -1 when it names no algorithm (conv_setup
 * then fails the model's build with a message). */
static int algo_flags(void) {
  trainer_settings_t set;
  char err[256];
  if (trainer_settings_read(&set, err, sizeof err)) return -1;
  return set.conv_algo == TRAINER_CONV_ALGO_DIRECT     ? CONV2D_DNNL_DIRECT
         : set.conv_algo == TRAINER_CONV_ALGO_WINOGRAD ? CONV2D_DNNL_WINOGRAD
                                                       : 0;
}

/* The layer's oneDNN context, created on first use; NULL means use im2col. */
static conv2d_dnnl_t *dnnl_of(layer_t *l, const model_t *m) {
  if (!layer_conv2d_uses_dnnl() || l->impl_failed || m->conv_fallback_test) return NULL;
  if (!l->impl) {
    l->impl = conv2d_dnnl_create((model_src_blocked(m, l->in[0]) ? CONV2D_DNNL_SRC_BLOCKED : 0) |
                                 (l->blocked ? CONV2D_DNNL_DST_BLOCKED : 0) |
                                 (l->dx_overwrite ? CONV2D_DNNL_DX_OVERWRITE : 0) | algo_flags());
    if (l->impl) l->impl_free = dnnl_free_impl;
  }
  return l->impl;
}

static void dnnl_give_up(layer_t *l) {
  conv2d_dnnl_free(l->impl);
  l->impl = NULL;
  l->impl_free = NULL;
  l->impl_failed = 1; /* never try again */
}
#endif

/* NCHW copies for the im2col fallback when the model keeps blocked activations:
 * x, y, then dx, dy (allocated on the first fallback, which oneDNN makes rare). NULL,
 * with the model failed (model_forward returns NULL from then on), without memory. */
static real_t *plain_copies(layer_t *l, model_t *m) {
  if (!l->plain) {
    const size_t in = (size_t)m->max_batch * layer_in_size(l), out = (size_t)m->max_batch * layer_out_size(l);
    l->plain = malloc(2 * (in + out) * sizeof(real_t));
    if (!l->plain) {
      snprintf(m->err, sizeof m->err, "conv2d '%s': oneDNN refused it and there is no memory for its im2col "
               "fallback's NCHW copies", l->name);
      m->failed = 1;
    }
  }
  return l->plain;
}

int layer_conv2d_uses_dnnl(void) {
#if HV_HAVE_DNNL
  static int mode = -1; /* -1 unknown, 0 im2col, 1 oneDNN */
  if (mode < 0) {
    /* A bad value is refused by model_finalize; here it means the default. */
    trainer_settings_t set;
    char err[256];
    mode = trainer_settings_read(&set, err, sizeof err) == 0 ? !set.conv_im2col : 1;
  }
  return mode;
#else
  return 0;
#endif
}

conv2d_shape_t layer_conv2d_shape(const layer_t *l, int n) {
  conv2d_shape_t s = {.n = n, .c = l->in_c, .h = l->in_h, .w = l->in_w, .k = l->out_ch,
                      .kh = l->ksize, .kw = l->ksize, .stride = l->stride, .pad = l->pad};
  conv2d_shape_init(&s);
  return s;
}

static int conv_setup(layer_t *l, char *err, size_t errlen) {
  conv2d_shape_t s = layer_conv2d_shape(l, 1);
  if (l->out_ch < 1 || l->pad < 0 || conv2d_shape_init(&s)) {
    snprintf(err, errlen, "conv2d '%s': kernel %d stride %d pad %d does not fit input %dx%dx%d",
             l->name, l->ksize, l->stride, l->pad, l->in_c, l->in_h, l->in_w);
    return -1;
  }
#if HV_HAVE_DNNL
  if (layer_conv2d_uses_dnnl() && algo_flags() < 0) {
    trainer_settings_t set;
    trainer_settings_read(&set, err, errlen); /* says which variable is bad */
    return -1;
  }
#endif
  l->c = l->out_ch;
  l->h = s.ho;
  l->w = s.wo;
  l->weight_count = (size_t)l->out_ch * l->in_c * l->ksize * l->ksize;
  l->n_params = l->weight_count + (l->bias ? (size_t)l->out_ch : 0);
  l->ws_per_image = conv2d_workspace_per_image(&s);
  return 0;
}

static void conv_init(layer_t *l, model_t *m) {
  const double fan_in = (double)l->in_c * l->ksize * l->ksize;
  if (m->init == INIT_KAIMING_NORMAL_FAN_OUT) {
    /* kaiming_normal_(mode='fan_out', nonlinearity='relu'): std = sqrt(2 / fan_out) */
    init_normal(&m->rng, layer_w(m, l), l->weight_count,
                sqrt(2.0 / ((double)l->out_ch * l->ksize * l->ksize)));
    if (l->bias) init_uniform(&m->rng, layer_b(m, l), (size_t)l->out_ch, 0);
  } else {
    /* kaiming_uniform_(a=sqrt(5)): gain sqrt(2/(1+5)), bound gain*sqrt(3/fan_in) =
     * 1/sqrt(fan_in); the bias bound is 1/sqrt(fan_in) too. */
    init_uniform(&m->rng, layer_w(m, l), l->weight_count, 1.0 / sqrt(fan_in));
    if (l->bias) init_uniform(&m->rng, layer_b(m, l), (size_t)l->out_ch, 1.0 / sqrt(fan_in));
  }
}

static void conv_forward(layer_t *l, model_t *m, int train) {
  conv2d_shape_t s = layer_conv2d_shape(l, m->batch);
  l->train = train;
#if HV_HAVE_DNNL
  conv2d_dnnl_t *c = dnnl_of(l, m);
  if (c && conv2d_dnnl_forward(c, &s, model_src(m, l->in[0]), layer_w(m, l), layer_b(m, l),
                               l->out) == 0)
    return;
  if (c) dnnl_give_up(l);
#endif
  const int src_blocked = model_src_blocked(m, l->in[0]);
  if (!src_blocked && !l->blocked) {
    conv2d_forward(&s, model_src(m, l->in[0]), layer_w(m, l), layer_b(m, l), l->out, m->ws, m->ws_elems);
    return;
  }
  real_t *x = plain_copies(l, m);
  if (!x) return;
  real_t *y = x + (size_t)m->max_batch * layer_in_size(l);
  const real_t *src = model_src(m, l->in[0]);
  if (src_blocked) layout_from_blocked(s.n, s.c, s.h * s.w, src, x);
  conv2d_forward(&s, src_blocked ? x : src, layer_w(m, l), layer_b(m, l), l->blocked ? y : l->out, m->ws,
                 m->ws_elems);
  if (l->blocked) layout_to_blocked(s.n, s.k, s.ho * s.wo, y, l->out);
}

static void conv_backward(layer_t *l, model_t *m) {
  conv2d_shape_t s = layer_conv2d_shape(l, m->batch);
  /* The first layer's input gradient is wasted work in training: skip it. */
  real_t *dx = l->in[0] < 0 && !m->want_input_grad ? NULL : model_dsrc(m, l->in[0]);
#if HV_HAVE_DNNL
  conv2d_dnnl_t *c = dnnl_of(l, m);
  if (c && conv2d_dnnl_backward(c, &s, model_src(m, l->in[0]), layer_w(m, l), l->dout, dx,
                                layer_dw(m, l), layer_db(m, l)) == 0)
    return;
  if (c) dnnl_give_up(l);
#endif
  /* The im2col kernel accumulates: a gradient nobody zeroed starts from zero here. */
  if (dx && l->dx_overwrite) memset(dx, 0, sizeof(real_t) * (size_t)s.n * s.c * s.h * s.w);
  const int src_blocked = model_src_blocked(m, l->in[0]);
  if (!src_blocked && !l->blocked) {
    conv2d_backward(&s, model_src(m, l->in[0]), layer_w(m, l), l->dout, dx, layer_dw(m, l), layer_db(m, l), m->ws,
                    m->ws_elems);
    return;
  }
  const size_t max_in = (size_t)m->max_batch * layer_in_size(l), max_out = (size_t)m->max_batch * layer_out_size(l);
  real_t *x = plain_copies(l, m);
  if (!x) return;
  real_t *dx_plain = x + max_in + max_out, *dy_plain = dx_plain + max_in;
  const real_t *src = model_src(m, l->in[0]);
  if (src_blocked) layout_from_blocked(s.n, s.c, s.h * s.w, src, x);
  if (l->blocked) layout_from_blocked(s.n, s.k, s.ho * s.wo, l->dout, dy_plain);
  /* dx accumulates in NCHW and goes back whole: the same additions, in the same order,
   * as in a model that is NCHW throughout. */
  if (dx && src_blocked) layout_from_blocked(s.n, s.c, s.h * s.w, dx, dx_plain);
  conv2d_backward(&s, src_blocked ? x : src, layer_w(m, l), l->blocked ? dy_plain : l->dout,
                  dx && src_blocked ? dx_plain : dx, layer_dw(m, l), layer_db(m, l), m->ws, m->ws_elems);
  if (dx && src_blocked) layout_to_blocked(s.n, s.c, s.h * s.w, dx_plain, dx);
}

const layer_ops_t layer_conv2d_cpu_ops = {"conv2d", conv_setup, conv_init, conv_forward,
                                          conv_backward};
