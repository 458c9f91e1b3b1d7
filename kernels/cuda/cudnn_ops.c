/* cudnn_ops.c: convolution, batch norm, pooling, ReLU and residual add through cuDNN's
 * calls (cudnn_ops.h). Descriptors are set for each call's shape (cheap host work).
 * Convolution algorithms are cuDNN's heuristic choice (the _v7 queries), PyTorch's
 * default, the first whose workspace fits under a cap; HV_CUDNN_BENCHMARK=1 times them
 * with cuDNN's Find calls instead, as PyTorch's cudnn.benchmark mode does (on an H100,
 * WRN-16-4 at batch 512 in float32 trained no faster: 19.6k against 19.9k images/s).
 * A layer keeps the algorithms of its last few shapes (training batch, evaluation
 * batch, the last partial batch), so alternating costs no new query. */
#include "cudnn_ops.h"

#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Workspace a convolution algorithm may ask for. */
#define WORKSPACE_CAP ((size_t)1 << 30)

struct cudnn_ctx {
  cudnnHandle_t handle;
  /* float32 NCHW, or float16 NHWC (cudnn_ctx_set_half), of every data tensor */
  cudnnDataType_t dtype;
  cudnnTensorFormat_t format;
  cudnnTensorDescriptor_t x, y, bias, bn;
  cudnnPoolingDescriptor_t pool;
  cudnnActivationDescriptor_t relu;
  cudnnOpTensorDescriptor_t add;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  conv2d_shape_t shape; /* that the descriptors and the algorithms below hold */
  int have_algos;
  cudnnConvolutionFwdAlgo_t fwd;
  cudnnConvolutionBwdDataAlgo_t bwd_data;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter;
  struct algo_choice {
    conv2d_shape_t shape;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
  } known[4];
  int n_known, next_known;
  void *workspace, *dx_scratch, *reserve;
  size_t workspace_bytes, dx_scratch_bytes, reserve_bytes; /* reserve: batch norm's, forward to backward */
  char err[256];
};

const char *cudnn_ctx_error(const cudnn_ctx_t *c) { return c ? c->err : "no cuDNN context"; }

static int failed(cudnn_ctx_t *c, const char *what, const char *why) {
  snprintf(c->err, sizeof c->err, "%.170s: %.80s", what, why); /* the call's text is long */
  return -1;
}

