/* doctor_verdict_straggler.c: verdict 7 of doctor_verdict.c, a straggler: the rank
 * that submits each step's first gradient late, from at least STRAGGLER_MIN_STEPS
 * steps of evidence, measured without comparing clocks of different hosts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_verdict.h"

#define STRAGGLER_MIN_STEPS 5
#define STRAGGLER_MIN_S 0.020
/* A step starts with a submission after the rank was idle (in user code) at least this
 * long: a control collective submitted right after the last completion is not one. */
#define STEP_GAP_S 0.0005

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* For each step (an instance the reference rank submitted after some time with nothing
 * in flight: its first gradient), each rank's lag behind the median rank. Clock-free across hosts:
 * lag = median(wait) - wait, with wait = t_negotiated - t_submit on the rank's own
 * clock (all ranks learn the agreement at about the same moment). Without
 * t_negotiated, t_submit is compared directly, and only on one host. */
int dv_verdict_straggler(an_t *a, int print) {
  int *who = calloc((size_t)a->n, sizeof *who), np = 0, found = 0, steps = 0, one_host = 1;
  evview_t *vs = calloc((size_t)a->n, sizeof *vs);
  double *wait = calloc((size_t)a->n, sizeof *wait), *tmp = calloc((size_t)a->n, sizeof *tmp);
  double **lag = calloc((size_t)a->n, sizeof *lag);
  if (!who || !vs || !wait || !tmp || !lag) goto out;
  for (int w = 0; w < a->n; w++) {
    evview_t vw = dv_view_of(dv_comm_of(&a->m->ranks[w], 0), 0);
    if (vw.n == 0) {
      free(vw.v);
      continue;
    }
    if (np && strcmp(a->m->ranks[who[0]].host, a->m->ranks[w].host) != 0) one_host = 0;
    vs[np] = vw, who[np++] = w;
  }
  if (np < 3) goto out; /* a median of two says nothing about which one is late */
  const evview_t *ref = &vs[0];
  for (int i = 0; i < np; i++)
    if (!(lag[i] = calloc((size_t)ref->n, sizeof(double)))) goto out;
  double busy_until = -INFINITY;
  for (int i = 0; i < ref->n; i++) {
    const doctor_event_t *e = ref->v[i];
    int first = e->t_submit - busy_until > STEP_GAP_S;
    double fin = isnan(e->t_finished) ? INFINITY : e->t_finished;
    if (fin > busy_until) busy_until = fin;
    if (!first || strcmp(e->state, "done") != 0) continue;
    int ok = 1, use_neg = 1;
    for (int k = 0; k < np && ok; k++) {
      const doctor_event_t *f = dv_view_at(&vs[k], e->seq);
      ok = f && !strcmp(f->name, e->name) && !strcmp(f->state, "done");
      if (ok && isnan(f->t_negotiated)) use_neg = 0;
      if (ok) wait[k] = use_neg ? f->t_negotiated - f->t_submit : 0, tmp[k] = f->t_submit;
    }
    if (!ok || (!use_neg && !one_host)) continue;
    if (!use_neg)
      for (int k = 0; k < np; k++) wait[k] = -tmp[k]; /* lag = t_submit - median t_submit */
    for (int k = 0; k < np; k++) tmp[k] = wait[k];
    double med = median(tmp, np);
    for (int k = 0; k < np; k++) lag[k][steps] = med - wait[k];
    steps++;
  }
  if (steps < STRAGGLER_MIN_STEPS) goto out;
  int worst = -1;
  double p50w = -INFINITY, second = -INFINITY;
  for (int k = 0; k < np; k++) {
    double p = median(lag[k], steps);
    if (p > p50w) second = p50w, p50w = p, worst = k;
    else if (p > second) second = p;
  }
  if (worst >= 0 && p50w >= STRAGGLER_MIN_S && p50w >= 2 * (second > 0 ? second : 0)) {
    found = 1;
    if (print)
      dv_verdict(a, "rank %d is a straggler: it submits each step's first gradient %.0f ms (p50) after the median rank",
                 who[worst], 1e3 * p50w);
  }
out:
  for (int i = 0; lag && i < np; i++) free(lag[i]);
  dv_views_free(vs, np);
  free(lag), free(who), free(wait), free(tmp);
  return found;
}
