/* bench_trainer.c: training throughput of the hv trainer on synthetic data, the C
 * side of compare_pytorch.py. One step = forward, softmax cross-entropy, backward,
 * SGD (momentum 0.9, weight decay 5e-4). Prints one line:
 *   model=<name> batch=<b> threads=<t> images_per_s=<x> ms_per_step=<y>
 * Threads: OpenBLAS reads OPENBLAS_NUM_THREADS (hvrun sets it per rank).
 * Usage: bench_trainer convnet|wrn-10-1|wrn-16-4|mnist-net [batch] [steps] [warmup] [cpu|cuda|cuda-amp]
 * With cuda the model and the batch move to the GPU (model_to_gpu) before the first step;
 * model_loss returns the host sum, so every step ends synchronised with the device.
 * cuda-amp adds mixed precision as training uses it: the loss scaled by a GradScaler,
 * the gradients unscaled and checked, the step skipped on inf/NaN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grad_scaler.h"
#include "model_gpu.h"
#include "models.h"
#include "optim.h"
#include "rng.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(getenv("HV_BENCH_CPU_TIME") ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s convnet|wrn-10-1|wrn-16-4|mnist-net [batch] [steps] [warmup]\n",
            argv[0]);
    return 2;
  }
  const char *name = argv[1];
  int batch = argc > 2 ? atoi(argv[2]) : 0, steps = argc > 3 ? atoi(argv[3]) : 20,
      warmup = argc > 4 ? atoi(argv[4]) : 3;
  const int amp = argc > 5 && !strcmp(argv[5], "cuda-amp");
  const int on_gpu = amp || (argc > 5 && !strcmp(argv[5], "cuda"));
  char err[256];
  model_t *m = NULL;
  if (!strcmp(name, "convnet")) {
    if (!batch) batch = 100;
    m = model_convnet_create(10, 1, batch, 1, err, sizeof err);
  } else if (!strcmp(name, "mnist-net")) {
    if (!batch) batch = 100;
    m = model_mnist_net_create(32, 5, 128, batch, 1, err, sizeof err);
  } else if (!strncmp(name, "wrn-", 4)) {
    int depth = 0, widen = 0;
    if (sscanf(name, "wrn-%d-%d", &depth, &widen) != 2) {
      fprintf(stderr, "bad model name %s\n", name);
      return 2;
    }
    if (!batch) batch = 64;
    m = model_wrn_create(depth, widen, 10, 0, 3, 32, 32, batch, 1, err, sizeof err);
  } else {
    fprintf(stderr, "unknown model %s\n", name);
    return 2;
  }
  if (!m) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  const size_t in = (size_t)batch * m->in_c * m->in_h * m->in_w;
  real_t *x = malloc(in * sizeof *x);
  uint8_t *y = malloc((size_t)batch);
  rng_t r;
  rng_seed(&r, 3);
  for (size_t i = 0; i < in; i++) x[i] = (real_t)rng_normal(&r);
  for (int i = 0; i < batch; i++) y[i] = (uint8_t)rng_below(&r, 10);
  real_t *x_in = x;
  if (on_gpu) {
    void *dev = NULL;
    if (model_to_gpu(m) != 0 || (amp && model_gpu_enable_amp(m) != 0) || model_gpu_alloc(&dev, in * sizeof *x) != 0 ||
        model_gpu_upload(dev, x, in * sizeof *x) != 0) {
      fprintf(stderr, "cuda: %s\n", m->err[0] ? m->err : "cannot move the model or batch");
      return 1;
    }
    x_in = dev;
  }
  sgd_t opt;
  sgd_init(&opt, m, 0.01, 0.9, 5e-4, 0, err, sizeof err);
  grad_scaler_t scaler;
  grad_scaler_init(&scaler);
  double t0 = 0, loss = 0;
  int skipped = 0;
  for (int s = 0; s < warmup + steps; s++) {
    if (s == warmup) t0 = now();
    if (!model_forward(m, x_in, batch, 1)) {
      fprintf(stderr, "forward: %s\n", m->err);
      return 1;
    }
    loss = model_loss(m, y, (real_t)((amp ? scaler.scale : 1.0f) / batch), NULL) / batch;
    model_zero_grad(m);
    model_backward(m, NULL, NULL);
    int found_inf = 0;
    if (amp) {
      if (model_gpu_unscale(m, (float)(1.0 / (double)scaler.scale), &found_inf)) {
        fprintf(stderr, "%s\n", m->err);
        return 1;
      }
      grad_scaler_update(&scaler, found_inf);
      skipped += found_inf;
    }
    if (!found_inf) sgd_step(&opt, m);
  }
  if (m->failed) {
    fprintf(stderr, "%s\n", m->err);
    return 1;
  }
  const double dt = now() - t0;
  if (getenv("HV_BENCH_PROFILE")) {
    /* Per-layer times of one more step, running the layers by hand as model.c does (on
     * the GPU each layer between two device synchronisations). */
    double *tf = calloc((size_t)m->n_layers, sizeof(double)), *tb = calloc((size_t)m->n_layers, sizeof(double));
    const real_t *first_in = amp ? model_gpu_amp_input(m, x_in, batch) : x_in;
    for (int rep = 0; rep < 3; rep++) {
      m->input = first_in;
      m->batch = batch;
      for (int i = 0; i < m->n_layers; i++) {
        if (on_gpu) model_gpu_sync();
        double a = now();
        m->layers[i].ops->forward(&m->layers[i], m, 1);
        if (on_gpu) model_gpu_sync();
        tf[i] += now() - a;
      }
      model_loss(m, y, (real_t)1.0 / batch, NULL);
      for (int i = m->n_layers - 1; i >= 0; i--) {
        if (on_gpu) model_gpu_sync();
        double a = now();
        m->layers[i].ops->backward(&m->layers[i], m);
        if (on_gpu) model_gpu_sync();
        tb[i] += now() - a;
      }
    }
    for (int i = 0; i < m->n_layers; i++)
      fprintf(stderr, "%-28s %-14s fwd %7.2f ms bwd %7.2f ms\n", m->layers[i].name,
              layer_kind_name(m->layers[i].kind), 1e3 * tf[i] / 3, 1e3 * tb[i] / 3);
    free(tf);
    free(tb);
  }
  const char *threads = getenv("OPENBLAS_NUM_THREADS");
  printf("model=%s device=%s%s batch=%d threads=%s images_per_s=%.1f ms_per_step=%.2f loss=%.4f skipped=%d\n",
         name, on_gpu ? "cuda" : "cpu", amp ? " amp=1" : "", batch, threads ? threads : "default", steps * batch / dt,
         1e3 * dt / steps, loss, skipped);
  sgd_free(&opt);
  if (on_gpu) model_gpu_release(x_in);
  model_free(m);
  free(x);
  free(y);
  return 0;
}
