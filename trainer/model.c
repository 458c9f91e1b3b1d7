/* model.c: building, allocating, initialising and running a layer graph.
 * Execution order is the order of model_add_* calls (each layer reads only earlier
 * ones), so forward is a loop up and backward a loop down; the backward hook fires
 * right after each layer's gradients are final, in reverse layer order. */
#include "model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batchnorm.h"
#include "device.h"
#include "model_internal.h"
#include "settings.h"

/* Scratch of the im2col convolutions: up to this many elements (4 MiB of float), or
 * one image of the largest layer if that is more. Small chunks keep the column matrix
 * in cache between im2col and the gemm: 256 KiB-4 MiB ran 15-25% faster than 64 MiB
 * on WRN-10-1 and the ConvNet (1 thread). HV_CONV_WS_KB overrides it for tuning. */
#define MODEL_WS_TARGET ((size_t)1 << 20)

static const char *const kind_names[LAYER_NUM_KINDS] = {
    "conv2d", "batchnorm2d", "relu", "maxpool", "avgpool", "global_avgpool",
    "linear", "dropout", "add", "flatten"};

const char *layer_kind_name(layer_kind_t kind) {
  return kind < LAYER_NUM_KINDS ? kind_names[kind] : "?";
}

/* The format attribute checks the callers' arguments (and is what clang's
 * -Wformat-nonliteral asks of a printf-like function). */
__attribute__((format(printf, 2, 3))) static void model_error(model_t *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->err, sizeof m->err, fmt, ap);
  va_end(ap);
}

model_t *model_create(int c, int h, int w) {
  model_t *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->in_c = c;
  m->in_h = h;
  m->in_w = w;
  m->dev = &device_cpu_ops; /* built on the CPU; model_to_gpu swaps the table */
  return m;
}

void model_free_host_buffers(model_t *m) {
  for (int i = 0; i < m->n_layers; i++) {
    layer_t *l = &m->layers[i];
    if (!l->aliases_input) {
      free(l->out);
      if (!l->dout_shared) free(l->dout);
    }
    free(l->save);
    free(l->argmax);
    free(l->plain);
    free(l->scratch);
    free(l->sync_scratch);
    if (l->impl_free) l->impl_free(l->impl);
  }
  free(m->params);
  free(m->grads);
  free(m->buffers);
  free(m->dinput_buf);
  free(m->ws);
}

void model_free(model_t *m) {
  if (!m) return;
  m->dev->free_model(m);
  free(m->layers);
  free(m);
}

/* model_add's in1 of -2 means "no second input" (-1 is the model input). */
#define NO_INPUT (-2)

static int model_add(model_t *m, layer_kind_t kind, const char *name, int in0, int in1,
                     const layer_t *config) {
  if (m->finalized) {
    model_error(m, "layer '%s': model already finalized", name);
    return -1;
  }
  if (in0 < -1 || in0 >= m->n_layers || (in1 != NO_INPUT && (in1 < -1 || in1 >= m->n_layers))) {
    model_error(m, "layer '%s': input id out of range (%d layers so far)", name, m->n_layers);
    return -1;
  }
  if (m->n_layers == m->cap_layers) {
    int cap = m->cap_layers ? 2 * m->cap_layers : 16;
    layer_t *grown = realloc(m->layers, sizeof *grown * (size_t)cap);
    if (!grown) {
      model_error(m, "out of memory");
      return -1;
    }
    m->layers = grown;
    m->cap_layers = cap;
  }
  layer_t *l = &m->layers[m->n_layers];
  *l = *config;
  l->kind = kind;
  snprintf(l->name, sizeof l->name, "%s", name);
  l->ops = m->dev->layer_ops(kind);
  l->in[0] = in0;
  l->in[1] = in1;
  l->n_in = in1 == NO_INPUT ? 1 : 2;
  if (in0 < 0) {
    l->in_c = m->in_c, l->in_h = m->in_h, l->in_w = m->in_w;
  } else {
    const layer_t *p = &m->layers[in0];
    l->in_c = p->c, l->in_h = p->h, l->in_w = p->w;
  }
  if (l->ops->setup(l, m->err, sizeof m->err)) return -1;
  l->param_off = m->n_params;
  l->buf_off = m->n_buffers;
  m->n_params += l->n_params;
  m->n_buffers += l->n_buffers;
  return m->n_layers++;
}

