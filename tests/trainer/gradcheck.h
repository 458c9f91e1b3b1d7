/* gradcheck.h: central-difference gradient check of a whole model in float64
 * (links hvtrainer_f64, where real_t is double). The loss is the mean softmax
 * cross-entropy of model_loss; dropout masks repeat because the model's RNG state is
 * restored before every forward. Bound: |analytic - numeric| <= GC_ATOL + GC_RTOL *
 * max(|analytic|, |numeric|), with h = 1e-6 (truncation ~h^2, rounding ~1e-16/h). */
#ifndef HV_TESTS_GRADCHECK_H
#define HV_TESTS_GRADCHECK_H

#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "model.h"
#include "rng.h"

#define GC_H 1e-6
#define GC_ATOL 1e-8
#define GC_RTOL 1e-5

static double gc_loss(model_t *m, const real_t *x, int n, const uint8_t *y, int train,
                      const rng_t *saved) {
  m->rng = *saved;
  model_forward(m, x, n, train);
  return model_loss(m, y, (real_t)1.0 / n, NULL) / n;
}

static int gc_compare(const char *what, const char *model, size_t i, double a, double num) {
  double err = fabs(a - num), bound = GC_ATOL + GC_RTOL * fmax(fabs(a), fabs(num));
  if (err > bound) {
    fprintf(stderr, "%s: %s[%zu]: analytic %.12g numeric %.12g (|diff| %.3g > %.3g)\n", model,
            what, i, a, num, err, bound);
    return 1;
  }
  return 0;
}

/* Checks max_checks parameters (all when 0 or when there are fewer) and max_checks
 * input entries of model m on n random images (seeded). Returns the number of bad
 * entries and adds them to check_failures. */
static int gradcheck_model(const char *name, model_t *m, int n, int train, size_t max_checks,
                           uint64_t seed) {
  rng_t r;
  rng_seed(&r, seed);
  const size_t xin = (size_t)n * m->in_c * m->in_h * m->in_w;
  const int k = model_output_size(m);
  real_t *x = malloc(xin * sizeof *x);
  uint8_t *y = malloc((size_t)n);
  for (size_t i = 0; i < xin; i++) x[i] = rng_normal(&r);
  for (int i = 0; i < n; i++) y[i] = (uint8_t)rng_below(&r, (uint64_t)k);
  m->want_input_grad = 1;
  const rng_t saved = m->rng;
  gc_loss(m, x, n, y, train, &saved);
  model_zero_grad(m);
  model_backward(m, NULL, NULL);
  real_t *g = malloc(m->n_params * sizeof *g), *gx = malloc(xin * sizeof *gx);
  memcpy(g, m->grads, m->n_params * sizeof *g);
  memcpy(gx, model_input_grad(m), xin * sizeof *gx);
  int bad = 0;
  size_t np = m->n_params, checks = max_checks && max_checks < np ? max_checks : np;
  for (size_t c = 0; c < checks; c++) {
    size_t i = checks == np ? c : (size_t)rng_below(&r, np);
    real_t p = m->params[i];
    m->params[i] = p + GC_H;
    double lp = gc_loss(m, x, n, y, train, &saved);
    m->params[i] = p - GC_H;
    double lm = gc_loss(m, x, n, y, train, &saved);
    m->params[i] = p;
    bad += gc_compare("param", name, i, g[i], (lp - lm) / (2 * GC_H));
  }
  checks = max_checks && max_checks < xin ? max_checks : xin;
  for (size_t c = 0; c < checks; c++) {
    size_t i = checks == xin ? c : (size_t)rng_below(&r, xin);
    real_t p = x[i];
    x[i] = p + GC_H;
    double lp = gc_loss(m, x, n, y, train, &saved);
    x[i] = p - GC_H;
    double lm = gc_loss(m, x, n, y, train, &saved);
    x[i] = p;
    bad += gc_compare("input", name, i, gx[i], (lp - lm) / (2 * GC_H));
  }
  /* A check that compares zeros with zeros proves nothing: demand signal. */
  double gnorm = 0;
  for (size_t i = 0; i < np; i++) gnorm += fabs(g[i]);
  for (size_t i = 0; i < xin; i++) gnorm += fabs(gx[i]);
  if (!(gnorm > 1e-6)) {
    fprintf(stderr, "%s: all gradients are zero\n", name);
    bad++;
  }
  free(x);
  free(y);
  free(g);
  free(gx);
  if (bad) fprintf(stderr, "%s: %d gradient entries out of bound\n", name, bad);
  check_failures += bad;
  return bad;
}

#endif /* HV_TESTS_GRADCHECK_H */