#define CUDNN_TRY(c, call)                                                     \
  do {                                                                         \
    cudnnStatus_t st_ = (call);                                                \
    if (st_ != CUDNN_STATUS_SUCCESS) return failed((c), #call, cudnnGetErrorString(st_)); \
  } while (0)

cudnn_ctx_t *cudnn_ctx_create(void) {
  cudnn_ctx_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  if (cudnnCreate(&c->handle) != CUDNN_STATUS_SUCCESS) {
    free(c);
    return NULL;
  }
  int ok = cudnnCreateTensorDescriptor(&c->x) == CUDNN_STATUS_SUCCESS &&
           cudnnCreateTensorDescriptor(&c->y) == CUDNN_STATUS_SUCCESS &&
           cudnnCreateTensorDescriptor(&c->bias) == CUDNN_STATUS_SUCCESS &&
           cudnnCreateTensorDescriptor(&c->bn) == CUDNN_STATUS_SUCCESS &&
           cudnnCreateFilterDescriptor(&c->w) == CUDNN_STATUS_SUCCESS &&
           cudnnCreateConvolutionDescriptor(&c->conv) == CUDNN_STATUS_SUCCESS &&
           cudnnCreatePoolingDescriptor(&c->pool) == CUDNN_STATUS_SUCCESS &&
           cudnnCreateActivationDescriptor(&c->relu) == CUDNN_STATUS_SUCCESS &&
           cudnnCreateOpTensorDescriptor(&c->add) == CUDNN_STATUS_SUCCESS &&
           cudnnSetActivationDescriptor(c->relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0) ==
               CUDNN_STATUS_SUCCESS &&
           cudnnSetOpTensorDescriptor(c->add, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN) ==
               CUDNN_STATUS_SUCCESS;
  if (!ok) {
    cudnn_ctx_free(c);
    return NULL;
  }
  c->dtype = CUDNN_DATA_FLOAT;
  c->format = CUDNN_TENSOR_NCHW;
  return c;
}

void cudnn_ctx_set_half(cudnn_ctx_t *c, int half) {
  c->dtype = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  c->format = half ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  c->have_algos = 0;
  c->n_known = c->next_known = 0;
}

void cudnn_ctx_free(cudnn_ctx_t *c) {
  if (!c) return;
  if (c->x) cudnnDestroyTensorDescriptor(c->x);
  if (c->y) cudnnDestroyTensorDescriptor(c->y);
  if (c->bias) cudnnDestroyTensorDescriptor(c->bias);
  if (c->bn) cudnnDestroyTensorDescriptor(c->bn);
  if (c->w) cudnnDestroyFilterDescriptor(c->w);
  if (c->conv) cudnnDestroyConvolutionDescriptor(c->conv);
  if (c->pool) cudnnDestroyPoolingDescriptor(c->pool);
  if (c->relu) cudnnDestroyActivationDescriptor(c->relu);
  if (c->add) cudnnDestroyOpTensorDescriptor(c->add);
  cudaFree(c->workspace);
  cudaFree(c->dx_scratch);
  cudaFree(c->reserve);
  cudnnDestroy(c->handle);
  free(c);
}

static int grow(cudnn_ctx_t *c, void **buf, size_t *have, size_t bytes) {
  if (bytes <= *have) return 0;
  cudaFree(*buf);
  *buf = NULL;
  *have = 0;
  cudaError_t rc = cudaMalloc(buf, bytes);
  if (rc != cudaSuccess) return failed(c, "cudaMalloc of cuDNN scratch", cudaGetErrorString(rc));
  *have = bytes;
  return 0;
}

static int same_shape(const conv2d_shape_t *a, const conv2d_shape_t *b) {
  return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w && a->k == b->k && a->kh == b->kh &&
         a->kw == b->kw && a->stride == b->stride && a->pad == b->pad;
}

/* A ranked algorithm we may run: it ran (or would run) for this shape, within the
 * workspace cap, and never with FP32 data converted to FP16 (a math type the search
 * may report, that this file's FP32 contract rules out). */
static int usable(cudnnStatus_t status, size_t memory, cudnnMathType_t math) {
  return status == CUDNN_STATUS_SUCCESS && memory <= WORKSPACE_CAP && math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/* Descriptors for the shape, and (once per shape) the algorithms. */
static int conv_setup(cudnn_ctx_t *c, const conv2d_shape_t *s, void *stream) {
  CUDNN_TRY(c, cudnnSetStream(c->handle, (cudaStream_t)stream));
  if (c->have_algos && same_shape(&c->shape, s)) return 0;
  CUDNN_TRY(c, cudnnSetTensor4dDescriptor(c->x, c->format, c->dtype, s->n, s->c, s->h, s->w));
  CUDNN_TRY(c, cudnnSetTensor4dDescriptor(c->y, c->format, c->dtype, s->n, s->k, s->ho, s->wo));
  CUDNN_TRY(c, cudnnSetTensor4dDescriptor(c->bias, c->format, c->dtype, 1, s->k, 1, 1));
  CUDNN_TRY(c, cudnnSetFilter4dDescriptor(c->w, c->dtype, c->format, s->k, s->c, s->kh, s->kw));
  /* float16 data is multiplied and summed in float32 (cuDNN's pseudo-half). */
  CUDNN_TRY(c, cudnnSetConvolution2dDescriptor(c->conv, s->pad, s->pad, s->stride, s->stride, 1, 1,
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  const char *tf32 = getenv("HV_CUDNN_TF32");
  CUDNN_TRY(c, cudnnSetConvolutionMathType(c->conv, c->dtype == CUDNN_DATA_HALF           ? CUDNN_TENSOR_OP_MATH
                                                    : tf32 && strcmp(tf32, "0") == 0 ? CUDNN_FMA_MATH
                                                                                      : CUDNN_DEFAULT_MATH));
  c->shape = *s;
  for (int k = 0; k < c->n_known; k++)
    if (same_shape(&c->known[k].shape, s)) { /* chosen before; the workspace already fits */
      c->fwd = c->known[k].fwd;
      c->bwd_data = c->known[k].bwd_data;
      c->bwd_filter = c->known[k].bwd_filter;
      c->have_algos = 1;
      return 0;
    }
  /* The Find and _v7 queries take the same arguments and return results ranked the
   * same way (fastest, or most likely fastest, first). */
  const char *bench = getenv("HV_CUDNN_BENCHMARK");
  const int timed = bench && strcmp(bench, "1") == 0;
  enum { ALGOS = 8 };
  int got = 0;
  size_t need = 0, most = 0;
  cudnnConvolutionFwdAlgoPerf_t f[ALGOS];
  CUDNN_TRY(c, (timed ? cudnnFindConvolutionForwardAlgorithm : cudnnGetConvolutionForwardAlgorithm_v7)(
                   c->handle, c->x, c->w, c->conv, c->y, ALGOS, &got, f));
  int i = 0;
  while (i < got && !usable(f[i].status, f[i].memory, f[i].mathType)) i++;
  if (i == got) return failed(c, "cuDNN forward convolution", "no algorithm for this shape");
  c->fwd = f[i].algo;
  CUDNN_TRY(c, cudnnGetConvolutionForwardWorkspaceSize(c->handle, c->x, c->w, c->conv, c->y, c->fwd, &need));
  most = need;
  cudnnConvolutionBwdDataAlgoPerf_t d[ALGOS];
  CUDNN_TRY(c, (timed ? cudnnFindConvolutionBackwardDataAlgorithm : cudnnGetConvolutionBackwardDataAlgorithm_v7)(
                   c->handle, c->w, c->y, c->conv, c->x, ALGOS, &got, d));
  for (i = 0; i < got && !usable(d[i].status, d[i].memory, d[i].mathType);) i++;
  if (i == got) return failed(c, "cuDNN backward-data convolution", "no algorithm for this shape");
  c->bwd_data = d[i].algo;
  CUDNN_TRY(c, cudnnGetConvolutionBackwardDataWorkspaceSize(c->handle, c->w, c->y, c->conv, c->x, c->bwd_data, &need));
  if (need > most) most = need;
  cudnnConvolutionBwdFilterAlgoPerf_t w[ALGOS];
  CUDNN_TRY(c, (timed ? cudnnFindConvolutionBackwardFilterAlgorithm : cudnnGetConvolutionBackwardFilterAlgorithm_v7)(
                   c->handle, c->x, c->y, c->conv, c->w, ALGOS, &got, w));
  for (i = 0; i < got && !usable(w[i].status, w[i].memory, w[i].mathType);) i++;
  if (i == got) return failed(c, "cuDNN backward-filter convolution", "no algorithm for this shape");
  c->bwd_filter = w[i].algo;
  CUDNN_TRY(c, cudnnGetConvolutionBackwardFilterWorkspaceSize(c->handle, c->x, c->y, c->conv, c->w, c->bwd_filter,
                                                              &need));
  if (need > most) most = need;
  if (grow(c, &c->workspace, &c->workspace_bytes, most)) return -1;
  c->known[c->next_known] = (struct algo_choice){*s, c->fwd, c->bwd_data, c->bwd_filter};
  c->next_known = (c->next_known + 1) % 4;
  if (c->n_known < 4) c->n_known++;
  c->have_algos = 1;
  return 0;
}

int cudnn_conv2d_forward(cudnn_ctx_t *c, const conv2d_shape_t *s, const float *x, const float *w, const float *b,
                         float *y, void *stream) {
  if (conv_setup(c, s, stream)) return -1;
  const float one = 1, zero = 0;
  CUDNN_TRY(c, cudnnConvolutionForward(c->handle, &one, c->x, x, c->w, w, c->conv, c->fwd, c->workspace,
                                       c->workspace_bytes, &zero, c->y, y));
  if (b) CUDNN_TRY(c, cudnnAddTensor(c->handle, &one, c->bias, b, &one, c->y, y));
  return 0;
}

int cudnn_conv2d_backward(cudnn_ctx_t *c, const conv2d_shape_t *s, const float *x, const float *w, const float *dy,
                          float *dx, float *dw, float *db, void *stream) {
  if (conv_setup(c, s, stream)) return -1;
  const float one = 1; /* alpha 1, beta 1: accumulate, as the CPU layers do */
  CUDNN_TRY(c, cudnnConvolutionBackwardFilter(c->handle, &one, c->x, x, c->y, dy, c->conv, c->bwd_filter,
                                              c->workspace, c->workspace_bytes, &one, c->w, dw));
  if (db) CUDNN_TRY(c, cudnnConvolutionBackwardBias(c->handle, &one, c->y, dy, &one, c->bias, db));
  if (dx)
    CUDNN_TRY(c, cudnnConvolutionBackwardData(c->handle, &one, c->w, w, c->y, dy, c->conv, c->bwd_data, c->workspace,
                                              c->workspace_bytes, &one, c->x, dx));
  return 0;
}

/* Descriptors of a batch norm over (n, c, hw): the data as (n, c, hw, 1), the
 * per-channel arrays as cuDNN derives them for spatial mode. */
static int bn_setup(cudnn_ctx_t *c, int n, int ch, int hw, void *stream) {
  CUDNN_TRY(c, cudnnSetStream(c->handle, (cudaStream_t)stream));
  CUDNN_TRY(c, cudnnSetTensor4dDescriptor(c->x, c->format, c->dtype, n, ch, hw, 1));
  CUDNN_TRY(c, cudnnDeriveBNTensorDescriptor(c->bn, c->x, CUDNN_BATCHNORM_SPATIAL));
  c->have_algos = 0; /* the x descriptor no longer holds a convolution's shape */
  return 0;
}

/* Training-mode batch norm runs cuDNN's persistent kernels through the Ex calls (with
 * their workspace, and a reserve kept from forward to backward), as PyTorch does for
 * channels-last and half tensors. Measured on an H100, 512 x 64 x 32 x 32: float16 NHWC
 * forward 3.2 ms through the plain calls, 0.09 ms so; float32 NCHW, WRN-16-4 at batch
 * 512 trained 15% faster (19.8k -> 22.9k images/s). HV_CUDNN_BN_EX=0 and
 * HV_CUDNN_BN_PERSISTENT=0 go back to the plain calls and spatial kernels. */
static int env_on(const char *name) {
  const char *p = getenv(name);
  return !p || strcmp(p, "0") != 0;
}

static cudnnBatchNormMode_t train_mode(void) {
  return env_on("HV_CUDNN_BN_PERSISTENT") ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT : CUDNN_BATCHNORM_SPATIAL;
}

static int use_ex(void) { return env_on("HV_CUDNN_BN_EX"); }

static int forward_train_ex(cudnn_ctx_t *c, const float *x, const float *gamma, const float *beta, float eps,
                            float momentum, float *running_mean, float *running_var, float *save_mean,
                            float *save_invstd, float *y) {
  const float one = 1, zero = 0;
  const cudnnBatchNormMode_t mode = train_mode();
  size_t ws = 0, rs = 0;
  CUDNN_TRY(c, cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(c->handle, mode, CUDNN_BATCHNORM_OPS_BN, c->x,
                                                                        NULL, c->x, c->bn, NULL, &ws));
  CUDNN_TRY(c, cudnnGetBatchNormalizationTrainingExReserveSpaceSize(c->handle, mode, CUDNN_BATCHNORM_OPS_BN, NULL,
                                                                    c->x, &rs));
  if (grow(c, &c->workspace, &c->workspace_bytes, ws) || grow(c, &c->reserve, &c->reserve_bytes, rs)) return -1;
  CUDNN_TRY(c, cudnnBatchNormalizationForwardTrainingEx(
                   c->handle, mode, CUDNN_BATCHNORM_OPS_BN, &one, &zero, c->x, x, NULL, NULL, c->x, y, c->bn, gamma,
                   beta, momentum, running_mean, running_var, eps, save_mean, save_invstd, NULL, c->workspace,
                   c->workspace_bytes, c->reserve, c->reserve_bytes));
  return 0;
}

static int backward_ex(cudnn_ctx_t *c, const float *x, const float *dy, const float *gamma, const float *save_mean,
                       const float *save_invstd, float eps, float *dx_or_scratch, int accumulate_dx, float *dgamma,
                       float *dbeta) {
  const float one = 1, zero = 0;
  const cudnnBatchNormMode_t mode = train_mode();
  size_t ws = 0;
  CUDNN_TRY(c, cudnnGetBatchNormalizationBackwardExWorkspaceSize(c->handle, mode, CUDNN_BATCHNORM_OPS_BN, c->x, NULL,
                                                                 c->x, NULL, c->x, c->bn, NULL, &ws));
  if (grow(c, &c->workspace, &c->workspace_bytes, ws)) return -1;
  CUDNN_TRY(c, cudnnBatchNormalizationBackwardEx(c->handle, mode, CUDNN_BATCHNORM_OPS_BN, &one,
                                                 accumulate_dx ? &one : &zero, &one, &one, c->x, x, NULL, NULL, c->x,
                                                 dy, NULL, NULL, c->x, dx_or_scratch, c->bn, gamma, NULL, dgamma,
                                                 dbeta, eps, save_mean, save_invstd, NULL, c->workspace,
                                                 c->workspace_bytes, c->reserve, c->reserve_bytes));
  return 0;
}

int cudnn_batchnorm_forward_train(cudnn_ctx_t *c, int n, int ch, int hw, const float *x, const float *gamma,
                                  const float *beta, float eps, float momentum, float *running_mean,
                                  float *running_var, float *save_mean, float *save_invstd, float *y, void *stream) {
  if (bn_setup(c, n, ch, hw, stream)) return -1;
  if (use_ex())
    return forward_train_ex(c, x, gamma, beta, eps, momentum, running_mean, running_var, save_mean, save_invstd, y);
  const float one = 1, zero = 0;
  /* cuDNN's running variance is the unbiased one, as PyTorch's. */
  CUDNN_TRY(c, cudnnBatchNormalizationForwardTraining(c->handle, train_mode(), &one, &zero, c->x, x, c->x, y,
                                                      c->bn, gamma, beta, momentum, running_mean, running_var, eps,
                                                      save_mean, save_invstd));
  return 0;
}

int cudnn_batchnorm_forward_eval(cudnn_ctx_t *c, int n, int ch, int hw, const float *x, const float *gamma,
                                 const float *beta, float eps, const float *running_mean, const float *running_var,
                                 float *y, void *stream) {
  if (bn_setup(c, n, ch, hw, stream)) return -1;
  const float one = 1, zero = 0;
  CUDNN_TRY(c, cudnnBatchNormalizationForwardInference(c->handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, c->x, x, c->x,
                                                       y, c->bn, gamma, beta, running_mean, running_var, eps));
  return 0;
}

int cudnn_batchnorm_backward(cudnn_ctx_t *c, int n, int ch, int hw, const float *x, const float *dy,
                             const float *gamma, const float *save_mean, const float *save_invstd, float eps,
                             float *dx, float *dgamma, float *dbeta, void *stream) {
  if (bn_setup(c, n, ch, hw, stream)) return -1;
  /* cuDNN always writes a dx: without one, into scratch. */
  const float one = 1, zero = 0;
  float *out = dx;
  if (!out) {
    if (grow(c, &c->dx_scratch, &c->dx_scratch_bytes, (size_t)n * ch * hw * sizeof(float))) return -1; /* fits half */
    out = c->dx_scratch;
  }
  if (use_ex()) return backward_ex(c, x, dy, gamma, save_mean, save_invstd, eps, out, dx != NULL, dgamma, dbeta);
  CUDNN_TRY(c, cudnnBatchNormalizationBackward(c->handle, train_mode(), &one, dx ? &one : &zero, &one, &one,
                                               c->x, x, c->x, dy, c->x, out, c->bn, gamma, dgamma, dbeta, eps,
                                               save_mean, save_invstd));
  return 0;
}

/* x and y as (n, c, h, w) and (n, c, ho, wo), and the pooling window. */
static int pool_setup(cudnn_ctx_t *c, int max, int n, int ch, int h, int w, int k, int stride, void *stream) {
  CUDNN_TRY(c, cudnnSetStream(c->handle, (cudaStream_t)stream));
  /* Max: deterministic backward; average: no padding, so excluding it changes nothing. */
  CUDNN_TRY(c, cudnnSetPooling2dDescriptor(c->pool, max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                                        : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                                           CUDNN_NOT_PROPAGATE_NAN, k, k, 0, 0, stride, stride));
  CUDNN_TRY(c, cudnnSetTensor4dDescriptor(c->x, c->format, c->dtype, n, ch, h, w));
  CUDNN_TRY(c, cudnnSetTensor4dDescriptor(c->y, c->format, c->dtype, n, ch, (h - k) / stride + 1,
                                          (w - k) / stride + 1));
  c->have_algos = 0;
  return 0;
}

int cudnn_pool_forward(cudnn_ctx_t *c, int max, int n, int ch, int h, int w, int k, int stride, const float *x,
                       float *y, void *stream) {
  if (pool_setup(c, max, n, ch, h, w, k, stride, stream)) return -1;
  const float one = 1, zero = 0;
  CUDNN_TRY(c, cudnnPoolingForward(c->handle, c->pool, &one, c->x, x, &zero, c->y, y));
  return 0;
}

int cudnn_pool_backward(cudnn_ctx_t *c, int max, int n, int ch, int h, int w, int k, int stride, const float *x,
                        const float *y, const float *dy, float *dx, void *stream) {
  if (pool_setup(c, max, n, ch, h, w, k, stride, stream)) return -1;
  const float one = 1;
  CUDNN_TRY(c, cudnnPoolingBackward(c->handle, c->pool, &one, c->y, y, c->y, dy, c->x, x, &one, c->x, dx));
  return 0;
}

/* count elements as one (1, 1, 1, count) tensor: element-wise ops see no shape. */
static int flat_setup(cudnn_ctx_t *c, size_t count, void *stream) {
  if (count > 0x7fffffff) return failed(c, "cuDNN element-wise op", "more than 2^31 - 1 elements");
  CUDNN_TRY(c, cudnnSetStream(c->handle, (cudaStream_t)stream));
  CUDNN_TRY(c, cudnnSetTensor4dDescriptor(c->x, CUDNN_TENSOR_NCHW, c->dtype, 1, 1, 1, (int)count));
  c->have_algos = 0;
  return 0;
}

int cudnn_relu_forward(cudnn_ctx_t *c, size_t count, const float *x, float *y, void *stream) {
  if (count == 0) return 0;
  if (flat_setup(c, count, stream)) return -1;
  const float one = 1, zero = 0;
  CUDNN_TRY(c, cudnnActivationForward(c->handle, c->relu, &one, c->x, x, &zero, c->x, y));
  return 0;
}

int cudnn_relu_backward(cudnn_ctx_t *c, size_t count, const float *x, const float *y, const float *dy, float *dx,
                        void *stream) {
  if (count == 0) return 0;
  if (flat_setup(c, count, stream)) return -1;
  const float one = 1;
  CUDNN_TRY(c, cudnnActivationBackward(c->handle, c->relu, &one, c->x, y, c->x, dy, c->x, x, &one, c->x, dx));
  return 0;
}

int cudnn_add(cudnn_ctx_t *c, size_t count, const float *a, const float *b, float *y, void *stream) {
  if (count == 0) return 0;
  if (flat_setup(c, count, stream)) return -1;
  const float one = 1, zero = 0;
  CUDNN_TRY(c, cudnnOpTensor(c->handle, c->add, &one, c->x, a, &one, c->x, b, &zero, c->x, y));
  return 0;
}

int cudnn_accumulate(cudnn_ctx_t *c, size_t count, const float *src, float *dst, void *stream) {
  if (count == 0) return 0;
  if (flat_setup(c, count, stream)) return -1;
  const float one = 1;
  CUDNN_TRY(c, cudnnAddTensor(c->handle, &one, c->x, src, &one, c->x, dst));
  return 0;
}