static int add_one(model_t *m, layer_kind_t kind, const char *name, int in, const layer_t *cfg) {
  return model_add(m, kind, name, in, NO_INPUT, cfg);
}

int model_add_conv2d(model_t *m, const char *name, int in, int out_ch, int ksize, int stride,
                     int pad, int bias) {
  layer_t c = {.out_ch = out_ch, .ksize = ksize, .stride = stride, .pad = pad, .bias = bias};
  return add_one(m, LAYER_CONV2D, name, in, &c);
}

int model_add_batchnorm2d(model_t *m, const char *name, int in) {
  /* PyTorch's defaults: eps 1e-5, momentum 0.1. */
  layer_t c = {.eps = (real_t)1e-5, .bn_momentum = (real_t)0.1};
  return add_one(m, LAYER_BATCHNORM2D, name, in, &c);
}

int model_add_relu(model_t *m, const char *name, int in) {
  layer_t c = {0};
  return add_one(m, LAYER_RELU, name, in, &c);
}

int model_add_maxpool(model_t *m, const char *name, int in, int ksize, int stride) {
  layer_t c = {.ksize = ksize, .stride = stride};
  return add_one(m, LAYER_MAXPOOL, name, in, &c);
}

int model_add_avgpool(model_t *m, const char *name, int in, int ksize, int stride) {
  layer_t c = {.ksize = ksize, .stride = stride};
  return add_one(m, LAYER_AVGPOOL, name, in, &c);
}

int model_add_global_avgpool(model_t *m, const char *name, int in) {
  layer_t c = {0};
  return add_one(m, LAYER_GLOBAL_AVGPOOL, name, in, &c);
}

int model_add_linear(model_t *m, const char *name, int in, int out, int bias) {
  layer_t c = {.out_ch = out, .bias = bias};
  return add_one(m, LAYER_LINEAR, name, in, &c);
}

int model_add_dropout(model_t *m, const char *name, int in, real_t p) {
  layer_t c = {.p = p};
  return add_one(m, LAYER_DROPOUT, name, in, &c);
}

int model_add_add(model_t *m, const char *name, int a, int b) {
  layer_t c = {0};
  if (a < -1 || a >= m->n_layers || b < -1 || b >= m->n_layers) {
    model_error(m, "add '%s': input id out of range", name);
    return -1;
  }
  int ac = a < 0 ? m->in_c : m->layers[a].c, ah = a < 0 ? m->in_h : m->layers[a].h,
      aw = a < 0 ? m->in_w : m->layers[a].w, bc = b < 0 ? m->in_c : m->layers[b].c,
      bh = b < 0 ? m->in_h : m->layers[b].h, bw = b < 0 ? m->in_w : m->layers[b].w;
  if (ac != bc || ah != bh || aw != bw) {
    model_error(m, "add '%s': shapes %dx%dx%d and %dx%dx%d differ", name, ac, ah, aw, bc, bh, bw);
    return -1;
  }
  return model_add(m, LAYER_ADD, name, a, b, &c);
}

int model_add_flatten(model_t *m, const char *name, int in) {
  layer_t c = {0};
  return add_one(m, LAYER_FLATTEN, name, in, &c);
}

real_t *model_dsrc(model_t *m, int id) { return id < 0 ? m->dinput_buf : m->layers[id].dout; }

void init_uniform(rng_t *r, real_t *p, size_t n, double bound) {
  for (size_t i = 0; i < n; i++) p[i] = (real_t)((2 * rng_uniform(r) - 1) * bound);
}

