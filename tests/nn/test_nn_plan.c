/* test_nn_plan.c: the random plan of mnist_nn (workloads/nn/nn_plan.h) and the
 * ensemble vote. Checks that the k-fold split covers every image exactly once with
 * balanced folds, that each bootstrap draws only from its own fold and keeps the fold
 * sizes, that CV splits validate every sample position exactly once and never put one
 * image on both sides, that plans are a pure function of (seed, bootstrap), that
 * settings stay in their ranges, and that empty ranges are refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nn_plan.h"
#include "nn_report.h"

static void test_folds(int n, int k, uint64_t seed) {
  int *fold_of = malloc(sizeof(int) * (size_t)n), *size = calloc((size_t)k, sizeof(int));
  nn_folds_assign(n, k, seed, fold_of);
  for (int i = 0; i < n; ++i) {
    CHECK(fold_of[i] >= 0 && fold_of[i] < k, "n %d k %d: image %d in fold %d", n, k, i, fold_of[i]);
    if (fold_of[i] >= 0 && fold_of[i] < k) size[fold_of[i]]++;
  }
  for (int f = 0; f < k; ++f)
    CHECK(size[f] == n / k || size[f] == n / k + 1, "n %d k %d: fold %d holds %d", n, k, f, size[f]);
  /* Not the trivial split: a shuffled one (the first k images are not all fold 0..). */
  int in_order = 1;
  for (int i = 0; i < n; ++i) in_order &= fold_of[i] == i * k / n;
  CHECK(!in_order, "n %d k %d: folds are not shuffled", n, k);

  int *sample = malloc(sizeof(int) * (size_t)n), *sf = malloc(sizeof(int) * (size_t)n);
  int *again = malloc(sizeof(int) * (size_t)n), *sf2 = malloc(sizeof(int) * (size_t)n);
  int *tpos = malloc(sizeof(int) * (size_t)n), *vpos = malloc(sizeof(int) * (size_t)n);
  int *val_count = calloc((size_t)n, sizeof(int)), *side = malloc(sizeof(int) * (size_t)n);
  for (int b = 0; b < 4; ++b) {
    const uint64_t bs = nn_boot_seed(seed, b);
    CHECK(nn_bootstrap_draw(n, k, fold_of, bs, sample, sf) == 0, "draw failed");
    int *ssize = calloc((size_t)k, sizeof(int)), dup = 0;
    for (int j = 0; j < n; ++j) {
      CHECK(sample[j] >= 0 && sample[j] < n, "bootstrap %d position %d: image %d", b, j, sample[j]);
      /* The sampler draws only from its own fold. */
      CHECK(fold_of[sample[j]] == sf[j], "bootstrap %d: image %d of fold %d drawn for fold %d", b,
            sample[j], fold_of[sample[j]], sf[j]);
      ssize[sf[j]]++;
      for (int i = 0; i < j && !dup; ++i) dup = sample[i] == sample[j];
    }
    for (int f = 0; f < k; ++f)
      CHECK(ssize[f] == size[f], "bootstrap %d: fold %d has %d draws for %d images", b, f, ssize[f],
            size[f]);
    CHECK(dup, "bootstrap %d of %d images has no repeated image: not drawn with replacement", b, n);
    free(ssize);
    /* Same (seed, b): same sample; another b: another sample. */
    nn_bootstrap_draw(n, k, fold_of, bs, again, sf2);
    CHECK(!memcmp(sample, again, sizeof(int) * (size_t)n), "bootstrap %d not reproducible", b);
    nn_bootstrap_draw(n, k, fold_of, nn_boot_seed(seed, b + 1), again, sf2);
    CHECK(memcmp(sample, again, sizeof(int) * (size_t)n) != 0, "bootstraps %d and %d equal", b, b + 1);

    /* CV splits: every position validated once; train + val = n; an image is never
     * on both sides of a split. */
    memset(val_count, 0, sizeof(int) * (size_t)n);
    for (int f = 0; f < k; ++f) {
      int nt = -1;
      const int nv = nn_cv_split(n, sf, f, tpos, &nt, vpos);
      CHECK(nv + nt == n, "fold %d: %d train + %d val != %d", f, nt, nv, n);
      CHECK(nv == size[f], "fold %d: %d validation positions, fold has %d", f, nv, size[f]);
      for (int j = 0; j < n; ++j) side[sample[j]] = 0;
      for (int j = 0; j < nv; ++j) {
        val_count[vpos[j]]++;
        side[sample[vpos[j]]] |= 1;
      }
      for (int j = 0; j < nt; ++j) side[sample[tpos[j]]] |= 2;
      for (int j = 0; j < n; ++j)
        CHECK(side[sample[j]] != 3, "fold %d: image %d both trains and validates", f, sample[j]);
    }
    for (int j = 0; j < n; ++j)
      CHECK(val_count[j] == 1, "position %d validated %d times", j, val_count[j]);
  }
  free(fold_of), free(size), free(sample), free(sf), free(again), free(sf2);
  free(tpos), free(vpos), free(val_count), free(side);
}

