/* batchnorm_blocked.c: batch norm forward (train/eval) and backward on activations in
 * the channel-blocked layout (layout_blocked.h), for models that keep oneDNN's layout
 * between convolutions.
 *
 * The same arithmetic as batchnorm.c, operation for operation, so both give the same
 * bits: each (image, channel) row is summed in eight float lanes (lane l takes the
 * positions j = l mod 8 of the whole groups of eight, in order), the leftover
 * positions and then the lanes are added in double, and the rows are added in double
 * in image order. Here a row of 16 channels is one contiguous block, so the lanes run
 * over 16 channels at once. Rows are spread over threads (images x channel blocks:
 * the 16 channels of WRN's first group are one block, too few to share by channel)
 * and their sums are added per channel afterwards in image order, so the result does
 * not depend on the thread count either.
 *
 * With relu (batchnorm.h) the ReLU after batch norm runs inside these passes: the
 * forward's normalisation writes max(0, y), and the backward masks dy as it reads it,
 * from x and the forward's coefficients (kept in the scratch for that), so the ReLU's
 * own passes (a read and a write forward, two reads and a write backward, over the
 * whole activation) disappear. The per-row work is compiled for AVX-512 and AVX2 as
 * well (simd_clones.h: the same bits), where the 2 x 8 lanes of 16 channels fit the
 * registers. */
#include "batchnorm.h"

#include <math.h>

#include "batchnorm_rows.h"
#include "layout_blocked.h"

#define B CHANNEL_BLOCK

size_t batchnorm_blocked_scratch(int n, int c) { return 2 * (size_t)n * c + 5 * (size_t)c; }

/* Row r is image r / blocks, channel block r % blocks: its data, and where its
 * channels' sums go in (n, c) arrays. */
#define ROW(base, r) ((base) + (size_t)(r) * hw * B)
#define AT(r) ((size_t)((r) / blocks) * c + (size_t)((r) % blocks) * B)
#define PARALLEL_IF(rows) if ((double)(rows) * hw * B > 32768)

/* The scratch: per-row sums (two (n, c) arrays), then per channel a double and four
 * coefficients (room for four doubles): the forward's y = coef_a * x + coef_b, which
 * backward needs again to mask ReLU's gradient, and two of backward's own (its third
 * goes where chan was). */
typedef struct bn_scratch {
  double *s1, *s2, *chan;
  real_t *coef_a, *coef_b, *bwd_a, *bwd_b;
} bn_scratch_t;

static bn_scratch_t split(double *scratch, int n, int c) {
  bn_scratch_t t;
  t.s1 = scratch;
  t.s2 = t.s1 + (size_t)n * c;
  t.chan = t.s2 + (size_t)n * c;
  t.coef_a = (real_t *)(t.chan + c);
  t.coef_b = t.coef_a + c;
  t.bwd_a = t.coef_b + c;
  t.bwd_b = t.bwd_a + c;
  return t;
}

/* Column sum of an (n, c) array in image order. */
static double sum_images(const double *s, int n, int c, int ch) {
  double sum = 0;
  for (int i = 0; i < n; i++) sum += s[(size_t)i * c + ch];
  return sum;
}

/* One row: q = ca * p + cb per channel of the block; with relu max(0, that), as
 * relu_forward computes it (eltwise.c). */
HV_SIMD_CLONES static void normalise_row(int hw, const real_t *p, const real_t *ca, const real_t *cb, real_t *q,
                                         int relu) {
  if (relu) {
    for (int j = 0; j < hw; j++)
      for (int k = 0; k < B; k++) {
        const real_t v = ca[k] * p[(size_t)j * B + k] + cb[k];
        q[(size_t)j * B + k] = v > 0 ? v : 0;
      }
  } else {
    for (int j = 0; j < hw; j++)
      for (int k = 0; k < B; k++) q[(size_t)j * B + k] = ca[k] * p[(size_t)j * B + k] + cb[k];
  }
}

