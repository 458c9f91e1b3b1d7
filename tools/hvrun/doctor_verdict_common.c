/* doctor_verdict_common.c: what the verdict families share (doctor_verdict.h): rank
 * lists as text, communicators and ranks of the model, the verdict line itself, the
 * name the ranks wait for, events in seq order. It decides nothing. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_verdict.h"

void doctor_ranks_text(const int *ranks, int n, char *out, size_t len) {
  int *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s), k = 0;
  out[0] = '\0';
  if (!s) return;
  for (int i = 0; i < n; i++) { /* insertion sort, distinct */
    int v = ranks[i], j = k;
    int dup = 0;
    for (int q = 0; q < k; q++) dup |= s[q] == v;
    if (dup) continue;
    while (j > 0 && s[j - 1] > v) s[j] = s[j - 1], j--;
    s[j] = v, k++;
  }
  size_t used = 0;
  for (int i = 0; i < k && used < len;) {
    int j = i;
    while (j + 1 < k && s[j + 1] == s[j] + 1) j++;
    int w = j > i ? snprintf(out + used, len - used, "%s%d-%d", i ? "," : "", s[i], s[j])
                  : snprintf(out + used, len - used, "%s%d", i ? "," : "", s[i]);
    if (w < 0) break;
    used += (size_t)w;
    i = j + 1;
  }
  free(s);
}

const char *dv_ranks_phrase(const int *ranks, int n, char *out, size_t len) {
  char t[512];
  doctor_ranks_text(ranks, n, t, sizeof t);
  int distinct = 1;
  for (int i = 1; i < n; i++) distinct += ranks[i] != ranks[0];
  snprintf(out, len, "%s %s", distinct > 1 ? "ranks" : "rank", t);
  return out;
}

const doctor_comm_t *dv_comm_of(const doctor_rank_t *r, int index) {
  for (int i = 0; r->present && i < r->ncomms; i++)
    if (r->comms[i].index == index) return &r->comms[i];
  return NULL;
}

int dv_world_of(const an_t *a, int index, int q) {
  if (index == 0) return q < a->n ? q : -1;
  for (int w = 0; w < a->n; w++) {
    const doctor_comm_t *c = dv_comm_of(&a->m->ranks[w], index);
    if (c && c->rank == q) return w;
  }
  return -1;
}

void dv_verdict(an_t *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("verdict: ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  va_end(ap);
  a->nverdicts++;
}

const char *dv_waited_name(const an_t *a, const int *skip) {
  const char *best = NULL;
  int best_n = 0;
  double best_t = INFINITY;
  for (int w = 0; w < a->n; w++) {
    const doctor_comm_t *c = dv_comm_of(&a->m->ranks[w], 0);
    if (!c || (skip && skip[w])) continue;
    for (int i = 0; i < c->npending; i++) {
      const char *name = c->pending[i].name;
      int cnt = 0;
      for (int v = 0; v < a->n; v++) {
        const doctor_comm_t *d = dv_comm_of(&a->m->ranks[v], 0);
        for (int j = 0; d && !(skip && skip[v]) && j < d->npending; j++)
          if (!strcmp(d->pending[j].name, name)) {
            cnt++;
            break;
          }
      }
      if (cnt > best_n || (cnt == best_n && c->pending[i].t_submit < best_t))
        best = name, best_n = cnt, best_t = c->pending[i].t_submit;
    }
  }
  if (best) return best;
  /* nothing pending (the requests failed): on each rank the first of its trailing
   * unfinished events (after its last completion), the name most ranks agree on */
  const char **first = calloc(a->n > 0 ? (size_t)a->n : 1, sizeof *first);
  if (!first) return NULL;
  for (int w = 0; w < a->n; w++) {
    const doctor_comm_t *c = dv_comm_of(&a->m->ranks[w], 0);
    if (!c || (skip && skip[w])) continue;
    for (int i = c->nevents - 1; i >= 0 && strcmp(c->events[i].state, "done") != 0; i--) first[w] = c->events[i].name;
  }
  for (int w = 0; w < a->n; w++) {
    int cnt = 0;
    for (int v = 0; first[w] && v < a->n; v++) cnt += first[v] && !strcmp(first[v], first[w]);
    if (cnt > best_n) best = first[w], best_n = cnt;
  }
  free(first);
  return best;
}

void dv_during(const char *name, char *out, size_t len) {
  if (name) snprintf(out, len, " during '%s'", name);
  else out[0] = '\0';
}

int dv_unfinished(const doctor_event_t *e) { return strcmp(e->state, "done") != 0; }

void dv_signature(const doctor_event_t *e, char *out, size_t len) {
  if (e->count >= 0) snprintf(out, len, "%s %s x%lld", e->coll, e->dtype[0] ? e->dtype : "?", e->count);
  else snprintf(out, len, "%s %s", e->coll, e->dtype[0] ? e->dtype : "?");
}

int dv_has_pending(const doctor_comm_t *c, const char *name, double *t) {
  for (int i = 0; c && i < c->npending; i++)
    if (!strcmp(c->pending[i].name, name)) {
      if (t) *t = c->pending[i].t_submit;
      return 1;
    }
  return 0;
}

evview_t dv_view_of(const doctor_comm_t *c, int ordered) {
  evview_t vw = {NULL, 0};
  if (!c || !(vw.v = malloc((size_t)(c->nevents > 0 ? c->nevents : 1) * sizeof *vw.v))) return vw;
  for (int i = 0; i < c->nevents; i++)
    if (!!c->events[i].ordered == !!ordered && (vw.n == 0 || c->events[i].seq > vw.v[vw.n - 1]->seq))
      vw.v[vw.n++] = &c->events[i];
  return vw;
}

const doctor_event_t *dv_view_at(const evview_t *vw, long long seq) {
  int lo = 0, hi = vw->n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (vw->v[mid]->seq == seq) return vw->v[mid];
    if (vw->v[mid]->seq < seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

void dv_views_free(evview_t *vs, int n) {
  for (int i = 0; vs && i < n; i++) free(vs[i].v);
  free(vs);
}