void init_normal(rng_t *r, real_t *p, size_t n, double std) {
  for (size_t i = 0; i < n; i++) p[i] = (real_t)(rng_normal(r) * std);
}

void model_init_layers(model_t *m) {
  for (int i = 0; i < m->n_layers; i++)
    if (m->layers[i].ops->init) m->layers[i].ops->init(&m->layers[i], m);
}

void model_init_params(model_t *m, uint64_t seed) {
  rng_seed(&m->rng, seed);
  m->dev->init_params(m);
}

/* An activation or its gradient: cache-line aligned, as oneDNN's own buffers are:
 * its convolutions read and write these in place (the blocked layout), and some of
 * its kernels store with aligned writes (conv2d_dnnl.c); malloc gives large blocks 16
 * bytes only. */
static real_t *alloc_activation(size_t elems) {
  void *p = NULL;
  return posix_memalign(&p, 64, (elems ? elems : 1) * sizeof(real_t)) == 0 ? p : NULL;
}

/* Chooses each layer's activation layout. oneDNN computes convolutions in blocks of 16
 * channels (nChw16c); kept in that layout from one convolution to the next, through
 * batch norm, ReLU, dropout and residual adds, activations need no reorder around each
 * convolution (those reorders were 16% of a WRN-10-1 step). Convolutions with a
 * multiple of 16 output channels produce it; batch norm, ReLU, dropout and add pass
 * their input's layout on (an add's two inputs must agree); global average pooling
 * reads either; max pooling passes it on too, except into a linear layer or flatten
 * that is its only consumer, for which it writes NCHW (the ConvNet: its reorders
 * around both convolutions were 10% of a step). Anything else that would meet a
 * blocked tensor (average pooling, a linear layer or flatten over a map larger than
 * 1x1 read from anything else, the model's output) makes the whole model NCHW, as it
 * was before. On only with oneDNN convolutions in
 * float32 on the CPU; HV_LAYOUT=nchw turns it off. */
static void assign_layouts(model_t *m, const trainer_settings_t *set) {
  int allow = m->dev->blocked_layout && sizeof(real_t) == 4 && layer_conv2d_uses_dnnl() &&
              !set->layout_nchw;
  for (int i = 0; allow && i < m->n_layers; i++) {
    layer_t *l = &m->layers[i];
    const int in0 = model_src_blocked(m, l->in[0]);
    switch (l->kind) {
      case LAYER_CONV2D: l->blocked = l->c % 16 == 0; break;
      case LAYER_BATCHNORM2D:
      case LAYER_RELU:
      case LAYER_DROPOUT: l->blocked = in0; break;
      case LAYER_ADD:
        l->blocked = in0;
        if (in0 != model_src_blocked(m, l->in[1])) allow = 0;
        break;
      case LAYER_MAXPOOL: l->blocked = in0; break;
      case LAYER_GLOBAL_AVGPOOL: break;
      case LAYER_LINEAR:
      case LAYER_FLATTEN:
        if (in0 && l->in_h * l->in_w > 1) {
          /* A max pooling read only here writes NCHW instead (the ConvNet's last). */
          layer_t *p = &m->layers[l->in[0]];
          if (p->kind == LAYER_MAXPOOL && p->consumers == 1)
            p->blocked = 0;
          else
            allow = 0;
        }
        break;
      default:
        if (in0) allow = 0;
    }
  }
  if (m->layers[m->n_layers - 1].blocked) allow = 0;
  for (int i = 0; !allow && i < m->n_layers; i++) m->layers[i].blocked = 0;
  m->blocked_layout = allow;
}

/* Whether layer i is the last to read producer id (its backward runs first). */
static int last_consumer(const model_t *m, int i, int id) {
  for (int j = i + 1; j < m->n_layers; j++)
    for (int q = 0; q < m->layers[j].n_in; q++)
      if (m->layers[j].in[q] == id) return 0;
  return 1;
}

