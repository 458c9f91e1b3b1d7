/* model_gpu.c: moving a model to the GPU and the model-level GPU work (model_gpu.h):
 * the GPU's device table (device.h: device memory, initialisation through the host,
 * the loss, the SGD update, batch uploads). The layers' GPU ops are in layer_gpu.c.
 * Built when the CUDA toolkit has cuDNN; other builds link model_gpu_stub.c. */
#include "model_gpu.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "gpu_internal.h"
#include "gpu_kernels.h"
#include "half_layout.h"
#include "model_internal.h"

static const device_ops_t gpu_device_ops; /* defined at the end, set by model_to_gpu */

int model_gpu_alloc(void **dev, size_t bytes) {
  *dev = NULL;
  return cudaMalloc(dev, bytes ? bytes : 1) == cudaSuccess ? 0 : -1;
}

void model_gpu_release(void *dev) { cudaFree(dev); }

void model_gpu_sync(void) { cudaDeviceSynchronize(); }

int model_gpu_upload(void *dev, const void *host, size_t bytes) {
  return cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -1;
}

int model_gpu_download(void *host, const void *dev, size_t bytes) {
  return cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -1;
}

int model_gpu_select(int local_rank, char *err, size_t errlen) {
  int devices = 0;
  cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0) {
    snprintf(err, errlen, "no CUDA device is visible%s%s", rc != cudaSuccess ? ": " : "",
             rc != cudaSuccess ? cudaGetErrorString(rc) : "");
    return -1;
  }
  const int dev = local_rank % devices;
  if ((rc = cudaSetDevice(dev)) != cudaSuccess) {
    snprintf(err, errlen, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(rc));
    return -1;
  }
  return dev;
}

void model_gpu_zero(void *dev, size_t bytes) {
  if (bytes) cudaMemsetAsync(dev, 0, bytes, NULL);
}

/* m->gpu: the device copies of the loss's inputs and outputs (grown with the batch),
 * and the float16 arrays of mixed precision. */
typedef struct gpu_state {
  uint8_t *labels;
  double *loss;
  int *right;
  int cap;
  int amp;
  void *params_half;  /* the master parameters in float16: conv weights KRSC, the rest as they are */
  void *grads_half;   /* a conv layer's float16 weight and bias gradients, before they join grads */
  void *input_half;   /* the batch in float16 NHWC */
  int *found;         /* the unscale check's flag */
} gpu_state_t;

static void release_all(model_t *m) {
  model_gpu_release(m->params);
  model_gpu_release(m->grads);
  model_gpu_release(m->buffers);
  model_gpu_release(m->dinput_buf);
  for (int i = 0; i < m->n_layers; i++) {
    layer_t *l = &m->layers[i];
    if (!l->aliases_input) model_gpu_release(l->out), model_gpu_release(l->dout);
    model_gpu_release(l->save);
    model_gpu_release(l->sync_scratch);
    if (l->impl_free) l->impl_free(l->impl);
    l->out = l->dout = l->save = NULL;
    l->sync_scratch = NULL;
    l->impl = NULL;
    l->impl_free = NULL;
  }
  gpu_state_t *g = m->gpu;
  if (g) {
    model_gpu_release(g->labels), model_gpu_release(g->loss), model_gpu_release(g->right);
    model_gpu_release(g->params_half), model_gpu_release(g->grads_half), model_gpu_release(g->input_half);
    model_gpu_release(g->found);
    free(g);
  }
  m->gpu = NULL;
}

/* A device copy of n host values (NULL: zeroed). */
static real_t *upload(const real_t *host, size_t n) {
  void *d = NULL;
  if (model_gpu_alloc(&d, n * sizeof(real_t))) return NULL;
  const int rc = host ? model_gpu_upload(d, host, n * sizeof(real_t))
                      : (cudaMemset(d, 0, n * sizeof(real_t)) == cudaSuccess ? 0 : -1);
  if (rc) {
    model_gpu_release(d);
    return NULL;
  }
  return d;
}

