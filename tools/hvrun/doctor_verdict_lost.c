/* doctor_verdict_lost.c: verdicts 1-3 of doctor_verdict.c, ranks that are no longer
 * there for the others: dead (the process is gone: live probe, or the survivors'
 * errors say so), stopped (/proc says T, or the survivors say so), and shut down
 * early (their own dump at hv_shutdown while others wait, a live process without its
 * socket, or the survivors' "shut down the communicator" / "called hv_shutdown"). */
#include <stdlib.h>
#include <string.h>

#include "doctor_verdict.h"

static int is_live_answer(const an_t *a, int w) {
  return a->m->live && a->m->ranks[w].proc == DOCTOR_PROC_ANSWERED;
}

static int collect(an_t *a, int *out, int (*pick)(const an_t *, int)) {
  int k = 0;
  for (int w = 0; w < a->n; w++)
    if (!a->cause[w] && pick(a, w)) out[k++] = w;
  return k;
}

static int pick_dead(const an_t *a, int w) {
  const doctor_rank_t *r = &a->m->ranks[w];
  if (r->proc == DOCTOR_PROC_GONE) return 1;
  if (!a->gone_claim[w] || is_live_answer(a, w)) return 0;
  return !r->present || strcmp(r->reason, "exit") != 0;
}

static int pick_stopped(const an_t *a, int w) {
  const doctor_rank_t *r = &a->m->ranks[w];
  if (r->proc == DOCTOR_PROC_STOPPED) return 1;
  return a->stopped_claim[w] && !is_live_answer(a, w) && (!r->present || !a->m->live);
}

/* Anybody else (not explained) with something pending or failed. */
static int others_wait(const an_t *a, int w) {
  for (int v = 0; v < a->n; v++) {
    const doctor_comm_t *c = dv_comm_of(&a->m->ranks[v], 0);
    if (v == w || !c || a->cause[v]) continue;
    if (c->npending > 0 || c->error[0]) return 1;
    for (int i = 0; i < c->nevents; i++)
      if (!strcmp(c->events[i].state, "failed")) return 1;
  }
  return 0;
}

static int pick_shutdown(const an_t *a, int w) {
  const doctor_rank_t *r = &a->m->ranks[w];
  if (r->proc == DOCTOR_PROC_NO_SOCKET) return 1;
  if (a->shutdown_claim[w]) return 1;
  /* its own dump at hv_shutdown with everything of its own completed (not a survivor
   * whose requests failed and which then shut down too), while others wait or failed */
  const doctor_comm_t *c = dv_comm_of(r, 0);
  if (!r->present || strcmp(r->reason, "exit") != 0 || !c || c->error[0] || c->npending) return 0;
  for (int i = 0; i < c->nevents; i++)
    if (dv_unfinished(&c->events[i])) return 0;
  return others_wait(a, w);
}

/* The ranks pick finds (not explained yet) get cause, in one verdict: "<ranks> <one
 * or many><during>". Dead and stopped ranks read the same way. */
static void verdict_gone(an_t *a, int *set, int (*pick)(const an_t *, int), int cause, const char *one,
                         const char *many) {
  char who[600], dur[600];
  int k = collect(a, set, pick);
  if (!k) return;
  for (int i = 0; i < k; i++) a->cause[set[i]] = cause;
  dv_during(dv_waited_name(a, a->cause), dur, sizeof dur);
  dv_verdict(a, "%s %s%s", dv_ranks_phrase(set, k, who, sizeof who), k > 1 ? many : one, dur);
}

void dv_verdict_lost(an_t *a) {
  int *set = calloc((size_t)a->n, sizeof *set), *rest = calloc((size_t)a->n, sizeof *rest);
  char who[600];
  if (!set || !rest) goto out;
  verdict_gone(a, set, pick_dead, CAUSE_DEAD, "died (its process is gone)", "died (their processes are gone)");
  verdict_gone(a, set, pick_stopped, CAUSE_STOPPED, "is stopped (process state T: SIGSTOP or a debugger)",
               "are stopped (process state T: SIGSTOP or a debugger)");
  int k = collect(a, set, pick_shutdown);
  if (k) {
    for (int i = 0; i < k; i++) a->cause[set[i]] = CAUSE_SHUTDOWN;
    int nr = 0;
    for (int w = 0; w < a->n; w++)
      if (!a->cause[w] && (a->m->ranks[w].present || a->m->ranks[w].proc != DOCTOR_PROC_NONE)) rest[nr++] = w;
    const char *name = dv_waited_name(a, a->cause);
    char others[600];
    if (nr && name)
      dv_verdict(a, "%s shut down (hv_shutdown) while %s wait for '%s'", dv_ranks_phrase(set, k, who, sizeof who),
                 dv_ranks_phrase(rest, nr, others, sizeof others), name);
    else if (nr)
      dv_verdict(a, "%s shut down (hv_shutdown) while %s still run", dv_ranks_phrase(set, k, who, sizeof who),
                 dv_ranks_phrase(rest, nr, others, sizeof others));
    else
      dv_verdict(a, "%s shut down (hv_shutdown)", dv_ranks_phrase(set, k, who, sizeof who));
  }
out:
  free(set), free(rest);
}