/* Fusions of the CPU's element-wise passes, which are bound by memory traffic between
 * layers (a WRN-10-1 step, 1 thread: batch norm, ReLU, adds and zeroing took 40% of the
 * time, the convolutions the rest). A batch norm whose only consumer is the ReLU
 * right after it runs that ReLU in its own passes, in either layout (layer.h:
 * fused_relu): two passes over the activation fewer forward, three backward. A
 * residual add's gradient, which passes to both inputs unchanged, is shared with an
 * input that only the add consumes (no zeroing of that input's gradient, no addition
 * into it: four passes) and written, not added, into an input whose gradient it
 * contributes first (layer.h: dout_shared, add_grad_write; one pass); a convolution,
 * ReLU or batch norm that contributes first to a shared gradient writes it likewise
 * (dx_overwrite beyond sole consumers). The same bits as without
 * (tests/trainer/test_fusion_model.c). HV_FUSE=off keeps every layer's own passes (the
 * reference the tests compare with). Runs after the buffers are allocated. */
static void fuse_layers(model_t *m, const trainer_settings_t *set) {
  if (set->fuse_off) return;
  for (int i = 0; i + 1 < m->n_layers; i++) {
    layer_t *bn = &m->layers[i], *relu = &m->layers[i + 1];
    if (bn->kind == LAYER_BATCHNORM2D && bn->consumers == 1 && relu->kind == LAYER_RELU &&
        relu->in[0] == i)
      bn->fused_relu = relu->fused_into_producer = 1;
  }
  /* A convolution, ReLU or batch norm that reads a tensor other layers read too, and
   * reads it last (its backward runs first), writes that gradient instead of adding it
   * to a zeroed buffer; the others add to it (their dx_overwrite needs a sole
   * consumer). WRN's projection blocks: the shortcut convolution writes the gradient
   * of the activated input, the first convolution adds (no zeroing, and one pass of
   * oneDNN's scratch-then-add fewer). */
  for (int i = 0; i < m->n_layers; i++) {
    layer_t *l = &m->layers[i];
    if (l->kind != LAYER_CONV2D && l->kind != LAYER_RELU && l->kind != LAYER_BATCHNORM2D) continue;
    if (l->in[0] < 0 || l->dx_overwrite || l->fused_into_producer) continue;
    layer_t *p = &m->layers[l->in[0]];
    if (p->aliases_input || p->dout_shared || p->consumers < 2) continue;
    if (p->kind == LAYER_BATCHNORM2D && p->fused_relu) continue; /* its dout is unused */
    if (last_consumer(m, i, l->in[0])) l->dx_overwrite = p->grad_written = 1;
  }
  /* From the last layer down, so an add feeding only another add shares that one's
   * buffer before its own inputs take it over. */
  for (int i = m->n_layers - 1; i >= 0; i--) {
    layer_t *add = &m->layers[i];
    if (add->kind != LAYER_ADD || add->in[0] == add->in[1]) continue;
    for (int k = 0; k < 2; k++) {
      if (add->in[k] < 0) continue;
      layer_t *p = &m->layers[add->in[k]];
      if (p->aliases_input || p->dout_shared) continue;
      if (p->consumers == 1) {
        free(p->dout);
        p->dout = add->dout;
        p->dout_shared = p->grad_written = 1;
        continue;
      }
      if (last_consumer(m, i, add->in[k])) {
        add->add_grad_write |= 1 << k;
        p->grad_written = 1;
      }
    }
  }
}

