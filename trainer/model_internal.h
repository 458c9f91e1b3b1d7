/* model_internal.h: what layer implementations need from the model: the buffers of
 * their inputs, and parameter pointers. Not for workloads. */
#ifndef HV_TRAINER_MODEL_INTERNAL_H
#define HV_TRAINER_MODEL_INTERNAL_H

#include "conv2d.h"
#include "model.h"

/* Output of producer id (-1: the model input). */
static inline const real_t *model_src(const model_t *m, int id) {
  return id < 0 ? m->input : m->layers[id].out;
}
/* Whether producer id's output is in the channel-blocked layout (the model input never is). */
static inline int model_src_blocked(const model_t *m, int id) { return id >= 0 && m->layers[id].blocked; }
/* Frees what a CPU model allocated (buffers, layer state), not the layers array. */
void model_free_host_buffers(model_t *m);
/* Runs every layer's init into m->params and m->buffers, which must be host arrays
 * (the GPU's init_params points them at host copies meanwhile). */
void model_init_layers(model_t *m);
/* Gradient buffer of producer id (-1: the input gradient, m->dinput_buf). */
real_t *model_dsrc(model_t *m, int id);

static inline real_t *layer_w(model_t *m, const layer_t *l) { return m->params + l->param_off; }
static inline real_t *layer_dw(model_t *m, const layer_t *l) { return m->grads + l->param_off; }
static inline real_t *layer_b(model_t *m, const layer_t *l) {
  return l->n_params > l->weight_count ? m->params + l->param_off + l->weight_count : NULL;
}
static inline real_t *layer_db(model_t *m, const layer_t *l) {
  return l->n_params > l->weight_count ? m->grads + l->param_off + l->weight_count : NULL;
}
static inline size_t layer_out_size(const layer_t *l) { return (size_t)l->c * l->h * l->w; }
static inline size_t layer_in_size(const layer_t *l) { return (size_t)l->in_c * l->in_h * l->in_w; }

/* Whether batch norm layer bn runs the ReLU after it in its own passes now (its
 * fused_relu, and no SyncBatchNorm, which runs them apart). */
int layer_bn_relu_fused(const layer_t *bn, const model_t *m);

/* A conv2d layer's geometry for a batch of n (conv2d_shape_init applied; conv_setup
 * checked at build that it fits). */
conv2d_shape_t layer_conv2d_shape(const layer_t *l, int n);

/* PyTorch's default init of a weight with fan_in inputs per output (kaiming_uniform_
 * with a = sqrt(5), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in))), and of its bias. */
void init_uniform(rng_t *r, real_t *p, size_t n, double bound);
void init_normal(rng_t *r, real_t *p, size_t n, double std);

#endif /* HV_TRAINER_MODEL_INTERNAL_H */
