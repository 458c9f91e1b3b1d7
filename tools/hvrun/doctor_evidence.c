/* doctor_evidence.c: what `hvrun --analyze` prints after the verdicts (each rank's
 * state, the names submitted by some ranks only) and `hvrun --status`'s lines per
 * rank. It decides nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_verdict.h"

static void event_text(const doctor_event_t *e, double now, char *out, size_t len) {
  char sig[300];
  dv_signature(e, sig, sizeof sig);
  double t = !isnan(e->t_finished) ? e->t_finished : e->t_submit;
  snprintf(out, len, "'%s' %s%s%s%s, %.1f s ago", e->name, sig, e->algo[0] ? " (" : "", e->algo,
           e->algo[0] ? ")" : "", now - t);
}

static const char *proc_text(const doctor_rank_t *r) {
  switch (r->proc) {
  case DOCTOR_PROC_GONE: return "gone";
  case DOCTOR_PROC_STOPPED: return "stopped";
  case DOCTOR_PROC_BUSY: return "not answering";
  case DOCTOR_PROC_NO_SOCKET: return "no status socket";
  case DOCTOR_PROC_NONE: return "no document";
  case DOCTOR_PROC_ANSWERED: break;
  }
  return "answered";
}

void dv_rank_line(const doctor_model_t *m, int w, const char *indent) {
  const doctor_rank_t *r = &m->ranks[w];
  if (!r->present) {
    const char *why = r->proc_detail[0] ? r->proc_detail
                      : m->live ? "no status socket here (on another node, ended, or before hv_init)"
                                : "no dump (killed, or cut off from this directory)";
    printf("%srank %d: %s: %s\n", indent, w, proc_text(r), why);
    return;
  }
  printf("%srank %d (host %s, pid %lld%s%s%s):", indent, w, r->host, r->pid, m->live ? "" : ", dump: ",
         m->live ? "" : r->reason, "");
  for (int i = 0; i < r->ncomms; i++) {
    const doctor_comm_t *c = &r->comms[i];
    if (r->ncomms > 1) printf("%s communicator %d (rank %d of %d):", i ? ";" : "", c->index, c->rank, c->size);
    const char *ph = !strcmp(c->phase, "user") ? "in user code" : c->phase;
    printf(" %s for %.1f s", ph, r->time - c->since);
    if (c->npending) {
      printf("; pending (%d):", c->npending);
      for (int k = 0; k < c->npending && k < 8; k++)
        printf("%s '%s' %s %.1f s", k ? "," : "", c->pending[k].name, c->pending[k].coll, r->time - c->pending[k].t_submit);
      if (c->npending > 8) printf(", ...");
    }
    if (c->waiting[0]) printf("; waiting for %s", c->waiting);
    if (c->error[0]) printf("; engine stopped: %s", c->error);
    if (c->last_completed) {
      char t[600];
      event_text(c->last_completed, r->time, t, sizeof t);
      printf("; last completed %s", t);
    } else printf("; nothing completed yet");
  }
  const doctor_comm_t *c0 = r->ncomms ? &r->comms[0] : NULL;
  if (!m->live && r->reason_detail[0] && !(c0 && !strcmp(c0->error, r->reason_detail)))
    printf("; dumped because: %s", r->reason_detail);
  printf("\n");
}

void doctor_status_lines_print(const doctor_model_t *m) {
  for (int w = 0; w < m->world_size; w++) dv_rank_line(m, w, "");
}

/* Names some ranks wait for and others do not have pending, with who is who. */
void dv_picture_print(const an_t *a) {
  int printed = 0;
  size_t n = a->n > 0 ? (size_t)a->n : 1;
  int *by = calloc(n, sizeof *by), *not = calloc(n, sizeof *not);
  if (!by || !not) goto out;
  for (int s = 0; s < a->n; s++) {
    const doctor_comm_t *c = dv_comm_of(&a->m->ranks[s], 0);
    for (int i = 0; c && i < c->npending; i++) {
      const char *name = c->pending[i].name;
      int seen = 0;
      for (int v = 0; v < s; v++) seen |= dv_has_pending(dv_comm_of(&a->m->ranks[v], 0), name, NULL);
      for (int j = 0; j < i; j++) seen |= !strcmp(c->pending[j].name, name);
      if (seen) continue;
      int nb = 0, nn = 0;
      for (int v = 0; v < a->n; v++) {
        const doctor_comm_t *d = dv_comm_of(&a->m->ranks[v], 0);
        if (dv_has_pending(d, name, NULL)) by[nb++] = v;
        else if (d) not[nn++] = v;
      }
      if (!nn) continue;
      if (!printed++) printf("names submitted by some ranks only:\n");
      char t1[600], t2[600];
      printf("  '%s' (%s): submitted by %s, not by %s\n", name, c->pending[i].coll,
             dv_ranks_phrase(by, nb, t1, sizeof t1), dv_ranks_phrase(not, nn, t2, sizeof t2));
    }
    for (int i = 0; c && i < c->ncwait; i++) {
      char t1[600], t2[600];
      int nb = 0, nn = 0;
      for (int k = 0; k < c->cwait[i].nsubmitted; k++) by[nb++] = dv_world_of(a, 0, c->cwait[i].submitted_by[k]);
      for (int k = 0; k < c->cwait[i].nmissing; k++) not[nn++] = dv_world_of(a, 0, c->cwait[i].missing[k]);
      if (!printed++) printf("names submitted by some ranks only:\n");
      printf("  '%s' (%s, rank %d's coordinator, first seen %.1f s ago): submitted by %s, missing from %s\n",
             c->cwait[i].name, c->cwait[i].coll, s, a->m->ranks[s].time - c->cwait[i].first_seen,
             nb ? dv_ranks_phrase(by, nb, t1, sizeof t1) : "no rank",
             nn ? dv_ranks_phrase(not, nn, t2, sizeof t2) : "no rank");
    }
  }
out:
  free(by), free(not);
}
