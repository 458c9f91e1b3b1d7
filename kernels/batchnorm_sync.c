/* batchnorm_sync.c: SyncBatchNorm on the CPU (batchnorm_sync.h). The local sums are
 * batchnorm_rows.h's row sums (float lanes per (image, channel) row, the rows added in
 * double in image order), the very sums of batchnorm.c and batchnorm_blocked.c, so a
 * row sums to the same bits whichever process holds its image; the processes' sums
 * are added by the caller's reduce, so the result equals one process's BatchNorm over
 * all images up to the association of those double sums over the processes: on
 * WRN-10-1 in float32 the same forward outputs to the bit (tests/trainer/test_sync_bn.c;
 * issue #24: scalar double sums here, against BatchNorm's float lanes, missed them by
 * 1.4e-6). Three reductions per layer and step, each of O(C) doubles, as
 * torch.nn.SyncBatchNorm (which allreduces mean and invstd with counts forward, sum_dy
 * and sum_dy_xmu backward):
 *   forward 1: sum x per channel, the value count, the processes with one image;
 *   forward 2: sum (x - fmean) and (x - fmean)^2 around the global mean (two passes, as
 *              batchnorm.c, so the variance does not cancel);
 *   backward: sum dy, sum (x - fmean) * dy per channel and the count.
 * The coefficients and element-wise passes are batchnorm.c's, operation for operation.
 * Element (i, ch, j) of a block-B layout is at ((i * C/B + ch/B) * HW + j) * B + ch%B;
 * NCHW is B = 1 (a row of one channel), else B = CHANNEL_BLOCK. */
#include "batchnorm_sync.h"

#include <math.h>
#include <string.h>

#include "batchnorm_rows.h"

size_t batchnorm_sync_scratch(int c) { return 5 * (size_t)c + 2; }

/* Per channel: a[ch] += sum (x - shift[ch]) and, when b, b[ch] += sum (x - shift)^2
 * (square) or sum (x - shift) * q, row by row in image order. shift may be NULL (0). */
static void channel_sums(int n, int c, int hw, int block, const real_t *x, const real_t *shift, const real_t *q,
                         int square, double *a, double *b) {
  const int blocks = c / block;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < blocks; k++) {
      const size_t row = ((size_t)i * blocks + k) * hw * block;
      const int ch = k * block;
      if (block == 1) {
        double second = 0;
        a[ch] += batchnorm_row_sum(x + row, hw, shift ? shift[ch] : 0, q ? q + row : NULL, square, &second);
        if (b) b[ch] += second;
      } else {
        double sa[CHANNEL_BLOCK], sb[CHANNEL_BLOCK];
        batchnorm_block_row_sums(x + row, hw, shift ? shift + ch : NULL, q ? q + row : NULL, square, sa, sb);
        for (int l = 0; l < CHANNEL_BLOCK; l++) {
          a[ch + l] += sa[l];
          if (b) b[ch + l] += sb[l];
        }
      }
    }
}

/* Element-wise, with per-channel coefficients held as doubles of float values:
 * out = ca * u + cb * (v - shift) + cc (the cb term only when v), written, or added
 * unless write. In real_t, in batchnorm.c's order of operations. */
static void affine_rows(int n, int c, int hw, int block, const double *ca, const real_t *u, const double *cb,
                        const real_t *v, const real_t *shift, const double *cc, real_t *out, int write) {
  const int blocks = c / block;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < blocks; k++) {
      const size_t row = ((size_t)i * blocks + k) * hw * block;
      for (int j = 0; j < hw; j++)
        for (int l = 0; l < block; l++) {
          const int ch = k * block + l;
          const size_t at = row + (size_t)j * block + l;
          const real_t t = v ? (real_t)ca[ch] * u[at] + (real_t)cb[ch] * (v[at] - shift[ch]) + (real_t)cc[ch]
                             : (real_t)ca[ch] * u[at] + (real_t)cc[ch];
          out[at] = write ? t : out[at] + t;
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
  affine_rows(n, c, hw, block, ca, x, NULL, NULL, NULL, cb, y, 1);
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
  affine_rows(n, c, hw, block, ca, dy, cb, x, save_mean, cc, dx, dx_write);
  return 0;
}
