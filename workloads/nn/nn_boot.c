/* nn_boot.c: one bootstrap (see nn_boot.h). CV folds are the folds the sample was
 * drawn in: a duplicated image never sits on both sides of a split. The CV error of a
 * setting is its validation errors summed over folds / sample size (every sample
 * position is validated once); the first setting with the lowest error wins. */
#include "nn_boot.h"

#include <stdio.h>
#include <stdlib.h>

#include "clock.h"

#include "model.h"

/* The scheduler's poll between prediction batches too (see nn_train.h). */
#define POLL c->train_opts.poll, c->train_opts.poll_ctx

/* Prefixes err with the bootstrap and setting at fault. */
static void say_where(int b, const nn_hparams_t *hp, char *err, size_t errlen) {
  char what[512];
  snprintf(what, sizeof what, "%s", err);
  snprintf(err, errlen, "bootstrap %d, setting n_conv %d kernel %d n_hidden %d: %s", b,
           hp->n_conv, hp->kernel, hp->n_hidden, what);
}

int nn_boot_run(const nn_boot_cfg_t *c, int b, nn_boot_out_t *out, char *err, size_t errlen) {
  const double t0 = now_s();
  const int n = c->train->n;
  const uint64_t bseed = nn_boot_seed(c->seed, b);
  int *sample = malloc(sizeof(int) * (size_t)n), *sfold = malloc(sizeof(int) * (size_t)n);
  int *tpos = malloc(sizeof(int) * (size_t)n), *vpos = malloc(sizeof(int) * (size_t)n);
  int *tidx = malloc(sizeof(int) * (size_t)n), *vidx = malloc(sizeof(int) * (size_t)n);
  float *vprob = malloc(sizeof(float) * 10 * (size_t)n);
  int rc = -1;
  model_t *m = NULL;
  if (!sample || !sfold || !tpos || !vpos || !tidx || !vidx || !vprob ||
      nn_bootstrap_draw(n, c->folds, c->fold_of, bseed, sample, sfold) != 0) {
    snprintf(err, errlen, "bootstrap %d: out of memory for a sample of %d", b, n);
    goto done;
  }
  nn_settings_draw(&c->space, bseed, c->n_tuning, out->settings);

  out->best = 0;
  for (int s = 0; s < c->n_tuning; ++s) {
    const nn_hparams_t *hp = &out->settings[s];
    long wrong = 0;
    for (int f = 0; f < c->folds; ++f) {
      int nt = 0;
      const int nv = nn_cv_split(n, sfold, f, tpos, &nt, vpos);
      for (int j = 0; j < nt; ++j) tidx[j] = sample[tpos[j]];
      for (int j = 0; j < nv; ++j) vidx[j] = sample[vpos[j]];
      int ep;
      if (nn_train(c->train, tidx, nt, hp, &c->train_opts, nn_train_seed(bseed, s, f), &m, &ep,
                   err, errlen) != 0) {
        say_where(b, hp, err, errlen);
        goto done;
      }
      const int w = nn_predict(m, c->train, vidx, nv, vprob, POLL);
      model_free(m);
      m = NULL;
      if (w < 0) {
        snprintf(err, errlen, "bootstrap %d: out of memory predicting", b);
        goto done;
      }
      wrong += w;
    }
    out->cv_error[s] = (double)wrong / n;
    if (c->verbose)
      fprintf(stderr, "bootstrap %d setting %d: conv %d kernel %d hidden %d lr %.3g momentum "
              "%.3g: CV error %.4f\n", b, s, hp->n_conv, hp->kernel, hp->n_hidden, hp->lr,
              hp->momentum, out->cv_error[s]);
    if (out->cv_error[s] < out->cv_error[out->best]) out->best = s;
  }

  /* Refit the best setting on the whole sample with its own seed. */
  if (nn_train(c->train, sample, n, &out->settings[out->best], &c->train_opts,
               nn_train_seed(bseed, out->best, -1), &m, &out->epochs, err, errlen) != 0) {
    say_where(b, &out->settings[out->best], err, errlen);
    goto done;
  }
  const int wtr = nn_predict(m, c->train, sample, n, vprob, POLL);
  const int wte = nn_predict(m, c->test, NULL, c->test->n, out->test_prob, POLL);
  if (wtr < 0 || wte < 0) {
    snprintf(err, errlen, "bootstrap %d: out of memory predicting", b);
    goto done;
  }
  out->train_error = (double)wtr / n;
  out->test_error = (double)wte / c->test->n;
  nn_predict_raw(m, c->extra_x, c->n_extra, out->extra_prob, POLL);
  out->seconds = now_s() - t0;
  rc = 0;
done:
  model_free(m);
  free(sample), free(sfold), free(tpos), free(vpos), free(tidx), free(vidx), free(vprob);
  return rc;
}
