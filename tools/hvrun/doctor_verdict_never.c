/* doctor_verdict_never.c: verdict 6 of doctor_verdict.c, names some ranks wait for
 * that a rank never submitted (the ranks' pending lists compared, and rank 0's
 * coordinator view), when the ranks lacking it are not the majority. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_verdict.h"

static const doctor_event_t *last_event(const doctor_comm_t *c) {
  const doctor_event_t *best = NULL;
  for (int i = 0; c && i < c->nevents; i++)
    if (!best || c->events[i].t_submit >= best->t_submit) best = &c->events[i]; /* ordered and named seqs differ */
  return best;
}

/* Has world rank w (not pending name) submitted the instance others wait for since
 * t_first (their earliest submission, their clock)? Only its own later instance says so. */
static int submitted_since(const doctor_comm_t *c, const char *name, double t_first) {
  for (int i = 0; c && i < c->nevents; i++)
    if (!strcmp(c->events[i].name, name) && c->events[i].t_submit >= t_first) return 1;
  return 0;
}

static void never_line(an_t *a, int w, int index, const char *name) {
  const doctor_rank_t *r = &a->m->ranks[w];
  const doctor_comm_t *c = dv_comm_of(r, index);
  const doctor_event_t *last = last_event(c);
  char tail[1200];
  const char *phase = c ? c->phase : "user";
  char state[900];
  if (!strcmp(phase, "user")) snprintf(state, sizeof state, "it has been in user code since");
  else if (!strcmp(phase, "stopped")) snprintf(state, sizeof state, "its engine stopped: %s", c->error);
  else if (c->npending > 0)
    snprintf(state, sizeof state, "it has been %s '%s' since", !strcmp(phase, "executing") ? "executing" : "negotiating",
             c->pending[0].name);
  else snprintf(state, sizeof state, "it has been %s since", phase);
  if (last)
    snprintf(tail, sizeof tail, "its last submission was '%s' %.1f s ago and %s", last->name, r->time - last->t_submit,
             state);
  else if (!strcmp(phase, "user"))
    snprintf(tail, sizeof tail, "it has submitted nothing it still remembers and it has been in user code for %.1f s",
             r->time - c->since);
  else snprintf(tail, sizeof tail, "it has submitted nothing it still remembers and %s", state);
  dv_verdict(a, "rank %d never submitted '%s'; %s", w, name, tail);
}

/* hv_cuda.h calls (ordered, no name of the user's): their order is verdict_ordered's. */
static int ordered_name(const doctor_comm_t *c, const char *name) {
  for (int i = c ? c->nevents - 1 : -1; i >= 0; i--)
    if (!strcmp(c->events[i].name, name)) return c->events[i].ordered;
  return 0;
}

void dv_verdict_never(an_t *a, int index, int *blamed) {
  /* per rank: the oldest name others wait for that it lacks */
  const char **oldest = calloc((size_t)a->n, sizeof *oldest);
  double *age = calloc((size_t)a->n, sizeof *age);
  if (!oldest || !age) goto out;
  for (int s = 0; s < a->n; s++) {
    const doctor_comm_t *c = dv_comm_of(&a->m->ranks[s], index);
    if (!c || a->cause[s]) continue;
    for (int i = 0; i < c->npending; i++) {
      const doctor_pending_t *p = &c->pending[i];
      double old = a->m->ranks[s].time - p->t_submit;
      if (old < PENDING_OLD_S || ordered_name(c, p->name)) continue;
      /* The ranks that lack it are at fault only when they are not the majority: a
       * name only a few ranks submitted, while the others wait for another one, is
       * ahead of them (they will submit it once unblocked), not missing. */
      int lacking = 0, having = 0;
      for (int pass = 0; pass < 2; pass++)
        for (int w = 0; w < a->n; w++) {
          const doctor_comm_t *d = dv_comm_of(&a->m->ranks[w], index);
          if (!d || a->cause[w]) continue;
          if (dv_has_pending(d, p->name, NULL)) {
            having += pass == 0;
            continue;
          }
          /* same host: the clocks agree, so a later instance proves a submission */
          if (!strcmp(a->m->ranks[w].host, a->m->ranks[s].host) && submitted_since(d, p->name, p->t_submit)) continue;
          if (pass == 0) lacking++;
          else if (lacking <= having && old > age[w]) age[w] = old, oldest[w] = p->name;
        }
    }
    /* rank 0's coordinator: names not submitted by ranks it lists as missing */
    for (int i = 0; i < c->ncwait; i++) {
      const doctor_cwait_t *cw = &c->cwait[i];
      double old = isnan(cw->first_seen) ? PENDING_OLD_S : a->m->ranks[s].time - cw->first_seen;
      if (old < PENDING_OLD_S || cw->nmissing > cw->nsubmitted) continue; /* ahead, as above */
      for (int k = 0; k < cw->nmissing; k++) {
        int w = dv_world_of(a, index, cw->missing[k]);
        if (w < 0 || a->cause[w]) continue;
        const doctor_comm_t *d = dv_comm_of(&a->m->ranks[w], index);
        if (d && dv_has_pending(d, cw->name, NULL)) continue; /* it has since */
        if (old > age[w]) age[w] = old, oldest[w] = cw->name;
      }
    }
  }
  for (int w = 0; w < a->n; w++)
    if (oldest[w] && !blamed[w]) {
      if (a->m->ranks[w].present) never_line(a, w, index, oldest[w]);
      else dv_verdict(a, "rank %d never submitted '%s'; it left no document (not started, or gone without a trace)", w,
                      oldest[w]);
      blamed[w] = 1;
    }
out:
  free(oldest), free(age);
}