int model_to_gpu(model_t *m) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    snprintf(m->err, sizeof m->err, "model_to_gpu: no CUDA device is visible");
    return -1;
  }
  if (!m->finalized || m->gpu) {
    snprintf(m->err, sizeof m->err, "model_to_gpu: %s", m->finalized ? "already on the GPU" : "finalize it first");
    return -1;
  }
  for (int i = 0; i < m->n_layers; i++)
    if (!layer_gpu_ops(m->layers[i].kind)) {
      snprintf(m->err, sizeof m->err, "model_to_gpu: layer '%s': no GPU version of %s yet", m->layers[i].name,
               layer_kind_name(m->layers[i].kind));
      return -1;
    }
  /* Build the device model aside, then swap: a failure leaves the CPU model intact. */
  model_t d = *m;
  d.layers = malloc(sizeof *d.layers * (size_t)m->n_layers);
  gpu_state_t *g = calloc(1, sizeof *g);
  if (!d.layers || !g) {
    free(d.layers);
    free(g);
    snprintf(m->err, sizeof m->err, "model_to_gpu: out of memory");
    return -1;
  }
  memcpy(d.layers, m->layers, sizeof *d.layers * (size_t)m->n_layers);
  d.gpu = g;
  d.params = upload(m->params, m->n_params + 1);
  d.grads = upload(NULL, m->n_params + 1);
  d.buffers = upload(m->buffers, m->n_buffers + 1);
  d.dinput_buf = upload(NULL, (size_t)m->max_batch * m->in_c * m->in_h * m->in_w);
  int ok = d.params && d.grads && d.buffers && d.dinput_buf;
  for (int i = 0; i < d.n_layers; i++) {
    layer_t *l = &d.layers[i];
    l->ops = layer_gpu_ops(l->kind);
    l->impl = NULL; /* the CPU's oneDNN contexts stay with the CPU model */
    l->impl_free = NULL;
    l->impl_failed = 0;
    /* NCHW, and every input gradient accumulated into a zeroed buffer. */
    l->blocked = l->dx_overwrite = l->grad_written = 0;
    l->plain = NULL;
    l->scratch = NULL;
    l->sync_scratch = NULL; /* the CPU's stays with the CPU model; the GPU's is made on first use */
    l->argmax = NULL;
    l->out = l->dout = l->save = NULL;
    if (l->aliases_input) continue;
    const size_t out = (size_t)m->max_batch * layer_out_size(l);
    l->out = upload(NULL, out);
    l->dout = upload(NULL, out);
    if (l->kind == LAYER_BATCHNORM2D) l->save = upload(NULL, 2 * (size_t)l->c);
    ok = ok && l->out && l->dout && (l->kind != LAYER_BATCHNORM2D || l->save);
  }
  for (int i = 0; i < d.n_layers; i++) /* flatten: its input's buffers */
    if (d.layers[i].aliases_input) {
      d.layers[i].out = d.layers[d.layers[i].in[0]].out;
      d.layers[i].dout = d.layers[d.layers[i].in[0]].dout;
    }
  d.blocked_layout = 0;
  d.ws = NULL;
  d.ws_elems = 0;
  d.dev = &gpu_device_ops;
  if (!ok) {
    release_all(&d);
    free(d.layers);
    snprintf(m->err, sizeof m->err, "model_to_gpu: out of device memory for the model at batch %d", m->max_batch);
    return -1;
  }
  /* The CPU model's memory goes; the device model takes its place. */
  model_free_host_buffers(m);
  free(m->layers);
  *m = d;
  return 0;
}