/* y = coef_a * x + coef_b, per channel (with relu, max(0, that)). */
static void normalise(int rows, int blocks, int hw, const real_t *x, const real_t *coef_a,
                      const real_t *coef_b, real_t *y, int relu) {
#pragma omp parallel for schedule(static) PARALLEL_IF(rows)
  for (int r = 0; r < rows; r++)
    normalise_row(hw, ROW(x, r), coef_a + (r % blocks) * B, coef_b + (r % blocks) * B, ROW(y, r), relu);
}

void batchnorm_forward_train_blocked(int n, int c, int hw, const real_t *x, const real_t *gamma,
                                     const real_t *beta, real_t eps, real_t momentum,
                                     real_t *running_mean, real_t *running_var, real_t *save_mean,
                                     real_t *save_invstd, real_t *y, int relu, double *scratch) {
  const int blocks = c / B, rows = n * blocks;
  const double m = (double)n * hw;
  bn_scratch_t t = split(scratch, n, c);
#pragma omp parallel for schedule(static) PARALLEL_IF(rows)
  for (int r = 0; r < rows; r++) batchnorm_block_row_sums(ROW(x, r), hw, NULL, NULL, 0, t.s1 + AT(r), NULL);
  for (int ch = 0; ch < c; ch++) {
    t.chan[ch] = sum_images(t.s1, n, c, ch) / m;
    save_mean[ch] = (real_t)t.chan[ch]; /* the float mean the second pass subtracts */
  }
  /* Second pass around the mean, as batchnorm.c (sums of deviations, then squares). */
#pragma omp parallel for schedule(static) PARALLEL_IF(rows)
  for (int r = 0; r < rows; r++)
    batchnorm_block_row_sums(ROW(x, r), hw, save_mean + (r % blocks) * B, NULL, 1, t.s1 + AT(r), t.s2 + AT(r));
  for (int ch = 0; ch < c; ch++) {
    const double mean = t.chan[ch], sd = sum_images(t.s1, n, c, ch);
    double ss = sum_images(t.s2, n, c, ch);
    const double delta = sd / m;
    ss -= m * delta * delta;
    if (ss < 0) ss = 0;
    const double var = ss / m, invstd = 1.0 / sqrt(var + eps);
    save_invstd[ch] = (real_t)invstd;
    if (running_mean) {
      running_mean[ch] = (real_t)((1 - momentum) * running_mean[ch] + momentum * mean);
      double unbiased = m > 1 ? ss / (m - 1) : var;
      running_var[ch] = (real_t)((1 - momentum) * running_var[ch] + momentum * unbiased);
    }
    t.coef_a[ch] = (real_t)(gamma[ch] * invstd);
    t.coef_b[ch] = (real_t)(beta[ch] - mean * gamma[ch] * invstd);
  }
  normalise(rows, blocks, hw, x, t.coef_a, t.coef_b, y, relu);
}

void batchnorm_forward_eval_blocked(int n, int c, int hw, const real_t *x, const real_t *gamma,
                                    const real_t *beta, real_t eps, const real_t *running_mean,
                                    const real_t *running_var, real_t *save_mean, real_t *save_invstd,
                                    real_t *y, int relu, double *scratch) {
  bn_scratch_t t = split(scratch, n, c);
  for (int ch = 0; ch < c; ch++) {
    const double invstd = 1.0 / sqrt((double)running_var[ch] + eps);
    save_mean[ch] = running_mean[ch];
    save_invstd[ch] = (real_t)invstd;
    t.coef_a[ch] = (real_t)(gamma[ch] * invstd);
    t.coef_b[ch] = (real_t)(beta[ch] - running_mean[ch] * gamma[ch] * invstd);
  }
  normalise(n * (c / B), c / B, hw, x, t.coef_a, t.coef_b, y, relu);
}

/* One row of backward's dx: from dy (g), or ReLU's masked dy with the forward's
 * coefficients fa, fb; ca, cb, cc backward's, fm the saved float mean. */