int model_finalize(model_t *m, int max_batch, init_mode_t init, uint64_t seed) {
  if (m->finalized || m->n_layers == 0 || max_batch < 1) {
    model_error(m, "model_finalize: %s", m->finalized ? "called twice"
                                         : m->n_layers ? "max_batch must be >= 1"
                                                       : "no layers");
    return -1;
  }
  for (int i = 0; i < m->n_layers; i++) {
    if (!m->dev->layer_ops(m->layers[i].kind)) {
      model_error(m, "layer '%s': no %s implementation of %s in this build", m->layers[i].name,
                  m->dev->name, layer_kind_name(m->layers[i].kind));
      return -1;
    }
  }
  /* The HV_* settings first: a typo fails the build of the model, named, rather than
   * being ignored. */
  trainer_settings_t set;
  char serr[256];
  if (trainer_settings_read(&set, serr, sizeof serr)) {
    model_error(m, "%s", serr);
    return -1;
  }
  m->max_batch = max_batch;
  m->init = init;
  for (int i = 0; i < m->n_layers; i++)
    for (int k = 0; k < m->layers[i].n_in; k++)
      if (m->layers[i].in[k] >= 0) m->layers[m->layers[i].in[k]].consumers++;
  assign_layouts(m, &set); /* reads the consumer counts */

  m->params = calloc(m->n_params + 1, sizeof(real_t));
  m->grads = calloc(m->n_params + 1, sizeof(real_t));
  m->buffers = calloc(m->n_buffers + 1, sizeof(real_t));
  m->dinput_buf = calloc((size_t)max_batch * m->in_c * m->in_h * m->in_w, sizeof(real_t));
  if (!m->params || !m->grads || !m->buffers || !m->dinput_buf) goto oom;
  size_t ws_image = 0;
  for (int i = 0; i < m->n_layers; i++) {
    layer_t *l = &m->layers[i];
    size_t out = (size_t)max_batch * layer_out_size(l);
    if (l->kind == LAYER_FLATTEN) {
      if (l->in[0] < 0) {
        model_error(m, "layer '%s': flatten of the model input is not supported", l->name);
        return -1;
      }
      l->out = m->layers[l->in[0]].out;
      l->dout = m->layers[l->in[0]].dout;
      l->aliases_input = 1;
    } else {
      l->out = alloc_activation(out);
      l->dout = alloc_activation(out);
      if (!l->out || !l->dout) goto oom;
    }
    /* Batch norm: saved mean and invstd, then the forward's coefficients when it runs
     * the ReLU after it (fuse_layers). */
    if (l->kind == LAYER_BATCHNORM2D) l->save = malloc(4 * (size_t)l->c * sizeof(real_t));
    if (l->kind == LAYER_BATCHNORM2D && l->blocked &&
        !(l->scratch = malloc(batchnorm_blocked_scratch(max_batch, l->c) * sizeof(double))))
      goto oom;
    if (l->kind == LAYER_DROPOUT) l->save = malloc(out * sizeof(real_t));
    if (l->kind == LAYER_MAXPOOL) l->argmax = malloc(out * sizeof(int32_t));
    if ((l->kind == LAYER_BATCHNORM2D || l->kind == LAYER_DROPOUT) && !l->save) goto oom;
    if (l->kind == LAYER_MAXPOOL && !l->argmax) goto oom;
    if (l->ws_per_image > ws_image) ws_image = l->ws_per_image;
  }
  /* A convolution, ReLU, batch norm or max pooling that is the only consumer of its
   * input writes that gradient whole: nothing to add to, nothing for model_backward
   * to zero (max pooling zeroes each plane itself, in cache, before its scatter). */
  for (int i = 0; i < m->n_layers; i++) {
    layer_t *l = &m->layers[i], *p = l->in[0] >= 0 ? &m->layers[l->in[0]] : NULL;
    l->dx_overwrite = (l->kind == LAYER_CONV2D || l->kind == LAYER_RELU || l->kind == LAYER_BATCHNORM2D ||
                       l->kind == LAYER_MAXPOOL) &&
                      p && p->consumers == 1 && !p->aliases_input;
    if (l->dx_overwrite) p->grad_written = 1;
  }
  fuse_layers(m, &set);
  /* Enough for the whole batch of the largest layer when that fits the target. */
  m->ws_elems = ws_image * (size_t)max_batch;
  size_t target = MODEL_WS_TARGET;
  if (set.conv_ws_kb > 0) target = (size_t)set.conv_ws_kb * 1024 / sizeof(real_t);
  if (m->ws_elems > target) m->ws_elems = target;
  if (m->ws_elems < ws_image) m->ws_elems = ws_image;
  if (m->ws_elems) {
    m->ws = malloc(m->ws_elems * sizeof(real_t));
    if (!m->ws) goto oom;
  }
  m->finalized = 1;
  model_init_params(m, seed);
  return 0;
oom:
  model_error(m, "out of memory allocating the model for batch %d", max_batch);
  return -1;
}

