/* nn_journal.c: the journal of finished bootstraps (see nn_journal.h). */
#include "nn_journal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

/* Reading numbers one after another; any fault makes the record unreadable. */
typedef struct cursor {
  char *p;
  int bad;
} cursor_t;

static double next_d(cursor_t *c) {
  char *end;
  double v = strtod(c->p, &end);
  if (end == c->p || (*end != ' ' && *end != '\0')) c->bad = 1;
  c->p = end;
  return v;
}

static float next_f(cursor_t *c) {
  char *end;
  float v = strtof(c->p, &end);
  if (end == c->p || (*end != ' ' && *end != '\0')) c->bad = 1;
  c->p = end;
  return v;
}

static int next_i(cursor_t *c) {
  char *end;
  long v = strtol(c->p, &end, 10);
  if (end == c->p || (*end != ' ' && *end != '\0') || v < -2147483647L || v > 2147483647L) c->bad = 1;
  c->p = end;
  return (int)v;
}

static int on_record(void *ctx, int b, char *payload) {
  nn_journal_t *s = ctx;
  if (b >= s->nb) return -1;
  /* Parse into scratch rows first: a record that fails half-way leaves the tables as
   * they were. */
  const size_t nt = (size_t)s->nt, np = (size_t)s->n_test * 10, ne = (size_t)s->n_extra * 10;
  nn_hparams_t *hp = malloc(sizeof *hp * nt);
  double *cv = malloc(sizeof *cv * nt);
  float *tp = malloc(sizeof *tp * (np + 1)), *ep = malloc(sizeof *ep * (ne + 1));
  cursor_t c = {payload, 0};
  if (!hp || !cv || !tp || !ep) c.bad = 1;
  int it[3] = {0};
  double dt[3] = {0};
  for (size_t i = 0; i < nt && !c.bad; ++i) {
    hp[i].n_conv = next_i(&c);
    hp[i].kernel = next_i(&c);
    hp[i].n_hidden = next_i(&c);
    hp[i].lr = next_d(&c);
    hp[i].momentum = next_d(&c);
  }
  for (size_t i = 0; i < nt && !c.bad; ++i) cv[i] = next_d(&c);
  for (int i = 0; i < 3 && !c.bad; ++i) it[i] = next_i(&c);
  for (int i = 0; i < 3 && !c.bad; ++i) dt[i] = next_d(&c);
  for (size_t i = 0; i < np && !c.bad; ++i) tp[i] = next_f(&c);
  for (size_t i = 0; i < ne && !c.bad; ++i) ep[i] = next_f(&c);
  int rc = -1;
  if (!c.bad && !*c.p && it[0] >= 0 && it[0] < s->nt && it[1] >= 0) {
    memcpy(s->t.settings + (size_t)b * nt, hp, sizeof *hp * nt);
    memcpy(s->t.cv_err + (size_t)b * nt, cv, sizeof *cv * nt);
    for (int i = 0; i < 3; ++i) s->t.itab[b * 4 + i] = it[i];
    s->t.itab[b * 4 + 3] = 0;
    memcpy(s->t.dtab + (size_t)b * 3, dt, sizeof dt);
    memcpy(s->t.test_prob + (size_t)b * np, tp, sizeof *tp * np);
    memcpy(s->t.extra_prob + (size_t)b * ne, ep, sizeof *ep * ne);
    s->have[b] = 1;
    rc = 0;
  }
  free(hp), free(cv), free(tp), free(ep);
  return rc;
}

static void on_damaged(void *ctx, const char *line) {
  nn_journal_t *s = ctx;
  /* Rank 0 names every damaged record; the others would repeat the same lines. */
  if (s->rank == 0) {
    fprintf(stderr, "mnist_nn: warning: %s (the bootstrap is computed again)\n", line);
    fflush(stderr);
  }
}