/* Field by field: the struct has padding that memcmp would read. */
static int same_settings(const nn_hparams_t *a, const nn_hparams_t *b, int n) {
  for (int s = 0; s < n; ++s)
    if (a[s].n_conv != b[s].n_conv || a[s].kernel != b[s].kernel ||
        a[s].n_hidden != b[s].n_hidden || a[s].lr != b[s].lr || a[s].momentum != b[s].momentum)
      return 0;
  return 1;
}

static void test_settings(void) {
  nn_space_t sp = {2, 5, 3, 6, 16, 33, -2, -1.5, -0.5, -0.1};
  nn_hparams_t h[200], h2[200];
  nn_settings_draw(&sp, nn_boot_seed(7, 3), 200, h);
  nn_settings_draw(&sp, nn_boot_seed(7, 3), 200, h2);
  CHECK(same_settings(h, h2, 200), "settings not reproducible");
  int seen_lo = 0, seen_hi = 0;
  for (int s = 0; s < 200; ++s) {
    CHECK(h[s].n_conv >= 2 && h[s].n_conv < 5, "n_conv %d", h[s].n_conv);
    CHECK(h[s].kernel >= 3 && h[s].kernel < 6, "kernel %d", h[s].kernel);
    CHECK(h[s].n_hidden >= 16 && h[s].n_hidden < 33, "n_hidden %d", h[s].n_hidden);
    CHECK(h[s].lr >= pow(10, -2) && h[s].lr <= pow(10, -1.5), "lr %g", h[s].lr);
    CHECK(h[s].momentum >= pow(10, -0.5) && h[s].momentum <= pow(10, -0.1), "momentum %g",
          h[s].momentum);
    seen_lo |= h[s].n_conv == 2;
    seen_hi |= h[s].n_conv == 4;
  }
  CHECK(seen_lo && seen_hi, "n_conv never reached both ends of [2, 5)");
  nn_settings_draw(&sp, nn_boot_seed(7, 4), 200, h2);
  CHECK(!same_settings(h, h2, 200), "bootstraps 3 and 4 drew the same settings");

  char err[256];
  nn_space_t d;
  nn_space_default(&d);
  CHECK(nn_space_check(&d, err, sizeof err) == 0, "default space refused: %s", err);
  nn_space_t bad = d;
  bad.conv_min = bad.conv_max = 5;
  CHECK(nn_space_check(&bad, err, sizeof err) != 0 && strstr(err, "empty"), "empty conv range accepted");
  bad = d;
  bad.kernel_max = 40;
  CHECK(nn_space_check(&bad, err, sizeof err) != 0, "kernel 39 accepted on 28x28 images");
  bad = d;
  bad.log_lr_min = 0, bad.log_lr_max = -1;
  CHECK(nn_space_check(&bad, err, sizeof err) != 0 && strstr(err, "lr"), "empty lr range accepted");
  CHECK(nn_seed_derive(1, 2) != nn_seed_derive(1, 3) && nn_seed_derive(1, 2) != nn_seed_derive(2, 2),
        "derived seeds collide");
}

static void test_vote(void) {
  /* 3 models x 2 items: item 0 votes 1,1,2 -> 1; item 1 votes 3,4 tie + 5: the tie
   * between 3, 4 and 5 (one vote each) goes to the larger summed probability. */
  float p[3 * 2 * 10] = {0};
  p[(0 * 2 + 0) * 10 + 1] = 0.9f, p[(1 * 2 + 0) * 10 + 1] = 0.6f, p[(2 * 2 + 0) * 10 + 2] = 0.99f;
  p[(0 * 2 + 1) * 10 + 3] = 0.5f, p[(1 * 2 + 1) * 10 + 4] = 0.8f, p[(2 * 2 + 1) * 10 + 5] = 0.7f;
  nn_results_t r;
  memset(&r, 0, sizeof r);
  r.n_bootstrap = 3;
  int votes = 0;
  CHECK(nn_ensemble_vote(&r, p, 2, 0, &votes) == 1 && votes == 2, "item 0: vote %d", votes);
  CHECK(nn_ensemble_vote(&r, p, 2, 1, &votes) == 4 && votes == 1, "item 1: tie not broken by probability");
}

int main(void) {
  test_folds(500, 5, 1);
  test_folds(23, 5, 99);
  test_folds(10, 2, 3);
  test_settings();
  test_vote();
  if (check_failures) {
    fprintf(stderr, "%d check(s) failed\n", check_failures);
    return 1;
  }
  printf("nn plan: all checks passed\n");
  return 0;
}