static double gpu_loss(model_t *m, const uint8_t *labels, real_t grad_scale, int *correct) {
  gpu_state_t *g = m->gpu;
  const layer_t *last = &m->layers[m->n_layers - 1];
  const int n = m->batch, k = (int)layer_out_size(last);
  if (g->cap < n) {
    model_gpu_release(g->labels), model_gpu_release(g->loss), model_gpu_release(g->right);
    g->labels = NULL, g->loss = NULL, g->right = NULL, g->cap = 0;
    if (model_gpu_alloc((void **)&g->labels, (size_t)m->max_batch) ||
        model_gpu_alloc((void **)&g->loss, (size_t)m->max_batch * sizeof(double)) ||
        model_gpu_alloc((void **)&g->right, (size_t)m->max_batch * sizeof(int))) {
      snprintf(m->err, sizeof m->err, "model_loss: out of device memory");
      m->failed = 1;
      return NAN;
    }
    g->cap = m->max_batch;
  }
  double *loss = malloc((size_t)n * sizeof *loss);
  int *right = malloc((size_t)n * sizeof *right);
  double sum = NAN;
  real_t *dlogits = grad_scale != 0 ? last->dout : NULL;
  if (loss && right && cudaMemcpy(g->labels, labels, (size_t)n, cudaMemcpyHostToDevice) == cudaSuccess &&
      (g->amp ? gpu_softmax_xent_half(n, k, last->out, g->labels, grad_scale, dlogits, g->loss, g->right, NULL)
              : gpu_softmax_xent(n, k, last->out, g->labels, grad_scale, dlogits, g->loss, g->right, NULL)) == 0 &&
      cudaMemcpy(loss, g->loss, (size_t)n * sizeof *loss, cudaMemcpyDeviceToHost) == cudaSuccess &&
      cudaMemcpy(right, g->right, (size_t)n * sizeof *right, cudaMemcpyDeviceToHost) == cudaSuccess) {
    /* Row by row in order, as the CPU sums them. */
    int r = 0;
    sum = 0;
    for (int i = 0; i < n; i++) sum += loss[i], r += right[i];
    if (correct) *correct = r;
  } else {
    snprintf(m->err, sizeof m->err, "model_loss: the GPU softmax cross-entropy failed");
    m->failed = 1;
  }
  free(loss);
  free(right);
  return sum;
}

static void gpu_sgd(size_t n, real_t *param, const real_t *grad, real_t *buf, real_t lr, real_t momentum,
                    real_t weight_decay, int nesterov, int first) {
  gpu_sgd_update(n, param, grad, buf, lr, momentum, weight_decay, nesterov, first, NULL);
}

int model_gpu_enable_amp(model_t *m) {
  gpu_state_t *g = m->gpu; /* only a model on the GPU has one */
  if (!g) {
    snprintf(m->err, sizeof m->err, "model_gpu_enable_amp: the model is not on the GPU (model_to_gpu first)");
    return -1;
  }
  if (g->amp) return 0;
  const size_t half = 2, in = (size_t)m->max_batch * m->in_c * m->in_h * m->in_w; /* bytes of a float16 */
  if (model_gpu_alloc(&g->params_half, (m->n_params + 1) * half) ||
      model_gpu_alloc(&g->grads_half, (m->n_params + 1) * half) || model_gpu_alloc(&g->input_half, in * half) ||
      model_gpu_alloc((void **)&g->found, sizeof(int))) {
    model_gpu_release(g->params_half), model_gpu_release(g->grads_half), model_gpu_release(g->input_half);
    model_gpu_release(g->found);
    g->params_half = g->grads_half = g->input_half = NULL;
    g->found = NULL;
    snprintf(m->err, sizeof m->err, "model_gpu_enable_amp: out of device memory");
    return -1;
  }
  /* Layer contexts made so far hold float32 descriptors: made again on next use. */
  for (int i = 0; i < m->n_layers; i++) {
    layer_t *l = &m->layers[i];
    if (l->impl_free) l->impl_free(l->impl);
    l->impl = NULL;
    l->impl_free = NULL;
  }
  g->amp = 1;
  return 0;
}

int model_gpu_amp(const model_t *m) {
  const gpu_state_t *g = m->gpu;
  return g && g->amp;
}

real_t *model_gpu_half_of(const model_t *m, const real_t *p) {
  const gpu_state_t *g = m->gpu;
  if (!p) return NULL;
  if (p >= m->params && p < m->params + m->n_params)
    return (real_t *)((uint16_t *)g->params_half + (p - m->params));
  return (real_t *)((uint16_t *)g->grads_half + (p - m->grads));
}

