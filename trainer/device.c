/* device.c: the CPU's device table (device.h): the CPU layer kernels, host memory,
 * softmax cross-entropy and the SGD update on host arrays; and device_batch, the one
 * helper that stages a host batch for the model (training and evaluation both use it). */
#include "device.h"

#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "sgd.h"
#include "softmax_xent.h"

static const layer_ops_t *const cpu_layer_ops[LAYER_NUM_KINDS] = {
    &layer_conv2d_cpu_ops,  &layer_batchnorm2d_cpu_ops,    &layer_relu_cpu_ops,
    &layer_maxpool_cpu_ops, &layer_avgpool_cpu_ops,        &layer_global_avgpool_cpu_ops,
    &layer_linear_cpu_ops,  &layer_dropout_cpu_ops,        &layer_add_cpu_ops,
    &layer_flatten_cpu_ops};

static const layer_ops_t *cpu_layer(layer_kind_t kind) {
  return kind < LAYER_NUM_KINDS ? cpu_layer_ops[kind] : NULL;
}

static int cpu_forward_input(model_t *m, const real_t **x, int n) {
  (void)m, (void)x, (void)n;
  return 0;
}

static double cpu_loss(model_t *m, const uint8_t *labels, real_t grad_scale, int *correct) {
  layer_t *last = &m->layers[m->n_layers - 1];
  return softmax_xent(m->batch, (int)layer_out_size(last), last->out, labels, grad_scale,
                      last->dout, NULL, correct);
}

static void *cpu_alloc_zeroed(size_t bytes) { return calloc(1, bytes ? bytes : 1); }
static void cpu_release(void *p) { free(p); }
static void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }

/* Host to host: a copy that cannot fail. */
static int cpu_copy(void *dst, const void *src, size_t bytes) {
  memcpy(dst, src, bytes);
  return 0;
}

/* The model reads the caller's batch where it lies: no staging buffer. */
static int cpu_batch_alloc(void **buf, size_t bytes) {
  (void)bytes;
  *buf = NULL;
  return 0;
}

static const real_t *cpu_batch_put(void *buf, const real_t *x, size_t bytes) {
  (void)buf, (void)bytes;
  return x;
}

const device_ops_t device_cpu_ops = {
    .kind = DEVICE_CPU,
    .name = "CPU",
    .blocked_layout = 1,
    .layer_ops = cpu_layer,
    .init_params = model_init_layers,
    .free_model = model_free_host_buffers,
    .forward_input = cpu_forward_input,
    .loss = cpu_loss,
    .alloc_zeroed = cpu_alloc_zeroed,
    .release = cpu_release,
    .zero = cpu_zero,
    .upload = cpu_copy,
    .download = cpu_copy,
    .sgd_update = sgd_update,
    .batch_alloc = cpu_batch_alloc,
    .batch_put = cpu_batch_put,
};

int device_batch_init(device_batch_t *b, const model_t *m, int images) {
  b->dev = m->dev;
  b->image_bytes = sizeof(real_t) * (size_t)m->in_c * m->in_h * m->in_w;
  return b->dev->batch_alloc(&b->buf, (size_t)images * b->image_bytes);
}

const real_t *device_batch_put(device_batch_t *b, const real_t *x, int n) {
  return b->dev->batch_put(b->buf, x, (size_t)n * b->image_bytes);
}

void device_batch_free(device_batch_t *b) {
  if (b->dev) b->dev->release(b->buf);
  memset(b, 0, sizeof *b);
}
