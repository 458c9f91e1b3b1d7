/* batchnorm.c: batch norm forward (train/eval) and backward on (N, C, HW) data.
 * Sums over a channel (64*32*32 = 65536 terms in a CIFAR batch) are two-level: each
 * (n, c) row is summed in eight float lanes (batchnorm_rows.h; vectorised, at most
 * HW/8 terms each), and the rows are added in double, so late layers' small variances
 * keep their digits without paying for a scalar double loop.
 * Backward (train) uses the closed form with xhat = (x - mean) * invstd, M = N*HW:
 *   dbeta = sum dy,  dgamma = sum dy*xhat,
 *   dx = gamma * invstd / M * (M*dy - dbeta - xhat*dgamma).
 * The _relu variants run the ReLU after batch norm in the same passes (batchnorm.h):
 * the forward keeps its per-channel coefficients in coef for the backward's mask.
 * Per-row work is compiled for AVX-512 and AVX2 too (simd_clones.h; the same bits). */
#include "batchnorm.h"

#include <math.h>

#include "batchnorm_rows.h"

/* y = a * x + b over the channel's rows, with relu max(0, that) as relu_forward gives it. */
HV_SIMD_CLONES static void normalise_channel(int n, int c, int hw, int ch, const real_t *x, real_t a, real_t b, real_t *y,
                              int relu) {
  for (int i = 0; i < n; i++) {
    const real_t *p = x + ((size_t)i * c + ch) * hw;
    real_t *q = y + ((size_t)i * c + ch) * hw;
    if (relu) {
      for (int j = 0; j < hw; j++) {
        const real_t v = a * p[j] + b;
        q[j] = v > 0 ? v : 0;
      }
    } else {
      for (int j = 0; j < hw; j++) q[j] = a * p[j] + b;
    }
  }
}

static void forward_train(int n, int c, int hw, const real_t *x, const real_t *gamma, const real_t *beta,
                          real_t eps, real_t momentum, real_t *running_mean, real_t *running_var,
                          real_t *save_mean, real_t *save_invstd, real_t *y, real_t *coef) {
  const double m = (double)n * hw;
  /* Channels are independent: one thread per channel keeps results identical for any
   * number of threads. */
#pragma omp parallel for schedule(static) if ((double)n * hw * c > 32768)
  for (int ch = 0; ch < c; ch++) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += batchnorm_row_sum(x + ((size_t)i * c + ch) * hw, hw, 0, NULL, 0, NULL);
    const double mean = sum / m;
    /* Second pass around the mean (not E[x^2] - mean^2, which cancels). The float
     * lanes subtract the float-rounded mean; the sum of deviations corrects for it. */
    const real_t fmean = (real_t)mean;
    double ss = 0, sd = 0;
    for (int i = 0; i < n; i++) {
      double sq;
      sd += batchnorm_row_sum(x + ((size_t)i * c + ch) * hw, hw, fmean, NULL, 1, &sq);
      ss += sq;
    }
    {
      const double delta = sd / m; /* = mean - fmean, up to rounding */
      ss -= m * delta * delta;
      if (ss < 0) ss = 0;
    }
    const double var = ss / m, invstd = 1.0 / sqrt(var + eps);
    save_mean[ch] = (real_t)mean;
    save_invstd[ch] = (real_t)invstd;
    if (running_mean) {
      running_mean[ch] = (real_t)((1 - momentum) * running_mean[ch] + momentum * mean);
      double unbiased = m > 1 ? ss / (m - 1) : var;
      running_var[ch] = (real_t)((1 - momentum) * running_var[ch] + momentum * unbiased);
    }
    const real_t a = (real_t)(gamma[ch] * invstd), b = (real_t)(beta[ch] - mean * gamma[ch] * invstd);
    if (coef) coef[ch] = a, coef[c + ch] = b;
    normalise_channel(n, c, hw, ch, x, a, b, y, coef != NULL);
  }
}

void batchnorm_forward_train(int n, int c, int hw, const real_t *x, const real_t *gamma,
                             const real_t *beta, real_t eps, real_t momentum,
                             real_t *running_mean, real_t *running_var, real_t *save_mean,
                             real_t *save_invstd, real_t *y) {
  forward_train(n, c, hw, x, gamma, beta, eps, momentum, running_mean, running_var, save_mean, save_invstd, y, NULL);
}

void batchnorm_forward_train_relu(int n, int c, int hw, const real_t *x, const real_t *gamma, const real_t *beta,
                                  real_t eps, real_t momentum, real_t *running_mean, real_t *running_var,
                                  real_t *save_mean, real_t *save_invstd, real_t *y, real_t *coef) {
  forward_train(n, c, hw, x, gamma, beta, eps, momentum, running_mean, running_var, save_mean, save_invstd, y, coef);
}

static void forward_eval(int n, int c, int hw, const real_t *x, const real_t *gamma, const real_t *beta, real_t eps,
                         const real_t *running_mean, const real_t *running_var, real_t *save_mean,
                         real_t *save_invstd, real_t *y, real_t *coef) {
#pragma omp parallel for schedule(static) if ((double)n * hw * c > 32768)
  for (int ch = 0; ch < c; ch++) {
    const double invstd = 1.0 / sqrt((double)running_var[ch] + eps);
    save_mean[ch] = running_mean[ch];
    save_invstd[ch] = (real_t)invstd;
    const real_t a = (real_t)(gamma[ch] * invstd),
                 b = (real_t)(beta[ch] - running_mean[ch] * gamma[ch] * invstd);
    if (coef) coef[ch] = a, coef[c + ch] = b;
    normalise_channel(n, c, hw, ch, x, a, b, y, coef != NULL);
  }
}