const real_t *model_gpu_amp_input(model_t *m, const real_t *x, int n) {
  gpu_state_t *g = m->gpu;
  /* The master parameters changed since the last forward (SGD, a checkpoint, DDP's
   * broadcast): the float16 copy of those the kernels read in float16 (convolutions,
   * KRSC, and linear layers; batch norm reads float32) is made again: one pass over
   * those parameters. A bias, and a linear layer, is the h = w = 1 case. */
  int rc = 0;
  for (int i = 0; i < m->n_layers && rc == 0; i++) {
    const layer_t *l = &m->layers[i];
    real_t *w = layer_w(m, l);
    if (l->kind == LAYER_CONV2D) {
      const conv2d_shape_t s = layer_conv2d_shape(l, n);
      const int bias = (int)(l->n_params - l->weight_count);
      rc = gpu_half_nhwc_from_float_nchw(s.k, s.c, s.kh, s.kw, w, model_gpu_half_of(m, w), NULL);
      if (rc == 0 && bias)
        rc = gpu_half_nhwc_from_float_nchw(1, bias, 1, 1, layer_b(m, l), model_gpu_half_of(m, layer_b(m, l)), NULL);
    } else if (l->kind == LAYER_LINEAR) {
      rc = gpu_half_nhwc_from_float_nchw(1, (int)l->n_params, 1, 1, w, model_gpu_half_of(m, w), NULL);
    }
  }
  if (rc == 0) rc = gpu_half_nhwc_from_float_nchw(n, m->in_c, m->in_h, m->in_w, x, g->input_half, NULL);
  if (rc != 0) {
    snprintf(m->err, sizeof m->err, "mixed precision: the float16 copies failed: %s",
             cudaGetErrorString((cudaError_t)rc));
    m->failed = 1;
    return NULL;
  }
  return g->input_half;
}

int model_gpu_unscale(model_t *m, float inv_scale, int *found_inf) {
  gpu_state_t *g = m->gpu;
  int found = 1;
  if (!g || !g->found || cudaMemsetAsync(g->found, 0, sizeof(int), NULL) != cudaSuccess ||
      gpu_unscale_check(m->n_params, m->grads, inv_scale, g->found, NULL) != 0 ||
      cudaMemcpy(&found, g->found, sizeof found, cudaMemcpyDeviceToHost) != cudaSuccess) {
    snprintf(m->err, sizeof m->err, "mixed precision: the gradient check failed%s",
             g && g->found ? "" : " (enable mixed precision first)");
    return -1;
  }
  *found_inf = found;
  return 0;
}

/* The same initial values as on the CPU: drawn into host arrays, then uploaded. */
static void gpu_init_params(model_t *m) {
  real_t *params = m->params, *buffers = m->buffers;
  m->params = calloc(m->n_params + 1, sizeof(real_t));
  m->buffers = calloc(m->n_buffers + 1, sizeof(real_t));
  if (!m->params || !m->buffers) {
    free(m->params), free(m->buffers);
    m->params = params, m->buffers = buffers;
    snprintf(m->err, sizeof m->err, "model_init_params: out of memory");
    m->failed = 1;
    return;
  }
  model_init_layers(m);
  if (model_gpu_upload(params, m->params, (m->n_params + 1) * sizeof(real_t)) ||
      model_gpu_upload(buffers, m->buffers, (m->n_buffers + 1) * sizeof(real_t))) {
    snprintf(m->err, sizeof m->err, "model_init_params: the copy to the GPU failed");
    m->failed = 1;
  }
  free(m->params), free(m->buffers);
  m->params = params, m->buffers = buffers;
}

static int gpu_forward_input(model_t *m, const real_t **x, int n) {
  if (model_gpu_amp(m) && !(*x = model_gpu_amp_input(m, *x, n))) return -1;
  return 0;
}

static void *gpu_alloc_zeroed(size_t bytes) {
  void *p = NULL;
  if (model_gpu_alloc(&p, bytes) == 0) model_gpu_zero(p, bytes);
  return p;
}

static const real_t *gpu_batch_put(void *buf, const real_t *x, size_t bytes) {
  return model_gpu_upload(buf, x, bytes) ? NULL : buf;
}

static const device_ops_t gpu_device_ops = {
    .kind = DEVICE_GPU,
    .name = "GPU",
    .blocked_layout = 0, /* NCHW, or NHWC float16 with mixed precision */
    .layer_ops = layer_gpu_ops,
    .init_params = gpu_init_params,
    .free_model = release_all,
    .forward_input = gpu_forward_input,
    .loss = gpu_loss,
    .alloc_zeroed = gpu_alloc_zeroed,
    .release = model_gpu_release,
    .zero = model_gpu_zero,
    .upload = model_gpu_upload,
    .download = model_gpu_download,
    .sgd_update = gpu_sgd,
    .batch_alloc = model_gpu_alloc,
    .batch_put = gpu_batch_put,
};
