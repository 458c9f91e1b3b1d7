/* batchnorm_sync.c: SyncBatchNorm on the CPU (batchnorm_sync.h). The local sums are
 * plain double sums per channel (images in order, positions in order); the processes'
 * sums are added by the caller's reduce, so the result equals one process's over all
 * images up to the association of those sums. Three reductions per layer and step,
 * each of O(C) doubles, as torch.nn.SyncBatchNorm (which allreduces mean and invstd
 * with counts forward, sum_dy and sum_dy_xmu backward):
 *   forward 1: sum x per channel, the value count, the processes with one image;
 *   forward 2: sum (x - fmean) and (x - fmean)^2 around the global mean (two passes, as
 *              batchnorm.c, so the variance does not cancel);
 *   backward: sum dy, sum (x - fmean) * dy per channel and the count.
 * Element (i, ch, j) of a block-B layout is at ((i * C/B + ch/B) * HW + j) * B + ch%B;
 * NCHW is B = 1. */
#include "batchnorm_sync.h"

#include <math.h>
#include <string.h>

size_t batchnorm_sync_scratch(int c) { return 5 * (size_t)c + 2; }

/* Per channel: a[ch] += sum (x - shift[ch]) and, when b, b[ch] += sum (x - shift)^2
 * (square) or sum (x - shift) * q. shift may be NULL (0). */
static void channel_sums(int n, int c, int hw, int block, const real_t *x, const real_t *shift, const real_t *q,
                         int square, double *a, double *b) {
  const int blocks = c / block;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < blocks; k++) {
      const size_t row = ((size_t)i * blocks + k) * hw * block;
      for (int j = 0; j < hw; j++)
        for (int l = 0; l < block; l++) {
          const int ch = k * block + l;
          const size_t at = row + (size_t)j * block + l;
          const double d = (double)x[at] - (shift ? shift[ch] : 0);
          a[ch] += d;
          if (b) b[ch] += square ? d * d : d * q[at];
        }
    }
}

int batchnorm_forward_train_sync(int n, int c, int hw, int block, const real_t *x, const real_t *gamma,
                                 const real_t *beta, real_t eps, real_t momentum, real_t *running_mean,
                                 real_t *running_var, real_t *save_mean, real_t *save_invstd, real_t *y,
                                 double *scratch, batchnorm_reduce_fn reduce, void *ctx, int *ranks_with_one) {
  double *stats = scratch, *dev = scratch + c + 2, *ca = dev + 2 * (size_t)c, *cb = ca + c;
  memset(stats, 0, sizeof(double) * ((size_t)c + 2));
  channel_sums(n, c, hw, block, x, NULL, NULL, 0, stats, NULL);
  stats[c] = (double)n * hw;
  stats[c + 1] = n < 2; /* a process with one image: every process must learn it */
  if (reduce(ctx, "stats", stats, (size_t)c + 2)) return -1;
  if (stats[c + 1] > 0) {
    if (ranks_with_one) *ranks_with_one = (int)stats[c + 1];
    return -2;
  }
  const double m = stats[c];
  for (int ch = 0; ch < c; ch++) save_mean[ch] = (real_t)(stats[ch] / m); /* the float mean, as batchnorm.c */
  memset(dev, 0, sizeof(double) * 2 * (size_t)c);
  channel_sums(n, c, hw, block, x, save_mean, NULL, 1, dev, dev + c);
  if (reduce(ctx, "var", dev, 2 * (size_t)c)) return -1;
  for (int ch = 0; ch < c; ch++) {
    const double mean = stats[ch] / m, delta = dev[ch] / m; /* = mean - fmean, up to rounding */
    double ss = dev[c + ch] - m * delta * delta;
    if (ss < 0) ss = 0;
    const double var = ss / m, invstd = 1.0 / sqrt(var + eps);
    save_invstd[ch] = (real_t)invstd;
    if (running_mean) {
      running_mean[ch] = (real_t)((1 - momentum) * running_mean[ch] + momentum * mean);
      const double unbiased = m > 1 ? ss / (m - 1) : var;
      running_var[ch] = (real_t)((1 - momentum) * running_var[ch] + momentum * unbiased);
    }
    ca[ch] = (real_t)(gamma[ch] * invstd);
    cb[ch] = (real_t)(beta[ch] - mean * gamma[ch] * invstd);
  }
  const int blocks = c / block;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < blocks; k++) {
      const size_t row = ((size_t)i * blocks + k) * hw * block;
      for (int j = 0; j < hw; j++)
        for (int l = 0; l < block; l++) {
          const int ch = k * block + l;
          const size_t at = row + (size_t)j * block + l;
          y[at] = (real_t)ca[ch] * x[at] + (real_t)cb[ch];
        }
    }
  return 0;
}

int batchnorm_backward_sync(int n, int c, int hw, int block, const real_t *x, const real_t *dy,
                            const real_t *gamma, const real_t *save_mean, const real_t *save_invstd, real_t *dx,
                            int dx_write, real_t *dgamma, real_t *dbeta, double *scratch, batchnorm_reduce_fn reduce,
                            void *ctx) {
  double *g = scratch, *ca = g + 2 * (size_t)c + 1, *cb = ca + c, *cc = cb + c;
  memset(g, 0, sizeof(double) * (2 * (size_t)c + 1));
  /* sum dy and sum (x - fmean) * dy; save_mean holds the float mean fmean. */
  channel_sums(n, c, hw, block, dy, NULL, NULL, 0, g, NULL);
  {
    double *unused = ca; /* channel_sums wants an a[] for the (x - fmean) sums */
    memset(unused, 0, sizeof(double) * (size_t)c);
    channel_sums(n, c, hw, block, x, save_mean, dy, 0, unused, g + c);
  }
  /* This process's gamma/beta gradients, before the reduction (DDP averages them). */
  for (int ch = 0; ch < c; ch++) {
    dgamma[ch] += (real_t)(g[c + ch] * save_invstd[ch]);
    dbeta[ch] += (real_t)g[ch];
  }
  if (!dx) return 0;
  g[2 * c] = (double)n * hw;
  if (reduce(ctx, "grad", g, 2 * (size_t)c + 1)) return -1;
  const double m = g[2 * c];
  for (int ch = 0; ch < c; ch++) {
    /* dx = scale * (dy - sum dy / M - xhat * sum(dy * xhat) / M), xhat = (x - mean) * invstd */
    const double invstd = save_invstd[ch], scale = gamma[ch] * invstd;
    const double k1 = g[ch] / m, k2 = g[c + ch] * invstd * invstd / m;
    ca[ch] = (real_t)scale;
    cb[ch] = (real_t)(-scale * k2);
    cc[ch] = (real_t)(-scale * k1);
  }
  const int blocks = c / block;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < blocks; k++) {
      const size_t row = ((size_t)i * blocks + k) * hw * block;
      for (int j = 0; j < hw; j++)
        for (int l = 0; l < block; l++) {
          const int ch = k * block + l;
          const size_t at = row + (size_t)j * block + l;
          const real_t v = (real_t)ca[ch] * dy[at] + (real_t)cb[ch] * (x[at] - save_mean[ch]) + (real_t)cc[ch];
          dx[at] = dx_write ? v : dx[at] + v;
        }
    }
  return 0;
}