static uint64_t hash_images(uint64_t h, const nn_images_t *d) {
  h = unit_journal_hash(h, &d->n, sizeof d->n);
  h = unit_journal_hash(h, d->x, sizeof(float) * (size_t)d->n * (size_t)d->pixels);
  return unit_journal_hash(h, d->y, (size_t)d->n);
}

int nn_journal_load(nn_journal_t *s, const nn_args_t *a, const nn_images_t *train,
                    const nn_images_t *test, const uint8_t *ood, int n_extra, int rank,
                    const nn_journal_tabs_t *tabs, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->j.fd = -1;
  s->rank = rank;
  s->nb = a->n_bootstrap;
  s->nt = a->n_tuning;
  s->n_test = test->n;
  s->n_extra = n_extra;
  s->t = *tabs;
  s->attempt = env_int("HV_RESTART", 0);
  s->resume = s->attempt > 0 || a->resume;
  /* Test hook: HV_NN_CRASH_AFTER_BOOTSTRAPS=k kills rank HV_NN_CRASH_RANK (default 0)
   * with SIGKILL once it has journalled k bootstraps, as a lost node would; only in the
   * first attempt of a job (HV_RESTART 0 or unset). */
  s->crash_after = s->attempt == 0 && env_int("HV_NN_CRASH_RANK", 0) == rank
                       ? env_int("HV_NN_CRASH_AFTER_BOOTSTRAPS", 0) : 0;
  if (!(s->have = calloc((size_t)s->nb + 1, 1))) {
    snprintf(err, errlen, "out of memory for the journal");
    return -1;
  }
  /* Everything that decides a bootstrap's result: the images as used, the OOD image,
   * the plan's seed and folds, the search space and the training flags. */
  uint64_t h = hash_images(UNIT_JOURNAL_HASH_INIT, train);
  h = hash_images(h, test);
  h = unit_journal_hash(h, ood, 784);
  const nn_space_t *p = &a->space;
  snprintf(s->config, sizeof s->config,
           "mnist_nn data %016llx train %d test %d plotted %d seed %llu bootstraps %d "
           "settings %d folds %d max_epochs %d tolerance %.17g batch %d conv %d %d kernel %d %d "
           "hidden %d %d log10lr %.17g %.17g log10momentum %.17g %.17g device %s",
           (unsigned long long)h, train->n, test->n, n_extra, (unsigned long long)a->seed,
           a->n_bootstrap, a->n_tuning, a->folds, a->max_epochs, a->tolerance, a->batch,
           p->conv_min, p->conv_max, p->kernel_min, p->kernel_max, p->hidden_min, p->hidden_max,
           p->log_lr_min, p->log_lr_max, p->log_mom_min, p->log_mom_max, a->device);
  if (!s->resume) return unit_journal_clear(a->results, err, errlen);
  int kept = unit_journal_load(a->results, s->config, on_record, on_damaged, s, &s->damaged, err,
                               errlen);
  return kept < 0 ? -1 : 0;
}