const real_t *model_forward(model_t *m, const real_t *x, int n, int train) {
  if (n < 1 || n > m->max_batch) {
    model_error(m, "model_forward: batch of %d images, the model was allocated for 1..%d", n,
                m->max_batch);
    return NULL;
  }
  if (m->dev->forward_input(m, &x, n)) return NULL;
  m->input = x;
  m->batch = n;
  for (int i = 0; i < m->n_layers && !m->failed; i++) m->layers[i].ops->forward(&m->layers[i], m, train);
  return m->failed ? NULL : m->layers[m->n_layers - 1].out;
}

double model_loss(model_t *m, const uint8_t *labels, real_t grad_scale, int *correct) {
  return m->dev->loss(m, labels, grad_scale, correct);
}

void model_backward(model_t *m, model_backward_hook_t hook, void *ctx) {
  const int n = m->batch;
  real_t *top = m->layers[m->n_layers - 1].dout;
  /* Every gradient buffer but the loss's starts at zero: layers accumulate into
   * their inputs, because a tensor may feed two layers (residual blocks). */
  for (int i = 0; i < m->n_layers - 1; i++) {
    layer_t *l = &m->layers[i];
    if (l->aliases_input || l->dout == top) continue;
    if (l->grad_written) continue;
    m->dev->zero(l->dout, sizeof(real_t) * (size_t)n * layer_out_size(l));
  }
  if (m->want_input_grad) m->dev->zero(m->dinput_buf, sizeof(real_t) * (size_t)n * m->in_c * m->in_h * m->in_w);
  for (int i = m->n_layers - 1; i >= 0; i--) {
    m->layers[i].ops->backward(&m->layers[i], m);
    if (hook) hook(ctx, m, i);
  }
}

void model_set_bn_sync(model_t *m, const model_bn_sync_t *sync) {
  m->bn_sync = sync ? *sync : (model_bn_sync_t){NULL, NULL};
}

void model_zero_grad(model_t *m) { m->dev->zero(m->grads, sizeof(real_t) * m->n_params); }

const real_t *model_input_grad(const model_t *m) { return m->dinput_buf; }
const real_t *model_output(const model_t *m) { return m->layers[m->n_layers - 1].out; }
int model_output_size(const model_t *m) {
  return (int)layer_out_size(&m->layers[m->n_layers - 1]);
}
real_t *model_layer_params(model_t *m, int layer) { return layer_w(m, &m->layers[layer]); }
real_t *model_layer_grads(model_t *m, int layer) { return layer_dw(m, &m->layers[layer]); }

void model_summary(const model_t *m, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; i < m->n_layers && used < len; i++) {
    const layer_t *l = &m->layers[i];
    int k = snprintf(buf + used, len - used, "%3d %-14s %-14s in(%d,%d) out %dx%dx%d params %zu\n",
                     i, l->name, layer_kind_name(l->kind), l->in[0], l->n_in > 1 ? l->in[1] : -2,
                     l->c, l->h, l->w, l->n_params);
    if (k < 0) break;
    used += (size_t)k;
  }
  if (used < len) {
    snprintf(buf + used, len - used, "total parameters %zu, buffers %zu\n", m->n_params,
             m->n_buffers);
  }
}