HV_SIMD_CLONES static void dx_row(int hw, int train, int dx_write, int relu, const real_t *p, const real_t *g,
                                  const real_t *ca, const real_t *cb, const real_t *cc, const real_t *fm,
                                  const real_t *fa, const real_t *fb, real_t *q) {
  for (int j = 0; j < hw; j++) {
    const size_t at = (size_t)j * B;
    real_t gj[B]; /* the gradient at batch norm's output: dy, or ReLU's masked dy */
    for (int k = 0; k < B; k++) gj[k] = relu ? batchnorm_relu_grad(fa[k], p[at + k], fb[k], g[at + k]) : g[at + k];
    if (train && dx_write) {
      for (int k = 0; k < B; k++) q[at + k] = ca[k] * gj[k] + cb[k] * (p[at + k] - fm[k]) + cc[k];
    } else if (train) {
      for (int k = 0; k < B; k++) q[at + k] += ca[k] * gj[k] + cb[k] * (p[at + k] - fm[k]) + cc[k];
    } else if (dx_write) {
      for (int k = 0; k < B; k++) q[at + k] = ca[k] * gj[k];
    } else {
      for (int k = 0; k < B; k++) q[at + k] += ca[k] * gj[k];
    }
  }
}

void batchnorm_backward_blocked(int n, int c, int hw, int train, const real_t *x, const real_t *dy,
                                const real_t *gamma, const real_t *save_mean, const real_t *save_invstd,
                                real_t *dx, int dx_write, real_t *dgamma, real_t *dbeta, int relu,
                                double *scratch) {
  const int blocks = c / B, rows = n * blocks;
  const double m = (double)n * hw;
  bn_scratch_t t = split(scratch, n, c);
  /* save_mean holds the float mean: the fmean of batchnorm.c. */
#pragma omp parallel for schedule(static) PARALLEL_IF(rows)
  for (int r = 0; r < rows; r++) {
    const int o = (r % blocks) * B;
    if (relu) {
      batchnorm_block_row_sums_relu(ROW(x, r), ROW(dy, r), hw, save_mean + o, t.coef_a + o, t.coef_b + o,
                                    t.s1 + AT(r), t.s2 + AT(r));
    } else {
      batchnorm_block_row_sums(ROW(dy, r), hw, NULL, NULL, 0, t.s1 + AT(r), NULL);
      batchnorm_block_row_sums(ROW(x, r), hw, save_mean + o, ROW(dy, r), 0, NULL, t.s2 + AT(r));
    }
  }
  real_t *coef_c = (real_t *)t.chan; /* the third coefficient, once chan is free */
  for (int ch = 0; ch < c; ch++) {
    const double mean = save_mean[ch], invstd = save_invstd[ch];
    const real_t fmean = (real_t)mean;
    const double sdy = sum_images(t.s1, n, c, ch);
    double sdyx = sum_images(t.s2, n, c, ch);
    sdyx -= (mean - fmean) * sdy;
    const double dg = sdyx * invstd;
    dgamma[ch] += (real_t)dg;
    dbeta[ch] += (real_t)sdy;
    const double scale = gamma[ch] * invstd;
    if (train) {
      const double k1 = sdy / m, k2 = dg * invstd / m;
      t.bwd_a[ch] = (real_t)scale;
      t.bwd_b[ch] = (real_t)(-scale * k2);
      coef_c[ch] = (real_t)(-scale * k1);
    } else {
      t.bwd_a[ch] = (real_t)scale;
    }
  }
  if (!dx) return;
#pragma omp parallel for schedule(static) PARALLEL_IF(rows)
  for (int r = 0; r < rows; r++) {
    const int o = (r % blocks) * B;
    dx_row(hw, train, dx_write, relu, ROW(x, r), ROW(dy, r), t.bwd_a + o, t.bwd_b + o, coef_c + o, save_mean + o,
           t.coef_a + o, t.coef_b + o, ROW(dx, r));
  }
}