int nn_journal_combine(nn_journal_t *s, hv_comm_t *comm, const char *results, int *todo,
                       char *err, size_t errlen) {
  int32_t *holder = malloc(sizeof(int32_t) * (size_t)s->nb + 1);
  if (!holder) {
    snprintf(err, errlen, "out of memory for the journal");
    return -1;
  }
  for (int b = 0; b < s->nb; ++b) holder[b] = s->have[b] ? s->rank + 1 : 0;
  int32_t dmg = s->damaged;
  hv_result_t r = hv_allreduce(comm, "nn/journal_holder", holder, holder, (size_t)s->nb,
                               HV_INT32, HV_MAX, NULL);
  if (r == HV_SUCCESS) r = hv_allreduce(comm, "nn/journal_damaged", &dmg, &dmg, 1, HV_INT32, HV_MAX, NULL);
  if (r != HV_SUCCESS) {
    snprintf(err, errlen, "combining the journals: %s (%s)", hv_strerror(r), hv_comm_last_error(comm));
    free(holder);
    return -1;
  }
  const size_t nt = (size_t)s->nt, np = (size_t)s->n_test * 10, ne = (size_t)s->n_extra * 10;
  int n_todo = 0;
  for (int b = 0; b < s->nb; ++b) {
    if (!holder[b]) todo[n_todo++] = b;
    if (holder[b] != s->rank + 1) { /* another rank holds it, or nobody: zero for the sums */
      memset(s->t.settings + (size_t)b * nt, 0, sizeof *s->t.settings * nt);
      memset(s->t.cv_err + (size_t)b * nt, 0, sizeof *s->t.cv_err * nt);
      memset(s->t.itab + (size_t)b * 4, 0, sizeof *s->t.itab * 4);
      memset(s->t.dtab + (size_t)b * 3, 0, sizeof *s->t.dtab * 3);
      memset(s->t.test_prob + (size_t)b * np, 0, sizeof *s->t.test_prob * np);
      memset(s->t.extra_prob + (size_t)b * ne, 0, sizeof *s->t.extra_prob * ne);
    }
  }
  free(holder);
  char werr[4600];
  if (unit_journal_open(&s->j, results, s->attempt, s->rank, s->config, werr, sizeof werr) == 0)
    s->writing = 1;
  else
    fprintf(stderr, "mnist_nn: rank %d: warning: %s; this run goes on without a journal\n",
            s->rank, werr);
  if (s->rank == 0 && s->resume) {
    char when[32];
    if (s->attempt > 0) snprintf(when, sizeof when, "restart %d", s->attempt);
    else snprintf(when, sizeof when, "resume");
    printf("mnist_nn: %s: %d of %d bootstraps kept from the journal", when, s->nb - n_todo, s->nb);
    if (dmg > 0) printf(" (%d damaged record%s not trusted)", (int)dmg, dmg == 1 ? "" : "s");
    printf(", %d to compute\n", n_todo);
    fflush(stdout);
  }
  return n_todo;
}

void nn_journal_add(nn_journal_t *s, int b) {
  if (s->writing) {
    const size_t nt = (size_t)s->nt, np = (size_t)s->n_test * 10, ne = (size_t)s->n_extra * 10;
    unit_journal_t *j = &s->j;
    unit_journal_begin(j, b);
    for (size_t i = 0; i < nt; ++i) {
      const nn_hparams_t *h = &s->t.settings[(size_t)b * nt + i];
      unit_journal_add(j, " %d %d %d %.17g %.17g", h->n_conv, h->kernel, h->n_hidden, h->lr,
                       h->momentum);
    }
    for (size_t i = 0; i < nt; ++i) unit_journal_add(j, " %.17g", s->t.cv_err[(size_t)b * nt + i]);
    for (int i = 0; i < 3; ++i) unit_journal_add(j, " %d", (int)s->t.itab[b * 4 + i]);
    for (int i = 0; i < 3; ++i) unit_journal_add(j, " %.17g", s->t.dtab[(size_t)b * 3 + i]);
    for (size_t i = 0; i < np; ++i) unit_journal_add(j, " %.9g", (double)s->t.test_prob[(size_t)b * np + i]);
    for (size_t i = 0; i < ne; ++i) unit_journal_add(j, " %.9g", (double)s->t.extra_prob[(size_t)b * ne + i]);
    char err[4600];
    if (unit_journal_commit(j, err, sizeof err) != 0) {
      fprintf(stderr, "mnist_nn: rank %d: warning: %s; this run goes on without a journal\n",
              s->rank, err);
      unit_journal_close(j);
      s->writing = 0;
    }
  }
  if (s->crash_after > 0 && ++s->done == s->crash_after) {
    fprintf(stderr, "mnist_nn: rank %d: HV_NN_CRASH_AFTER_BOOTSTRAPS=%d: killing myself\n",
            s->rank, s->crash_after);
    fflush(NULL);
    raise(SIGKILL);
  }
}

void nn_journal_close(nn_journal_t *s) {
  unit_journal_close(&s->j);
  s->writing = 0;
  free(s->have);
  s->have = NULL;
}
