/* nn_plan.c: folds, bootstrap-within-fold draws, random-search settings and seeds
 * (see nn_plan.h). All draws use the trainer's xoshiro256** (rng.h) seeded by
 * derived seeds, in a fixed order, so the plan is a pure function of the seed. */
#include "nn_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rng.h"

void nn_space_default(nn_space_t *s) {
  s->conv_min = 1;
  s->conv_max = 1000;
  s->kernel_min = 2;
  s->kernel_max = 11;
  s->hidden_min = 1;
  s->hidden_max = 2000;
  s->log_lr_min = -5;
  s->log_lr_max = -1;
  s->log_mom_min = -2;
  s->log_mom_max = 0;
}

int nn_space_check(const nn_space_t *s, char *err, size_t errlen) {
  const struct { const char *name; int lo, hi, floor, ceil; } r[3] = {
      {"conv", s->conv_min, s->conv_max, 1, 1 << 20},
      /* No padding on 28x28 images: a kernel of 28 leaves one output pixel. */
      {"kernel", s->kernel_min, s->kernel_max, 1, 29},
      {"hidden", s->hidden_min, s->hidden_max, 1, 1 << 24}};
  for (int i = 0; i < 3; ++i) {
    if (r[i].lo >= r[i].hi) {
      snprintf(err, errlen, "--%s-min %d --%s-max %d: the range [min, max) is empty", r[i].name,
               r[i].lo, r[i].name, r[i].hi);
      return -1;
    }
    if (r[i].lo < r[i].floor || r[i].hi > r[i].ceil) {
      snprintf(err, errlen, "--%s-min %d --%s-max %d: values must lie in [%d, %d)", r[i].name,
               r[i].lo, r[i].name, r[i].hi, r[i].floor, r[i].ceil);
      return -1;
    }
  }
  if (!(s->log_lr_min <= s->log_lr_max) || !(s->log_mom_min <= s->log_mom_max)) {
    snprintf(err, errlen, "--log-%s-min is larger than --log-%s-max: the range is empty",
             s->log_lr_min <= s->log_lr_max ? "momentum" : "lr",
             s->log_lr_min <= s->log_lr_max ? "momentum" : "lr");
    return -1;
  }
  if (s->log_lr_max > 1 || s->log_mom_max > 0) {
    snprintf(err, errlen, "%s: above 10^%d", s->log_mom_max > 0 ? "--log-momentum-max" :
             "--log-lr-max", s->log_mom_max > 0 ? 0 : 1);
    return -1;
  }
  return 0;
}

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t nn_seed_derive(uint64_t seed, uint64_t stream) {
  return splitmix64(seed ^ splitmix64(stream + 0x632BE59BD9B4E019ull));
}

uint64_t nn_boot_seed(uint64_t seed, int b) { return nn_seed_derive(seed, 1000u + (uint64_t)b); }

uint64_t nn_train_seed(uint64_t boot_seed, int setting, int fold) {
  /* fold -1 (the refit) maps to stream setting * 64 + 0; CV folds to 1.. */
  return nn_seed_derive(boot_seed, 16u + (uint64_t)setting * 64u + (uint64_t)(fold + 1));
}

void nn_folds_assign(int n, int k, uint64_t seed, int *fold_of) {
  int *perm = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  rng_t r;
  rng_seed(&r, nn_seed_derive(seed, 7));
  if (!perm) {
    /* Out of memory: a round-robin split is still a valid k-fold split. */
    for (int i = 0; i < n; ++i) fold_of[i] = i % k;
    return;
  }
  for (int i = 0; i < n; ++i) perm[i] = i;
  rng_shuffle(&r, perm, n);
  int pos = 0;
  for (int f = 0; f < k; ++f) {
    const int size = n / k + (f < n % k ? 1 : 0);
    for (int j = 0; j < size; ++j) fold_of[perm[pos++]] = f;
  }
  free(perm);
}

int nn_bootstrap_draw(int n, int k, const int *fold_of, uint64_t boot_seed, int *sample,
                      int *sample_fold) {
  int *members = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  if (!members) return -1;
  rng_t r;
  rng_seed(&r, nn_seed_derive(boot_seed, 1));
  int pos = 0;
  for (int f = 0; f < k; ++f) {
    int m = 0;
    for (int i = 0; i < n; ++i)
      if (fold_of[i] == f) members[m++] = i;
    for (int j = 0; j < m; ++j) {
      sample[pos] = members[rng_below(&r, (uint64_t)m)];
      sample_fold[pos++] = f;
    }
  }
  free(members);
  return 0;
}

static int uniform_int(rng_t *r, int lo, int hi) {
  return lo + (int)rng_below(r, (uint64_t)(hi - lo));
}

static double log_uniform(rng_t *r, double lo, double hi) {
  return pow(10.0, lo + (hi - lo) * rng_uniform(r));
}

void nn_settings_draw(const nn_space_t *sp, uint64_t boot_seed, int n_tuning, nn_hparams_t *out) {
  rng_t r;
  rng_seed(&r, nn_seed_derive(boot_seed, 2));
  /* One fixed order of draws per setting, so narrowing one range leaves the others'
   * draws where they were. */
  for (int s = 0; s < n_tuning; ++s) {
    out[s].n_conv = uniform_int(&r, sp->conv_min, sp->conv_max);
    out[s].kernel = uniform_int(&r, sp->kernel_min, sp->kernel_max);
    out[s].n_hidden = uniform_int(&r, sp->hidden_min, sp->hidden_max);
    out[s].lr = log_uniform(&r, sp->log_lr_min, sp->log_lr_max);
    out[s].momentum = log_uniform(&r, sp->log_mom_min, sp->log_mom_max);
  }
}

int nn_cv_split(int n, const int *sample_fold, int f, int *train_pos, int *n_train,
                int *val_pos) {
  int nt = 0, nv = 0;
  for (int j = 0; j < n; ++j) {
    if (sample_fold[j] == f)
      val_pos[nv++] = j;
    else
      train_pos[nt++] = j;
  }
  *n_train = nt;
  return nv;
}
