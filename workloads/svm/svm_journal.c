/* svm_journal.c: the journal of finished grid units (see svm_journal.h). */
#include "svm_journal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static int on_record(void *ctx, int u, char *payload) {
  svm_journal_t *s = ctx;
  int e = 0, used = 0;
  double cpu = 0;
  if (u >= s->nu || sscanf(payload, "%d %lf%n", &e, &cpu, &used) != 2 || payload[used] || e < 0)
    return -1;
  s->have[u] = 1;
  s->errors[u] = e;
  s->unit_cpu[u] = cpu;
  return 0;
}

static void on_damaged(void *ctx, const char *line) {
  svm_journal_t *s = ctx;
  /* Rank 0 names every damaged record; the others would repeat the same lines. */
  if (s->rank == 0) {
    fprintf(stderr, "mnist_svm: warning: %s (the unit is computed again)\n", line);
    fflush(stderr);
  }
}

int svm_journal_load(svm_journal_t *s, const svm_args_t *a, const svm_set_t *tr, int rank,
                     int nu, int32_t *errors, double *unit_cpu, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->j.fd = -1;
  s->rank = rank;
  s->nu = nu;
  s->errors = errors;
  s->unit_cpu = unit_cpu;
  s->attempt = env_int("HV_RESTART", 0);
  s->resume = s->attempt > 0 || a->resume;
  /* Test hook: HV_SVM_CRASH_AFTER_UNITS=k kills rank HV_SVM_CRASH_RANK (default 0) with
   * SIGKILL once it has journalled k units, as a lost node would; only in the first
   * attempt of a job (HV_RESTART 0 or unset). */
  s->crash_after = s->attempt == 0 && env_int("HV_SVM_CRASH_RANK", 0) == rank
                       ? env_int("HV_SVM_CRASH_AFTER_UNITS", 0) : 0;
  if (!(s->have = calloc((size_t)nu + 1, 1))) {
    snprintf(err, errlen, "out of memory for the journal");
    return -1;
  }
  /* Everything that decides a unit's result: the training set (as centred) and the
   * flags of the folds, the grid, the solver and the device. */
  uint64_t h = unit_journal_hash(UNIT_JOURNAL_HASH_INIT, tr->x, sizeof(float) * (size_t)tr->n * tr->d);
  h = unit_journal_hash(h, tr->y, (size_t)tr->n);
  snprintf(s->config, sizeof s->config,
           "mnist_svm data %016llx n %d d %d folds %d seed %llu grid %d log10C %.17g %.17g "
           "log10gamma %.17g %.17g eps %.17g multiclass %s device %s",
           (unsigned long long)h, tr->n, tr->d, a->folds, (unsigned long long)a->seed,
           a->n_tuning, a->log_c_min, a->log_c_max, a->log_gamma_min, a->log_gamma_max, a->eps,
           a->multiclass, a->device);
  if (!s->resume) return unit_journal_clear(a->results, err, errlen);
  int kept = unit_journal_load(a->results, s->config, on_record, on_damaged, s, &s->damaged, err,
                               errlen);
  return kept < 0 ? -1 : 0;
}

int svm_journal_combine(svm_journal_t *s, hv_comm_t *comm, const char *results, char *kept,
                        char *err, size_t errlen) {
  int32_t *holder = malloc(sizeof(int32_t) * (size_t)s->nu + 1);
  if (!holder) {
    snprintf(err, errlen, "out of memory for the journal");
    return -1;
  }
  for (int u = 0; u < s->nu; ++u) holder[u] = s->have[u] ? s->rank + 1 : 0;
  int32_t dmg = s->damaged;
  hv_result_t r = hv_allreduce(comm, "svm/journal_holder", holder, holder, (size_t)s->nu,
                               HV_INT32, HV_MAX, NULL);
  if (r == HV_SUCCESS) r = hv_allreduce(comm, "svm/journal_damaged", &dmg, &dmg, 1, HV_INT32, HV_MAX, NULL);
  if (r != HV_SUCCESS) {
    snprintf(err, errlen, "combining the journals: %s (%s)", hv_strerror(r), hv_comm_last_error(comm));
    free(holder);
    return -1;
  }
  int n_kept = 0;
  for (int u = 0; u < s->nu; ++u) {
    kept[u] = holder[u] > 0;
    n_kept += kept[u];
    if (holder[u] != s->rank + 1) { /* another rank holds it, or nobody: zero for the sum */
      s->errors[u] = 0;
      s->unit_cpu[u] = 0;
    }
  }
  free(holder);
  char werr[4600];
  if (unit_journal_open(&s->j, results, s->attempt, s->rank, s->config, werr, sizeof werr) == 0)
    s->writing = 1;
  else
    fprintf(stderr, "mnist_svm: rank %d: warning: %s; this run goes on without a journal\n",
            s->rank, werr);
  if (s->rank == 0 && s->resume) {
    char when[32];
    if (s->attempt > 0) snprintf(when, sizeof when, "restart %d", s->attempt);
    else snprintf(when, sizeof when, "resume");
    printf("mnist_svm: %s: %d of %d grid units kept from the journal", when, n_kept, s->nu);
    if (dmg > 0) printf(" (%d damaged record%s not trusted)", (int)dmg, dmg == 1 ? "" : "s");
    printf(", %d to compute\n", s->nu - n_kept);
    fflush(stdout);
  }
  return n_kept;
}

void svm_journal_unit(void *ctx, int u, int32_t errors, double cpu_s) {
  svm_journal_t *s = ctx;
  if (s->writing) {
    char err[4600];
    unit_journal_begin(&s->j, u);
    unit_journal_add(&s->j, " %d %.17g", (int)errors, cpu_s);
    if (unit_journal_commit(&s->j, err, sizeof err) != 0) {
      fprintf(stderr, "mnist_svm: rank %d: warning: %s; this run goes on without a journal\n",
              s->rank, err);
      unit_journal_close(&s->j);
      s->writing = 0;
    }
  }
  if (s->crash_after > 0 && ++s->done == s->crash_after) {
    fprintf(stderr, "mnist_svm: rank %d: HV_SVM_CRASH_AFTER_UNITS=%d: killing myself\n", s->rank,
            s->crash_after);
    fflush(NULL);
    raise(SIGKILL);
  }
}

void svm_journal_close(svm_journal_t *s) {
  unit_journal_close(&s->j);
  s->writing = 0;
  free(s->have);
  s->have = NULL;
}