void batchnorm_forward_eval(int n, int c, int hw, const real_t *x, const real_t *gamma,
                            const real_t *beta, real_t eps, const real_t *running_mean,
                            const real_t *running_var, real_t *save_mean, real_t *save_invstd,
                            real_t *y) {
  forward_eval(n, c, hw, x, gamma, beta, eps, running_mean, running_var, save_mean, save_invstd, y, NULL);
}

void batchnorm_forward_eval_relu(int n, int c, int hw, const real_t *x, const real_t *gamma, const real_t *beta,
                                 real_t eps, const real_t *running_mean, const real_t *running_var,
                                 real_t *save_mean, real_t *save_invstd, real_t *y, real_t *coef) {
  forward_eval(n, c, hw, x, gamma, beta, eps, running_mean, running_var, save_mean, save_invstd, y, coef);
}

HV_SIMD_CLONES static void dx_row(int train, int dx_write, int hw, const real_t *p, const real_t *g, real_t *q, double scale,
                   double sdy, double dg, double invstd, double m, real_t fmean);

static void backward(int n, int c, int hw, int train, const real_t *x, const real_t *dy, const real_t *gamma,
                     const real_t *save_mean, const real_t *save_invstd, real_t *dx, int dx_write, real_t *dgamma,
                     real_t *dbeta, const real_t *coef) {
  const double m = (double)n * hw;
#pragma omp parallel for schedule(static) if ((double)n * hw * c > 32768)
  for (int ch = 0; ch < c; ch++) {
    const double mean = save_mean[ch], invstd = save_invstd[ch];
    double sdy = 0, sdyx = 0;
    const real_t fmean = (real_t)mean;
    for (int i = 0; i < n; i++) {
      const real_t *p = x + ((size_t)i * c + ch) * hw, *g = dy + ((size_t)i * c + ch) * hw;
      double sx;
      if (coef) {
        sdy += batchnorm_row_sum_relu(p, g, hw, fmean, coef[ch], coef[c + ch], &sx);
      } else {
        sdy += batchnorm_row_sum(g, hw, 0, NULL, 0, NULL);
        batchnorm_row_sum(p, hw, fmean, g, 0, &sx); /* sum (x - fmean) * dy */
      }
      sdyx += sx;
    }
    /* fmean is the float copy of the saved mean: the same value in both builds. */
    sdyx -= (mean - fmean) * sdy;
    const double dg = sdyx * invstd;
    dgamma[ch] += (real_t)dg;
    dbeta[ch] += (real_t)sdy;
    if (!dx) continue;
    const double scale = gamma[ch] * invstd;
    /* With coef, ReLU's gradient masked row by row into a buffer of the stack. */
    enum { CHUNK = 256 };
    real_t masked[CHUNK];
    for (int i = 0; i < n; i++) {
      const real_t *p = x + ((size_t)i * c + ch) * hw, *g = dy + ((size_t)i * c + ch) * hw;
      real_t *q = dx + ((size_t)i * c + ch) * hw;
      if (coef) {
        for (int j0 = 0; j0 < hw; j0 += CHUNK) {
          const int len = hw - j0 < CHUNK ? hw - j0 : CHUNK;
          for (int j = 0; j < len; j++) masked[j] = batchnorm_relu_grad(coef[ch], p[j0 + j], coef[c + ch], g[j0 + j]);
          dx_row(train, dx_write, len, p + j0, masked, q + j0, scale, sdy, dg, invstd, m, fmean);
        }
      } else {
        dx_row(train, dx_write, hw, p, g, q, scale, sdy, dg, invstd, m, fmean);
      }
    }
  }
}

/* One row of dx from its dy (g) and x (p), as batch norm's closed form gives it:
 * dx = scale * (dy - dbeta/M - xhat * dgamma/M), xhat = (x - mean) * invstd, as
 * dx = a*dy + b*(x - mean) + c in real_t coefficients (vectorised); x - mean first,
 * so a large mean does not cancel digits (mean == fmean exactly). */
HV_SIMD_CLONES static void dx_row(int train, int dx_write, int hw, const real_t *p, const real_t *g, real_t *q, double scale,
                   double sdy, double dg, double invstd, double m, real_t fmean) {
  if (train) {
    const double k1 = sdy / m, k2 = dg * invstd / m;
    const real_t ca = (real_t)scale, cb = (real_t)(-scale * k2), cc = (real_t)(-scale * k1);
    if (dx_write)
      for (int j = 0; j < hw; j++) q[j] = ca * g[j] + cb * (p[j] - fmean) + cc;
    else
      for (int j = 0; j < hw; j++) q[j] += ca * g[j] + cb * (p[j] - fmean) + cc;
  } else {
    const real_t ca = (real_t)scale;
    if (dx_write)
      for (int j = 0; j < hw; j++) q[j] = ca * g[j];
    else
      for (int j = 0; j < hw; j++) q[j] += ca * g[j];
  }
}

void batchnorm_backward(int n, int c, int hw, int train, const real_t *x, const real_t *dy,
                        const real_t *gamma, const real_t *save_mean,
                        const real_t *save_invstd, real_t *dx, int dx_write, real_t *dgamma,
                        real_t *dbeta) {
  backward(n, c, hw, train, x, dy, gamma, save_mean, save_invstd, dx, dx_write, dgamma, dbeta, NULL);
}

void batchnorm_backward_relu(int n, int c, int hw, int train, const real_t *x, const real_t *dy, const real_t *gamma,
                             const real_t *save_mean, const real_t *save_invstd, real_t *dx, int dx_write,
                             real_t *dgamma, real_t *dbeta, const real_t *coef) {
  backward(n, c, hw, train, x, dy, gamma, save_mean, save_invstd, dx, dx_write, dgamma, dbeta, coef);
}
