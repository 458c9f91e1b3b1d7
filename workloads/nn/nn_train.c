/* nn_train.c: the training loop of one net and its evaluation (see nn_train.h).
 * The loop is the study's PyTorch loop written out: for each epoch, shuffle, then per
 * batch zero_grad / forward / mean cross-entropy / backward / SGD step; the epoch loss
 * is the mean over images. Batches are gathered from pre-normalised rows. */
#include "nn_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models.h"
#include "optim.h"
#include "rng.h"

/* Evaluation runs up to this many images per forward: fewer calls than the training
 * batch, small enough that the largest nets of the search space still fit. */
#define NN_EVAL_BATCH 50

/* torch.optim.SGD's momentum step (no weight decay, no Nesterov: the study's
 * optimiser), in the same operation order as kernels/sgd.c so the numbers are the
 * same, fused with clearing the gradient for the next step. Backward accumulates into
 * m->grads, so they must be zero before each step; clearing them here while they are
 * in cache saves the separate pass of model_zero_grad over every parameter, which at
 * batch 10 costs as much as a GEMM. */
static void sgd_step_and_zero(sgd_t *o, model_t *m) {
  const real_t lr = (real_t)o->lr, mom = (real_t)o->momentum;
  real_t *restrict p = m->params, *restrict g = m->grads, *restrict buf = o->momentum_buf;
  const size_t n = m->n_params;
  if (mom == 0 || !buf) {
    for (size_t i = 0; i < n; ++i) {
      p[i] = p[i] - lr * g[i];
      g[i] = 0;
    }
  } else if (!o->has_buf) {
    for (size_t i = 0; i < n; ++i) {
      buf[i] = g[i];
      p[i] = p[i] - lr * g[i];
      g[i] = 0;
    }
    o->has_buf = 1;
  } else {
    for (size_t i = 0; i < n; ++i) {
      const real_t b = mom * buf[i] + g[i];
      buf[i] = b;
      p[i] = p[i] - lr * b;
      g[i] = 0;
    }
  }
  o->steps++;
}

static int max_batch_of(int batch) { return batch > NN_EVAL_BATCH ? batch : NN_EVAL_BATCH; }

static void gather(const nn_images_t *d, const int *idx, int n, float *x, uint8_t *y) {
  const size_t row = (size_t)d->pixels;
  for (int i = 0; i < n; ++i) {
    const int k = idx ? idx[i] : i;
    memcpy(x + (size_t)i * row, d->x + (size_t)k * row, sizeof(float) * row);
    if (y) y[i] = d->y[k];
  }
}

int nn_train(const nn_images_t *d, const int *idx, int n, const nn_hparams_t *hp,
             const nn_train_opts_t *o, uint64_t seed, model_t **out, int *epochs, char *err,
             size_t errlen) {
  *out = NULL;
  *epochs = 0;
  if (n < 1) {
    snprintf(err, errlen, "no training images");
    return -1;
  }
  model_t *m = model_mnist_net_create(hp->n_conv, hp->kernel, hp->n_hidden,
                                      max_batch_of(o->batch), nn_seed_derive(seed, 1), err,
                                      errlen);
  if (!m) return -1;
  sgd_t opt;
  if (sgd_init(&opt, m, hp->lr, hp->momentum, 0.0, 0, err, errlen) != 0) {
    model_free(m);
    return -1;
  }
  int *order = malloc(sizeof(int) * (size_t)n);
  float *x = malloc(sizeof(float) * (size_t)o->batch * (size_t)d->pixels);
  uint8_t *y = malloc((size_t)o->batch);
  if (!order || !x || !y) {
    snprintf(err, errlen, "out of memory for a batch of %d", o->batch);
    free(order), free(x), free(y);
    sgd_free(&opt);
    model_free(m);
    return -1;
  }
  memcpy(order, idx, sizeof(int) * (size_t)n);
  rng_t r;
  rng_seed(&r, nn_seed_derive(seed, 2));
  double prev = INFINITY;
  int e = 0;
  model_zero_grad(m); /* once: sgd_step_and_zero keeps them zero between steps */
  while (e < o->max_epochs) {
    rng_shuffle(&r, order, n);
    double loss = 0.0;
    for (int i = 0; i < n; i += o->batch) {
      const int b = n - i < o->batch ? n - i : o->batch;
      gather(d, order + i, b, x, y);
      model_forward(m, x, b, 1);
      loss += model_loss(m, y, (real_t)(1.0 / b), NULL);
      model_backward(m, NULL, NULL);
      sgd_step_and_zero(&opt, m);
      if (o->poll) o->poll(o->poll_ctx);
    }
    loss /= n;
    ++e;
    /* The study's rule: stop once an epoch fails to cut the loss below tolerance x
     * the previous one (a diverged, NaN loss stops too). */
    if (!(loss < o->tolerance * prev)) break;
    prev = loss;
  }
  free(order);
  free(x);
  free(y);
  sgd_free(&opt);
  *out = m;
  *epochs = e;
  return 0;
}

static void softmax_rows(const real_t *logits, int n, float *prob) {
  for (int i = 0; i < n; ++i) {
    const real_t *z = logits + (size_t)i * 10;
    double mx = z[0], s = 0.0, e[10];
    for (int c = 1; c < 10; ++c) mx = z[c] > mx ? z[c] : mx;
    for (int c = 0; c < 10; ++c) s += (e[c] = exp((double)z[c] - mx));
    for (int c = 0; c < 10; ++c) {
      /* A NaN model (diverged lr) gives NaN rows: report them as uniform. */
      const double p = e[c] / s;
      prob[(size_t)i * 10 + c] = isfinite(p) ? (float)p : 0.1f;
    }
  }
}

int nn_argmax10(const float *p) {
  int best = 0;
  for (int c = 1; c < 10; ++c)
    if (p[c] > p[best]) best = c;
  return best;
}

int nn_predict(model_t *m, const nn_images_t *d, const int *idx, int n, float *prob,
               nn_poll_fn poll, void *poll_ctx) {
  const int mb = m->max_batch;
  float *x = malloc(sizeof(float) * (size_t)mb * (size_t)d->pixels);
  if (!x) return -1;
  int wrong = 0;
  for (int i = 0; i < n; i += mb) {
    const int b = n - i < mb ? n - i : mb;
    if (idx)
      gather(d, idx + i, b, x, NULL);
    else
      memcpy(x, d->x + (size_t)i * d->pixels, sizeof(float) * (size_t)b * d->pixels);
    softmax_rows(model_forward(m, x, b, 0), b, prob + (size_t)i * 10);
    for (int j = 0; j < b; ++j) {
      const int k = idx ? idx[i + j] : i + j;
      wrong += nn_argmax10(prob + (size_t)(i + j) * 10) != d->y[k];
    }
    if (poll) poll(poll_ctx);
  }
  free(x);
  return wrong;
}

void nn_predict_raw(model_t *m, const float *x, int n, float *prob, nn_poll_fn poll,
                    void *poll_ctx) {
  const int mb = m->max_batch;
  for (int i = 0; i < n; i += mb) {
    const int b = n - i < mb ? n - i : mb;
    softmax_rows(model_forward(m, x + (size_t)i * 784, b, 0), b, prob + (size_t)i * 10);
    if (poll) poll(poll_ctx);
  }
}
