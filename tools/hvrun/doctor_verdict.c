/* doctor_verdict.c: the verdicts of `hvrun --analyze` and `hvrun --status` over the
 * model of doctor.h, in the exact wordings of FLIGHT_RECORDER.md, then the evidence.
 *
 * Causes are looked for from the most to the least definite, and a rank explained by
 * one is not blamed again by the next (a dead rank also "never submitted" what the
 * others wait for, but that is not news):
 *   1. dead ranks: the process is gone (live probe), or the survivors' errors say so
 *      ("rank N on host H (pid P) is gone");
 *   2. stopped ranks: /proc says T (live probe), or the survivors' errors say so;
 *   3. ranks that shut down early: their own dump at hv_shutdown while others wait, a
 *      live process without its socket, or the survivors' errors ("shut down the
 *      communicator", "called hv_shutdown");
 *   4. a node that stopped answering: ranks that hit HV_TIMEOUT name peers on another
 *      host, whose ranks are missing or accuse the other side too;
 *   5. mismatches: the same name submitted with different coll/dtype/count (latest
 *      unfinished instance on each rank), ordered (GPU) calls that differ at one seq;
 *   6. names some ranks wait for that a rank never submitted (rank 0's coordinator
 *      view, and the ranks' pending lists compared);
 *   7. a straggler, from the per-step first submissions (at least STRAGGLER_MIN_STEPS
 *      steps of evidence), measured without comparing clocks of different hosts;
 *   8. otherwise: old pending collectives without a cause found, an engine error, or
 *      "no hang".
 * Ranks are world ranks; the texts of the engine name communicator ranks, the same
 * for the world (comms[0]), which is the communicator the texts are read from. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "hvrun.h"

/* A name pending for less than this long is traffic, not a hang (status snapshots of
 * different ranks are a few ms apart). */
#define PENDING_OLD_S 1.0
#define STRAGGLER_MIN_STEPS 5
#define STRAGGLER_MIN_S 0.020
/* A step starts with a submission after the rank was idle (in user code) at least this
 * long: a control collective submitted right after the last completion is not one. */
#define STEP_GAP_S 0.0005

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

/* "rank 3" or "ranks 0,2-3" */
static const char *ranks_phrase(const int *ranks, int n, char *out, size_t len) {
  char t[512];
  doctor_ranks_text(ranks, n, t, sizeof t);
  int distinct = 1;
  for (int i = 1; i < n; i++) distinct += ranks[i] != ranks[0];
  snprintf(out, len, "%s %s", distinct > 1 ? "ranks" : "rank", t);
  return out;
}

/* ---- the analysis state ---------------------------------------------------- */

enum { CAUSE_NONE, CAUSE_DEAD, CAUSE_STOPPED, CAUSE_SHUTDOWN, CAUSE_NODE };

typedef struct {
  const doctor_model_t *m;
  int n;
  char (*host)[64];   /* per world rank: from its document or the others' texts */
  int *gone_claim;    /* 1 when a survivor's text says it is gone */
  int *stopped_claim; /* ... stopped */
  int *shutdown_claim;
  int *accused;       /* named as the peer a timed-out rank waited for */
  int *timed_out;     /* hit HV_TIMEOUT (its own texts) */
  int *cause;         /* CAUSE_*: explained by a verdict already */
  int nverdicts;
} an_t;

static const doctor_comm_t *comm_of(const doctor_rank_t *r, int index) {
  for (int i = 0; r->present && i < r->ncomms; i++)
    if (r->comms[i].index == index) return &r->comms[i];
  return NULL;
}

/* The world rank of communicator rank q of communicator index, or -1. */
static int world_of(const an_t *a, int index, int q) {
  if (index == 0) return q < a->n ? q : -1;
  for (int w = 0; w < a->n; w++) {
    const doctor_comm_t *c = comm_of(&a->m->ranks[w], index);
    if (c && c->rank == q) return w;
  }
  return -1;
}

static void verdict(an_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verdict(an_t *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("verdict: ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  va_end(ap);
  a->nverdicts++;
}

/* Reads "rank N on host H" phrases of one text of world rank `from`. */
static void scan_text(an_t *a, int from, const char *t) {
  if (!t || !*t) return;
  int timeout = strstr(t, "HV_TIMEOUT") != NULL;
  if (timeout && from >= 0) a->timed_out[from] = 1;
  for (const char *p = t; (p = strstr(p, "rank ")) != NULL; p++) {
    if (p > t && (p[-1] != ' ' && p[-1] != '(' && p[-1] != ',')) continue;
    char *end;
    long q = strtol(p + 5, &end, 10);
    if (end == p + 5 || q < 0 || q >= a->n || strncmp(end, " on host ", 9) != 0) continue;
    const char *h = end + 9;
    size_t hl = strcspn(h, " ,;:()");
    if (hl > 0 && hl < sizeof a->host[0] && !a->host[q][0]) {
      memcpy(a->host[q], h, hl);
      a->host[q][hl] = '\0';
    }
    const char *after = h + hl;
    if (!strncmp(after, " (pid ", 6)) after = strchr(after, ')') ? strchr(after, ')') + 1 : after;
    if (!strncmp(after, " is gone", 8)) a->gone_claim[q] = 1;
    else if (!strncmp(after, " is stopped", 11)) a->stopped_claim[q] = 1;
    else if (!strncmp(after, " shut down", 10) || !strncmp(after, " called hv_shutdown", 19)) a->shutdown_claim[q] = 1;
    else if (!strncmp(after, " waited longer than HV_TIMEOUT", 30)) a->timed_out[q] = 1;
    else if (timeout && !strncmp(after, " waited longer", 14)) {
      /* a stall report's reporter, not the accused */
    } else if (timeout && p - t >= 5) {
      /* "from rank 3 on host h", "with rank 3 on host h", "for rank 3 ...": the peer waited for */
      const char *w = p - 1;
      while (w > t && w[-1] != ' ' && w[-1] != '(') w--;
      if (!strncmp(w, "from ", 5) || !strncmp(w, "with ", 5) || !strncmp(w, "for ", 4) || !strncmp(w, "to ", 3))
        a->accused[q] = 1;
    }
  }
}

static int is_live_answer(const an_t *a, int w) {
  return a->m->live && a->m->ranks[w].proc == DOCTOR_PROC_ANSWERED;
}

/* The name most ranks (not explained yet, not in skip) wait for, oldest first; else the
 * first of the requests that failed. NULL when none. */
static const char *waited_name(const an_t *a, const int *skip) {
  const char *best = NULL;
  int best_n = 0;
  double best_t = INFINITY;
  for (int w = 0; w < a->n; w++) {
    const doctor_comm_t *c = comm_of(&a->m->ranks[w], 0);
    if (!c || (skip && skip[w])) continue;
    for (int i = 0; i < c->npending; i++) {
      const char *name = c->pending[i].name;
      int cnt = 0;
      for (int v = 0; v < a->n; v++) {
        const doctor_comm_t *d = comm_of(&a->m->ranks[v], 0);
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
    const doctor_comm_t *c = comm_of(&a->m->ranks[w], 0);
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

static void during(const char *name, char *out, size_t len) {
  if (name) snprintf(out, len, " during '%s'", name);
  else out[0] = '\0';
}

static int unfinished(const doctor_event_t *e);

/* ---- 1-4: ranks that are gone, stopped, shut down, or cut off ---------------- */

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
    const doctor_comm_t *c = comm_of(&a->m->ranks[v], 0);
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
  const doctor_comm_t *c = comm_of(r, 0);
  if (!r->present || strcmp(r->reason, "exit") != 0 || !c || c->error[0] || c->npending) return 0;
  for (int i = 0; i < c->nevents; i++)
    if (unfinished(&c->events[i])) return 0;
  return others_wait(a, w);
}

static void verdict_lost(an_t *a) {
  int *set = calloc((size_t)a->n, sizeof *set), *rest = calloc((size_t)a->n, sizeof *rest);
  char who[600], dur[600];
  if (!set || !rest) goto out;
  int k = collect(a, set, pick_dead);
  if (k) {
    for (int i = 0; i < k; i++) a->cause[set[i]] = CAUSE_DEAD;
    during(waited_name(a, a->cause), dur, sizeof dur);
    verdict(a, "%s died (%s)%s", ranks_phrase(set, k, who, sizeof who),
            k > 1 ? "their processes are gone" : "its process is gone", dur);
  }
  k = collect(a, set, pick_stopped);
  if (k) {
    for (int i = 0; i < k; i++) a->cause[set[i]] = CAUSE_STOPPED;
    during(waited_name(a, a->cause), dur, sizeof dur);
    verdict(a, "%s %s stopped (process state T: SIGSTOP or a debugger)%s", ranks_phrase(set, k, who, sizeof who),
            k > 1 ? "are" : "is", dur);
  }
  k = collect(a, set, pick_shutdown);
  if (k) {
    for (int i = 0; i < k; i++) a->cause[set[i]] = CAUSE_SHUTDOWN;
    int nr = 0;
    for (int w = 0; w < a->n; w++)
      if (!a->cause[w] && (a->m->ranks[w].present || a->m->ranks[w].proc != DOCTOR_PROC_NONE)) rest[nr++] = w;
    const char *name = waited_name(a, a->cause);
    char others[600];
    if (nr && name)
      verdict(a, "%s shut down (hv_shutdown) while %s wait for '%s'", ranks_phrase(set, k, who, sizeof who),
              ranks_phrase(rest, nr, others, sizeof others), name);
    else if (nr)
      verdict(a, "%s shut down (hv_shutdown) while %s still run", ranks_phrase(set, k, who, sizeof who),
              ranks_phrase(rest, nr, others, sizeof others));
    else
      verdict(a, "%s shut down (hv_shutdown)", ranks_phrase(set, k, who, sizeof who));
  }
out:
  free(set), free(rest);
}

/* Ranks of one host named by accusers on other hosts: the timed-out ranks' texts
 * (waited_s 0), or live waits that cross hosts (waited_s: how long). Returns 1 when a
 * verdict was given. */
static int verdict_node(an_t *a, const int *accuser, const int *accused, double waited_s) {
  /* hosts of accused ranks, where the accusers are elsewhere */
  int best = -1, best_score = 0, best_missing = -1;
  for (int q = 0; q < a->n; q++) {
    if (!accused[q] || a->cause[q] || !a->host[q][0]) continue;
    int seen = 0;
    for (int p = 0; p < q; p++) seen |= accused[p] && !a->cause[p] && !strcmp(a->host[p], a->host[q]);
    if (seen) continue;
    int score = 0, missing = 0;
    for (int w = 0; w < a->n; w++) {
      if (accuser[w] && strcmp(a->host[w], a->host[q]) != 0 && a->m->ranks[w].present) score++;
      if (!strcmp(a->host[w], a->host[q]) && !a->m->ranks[w].present) missing++;
    }
    /* ties (both sides of a cut accuse each other): the side with ranks missing, then
     * the side without rank 0 (rank 0's side is the reference) */
    int tie = score == best_score && score > 0 && missing == best_missing;
    if (score > best_score || (score == best_score && score > 0 && missing > best_missing) ||
        (tie && !strcmp(a->host[best], a->host[0]) && strcmp(a->host[q], a->host[0]) != 0))
      best = q, best_score = score, best_missing = missing;
  }
  if (best < 0) return 0;
  const char *h = a->host[best];
  int *cut = calloc((size_t)a->n, sizeof *cut), *acc = calloc((size_t)a->n, sizeof *acc), nc = 0, na = 0;
  if (!cut || !acc) goto out;
  for (int w = 0; w < a->n; w++) {
    if (a->cause[w]) continue;
    if (!strcmp(a->host[w], h) || (!a->host[w][0] && !a->m->ranks[w].present)) cut[nc++] = w;
    else if (accuser[w]) acc[na++] = w;
  }
  for (int i = 0; i < nc; i++) a->cause[cut[i]] = CAUSE_NODE;
  char who[600], by[600], dur[600];
  during(waited_name(a, a->cause), dur, sizeof dur);
  ranks_phrase(acc, na, by, sizeof by);
  if (waited_s > 0)
    verdict(a, "%s on host %s stopped answering (network?)%s: %s %s waited %.1f s for them",
            ranks_phrase(cut, nc, who, sizeof who), h, dur, by, na > 1 ? "have" : "has", waited_s);
  else
    verdict(a, "%s on host %s stopped answering (network?)%s: HV_TIMEOUT on %s", ranks_phrase(cut, nc, who, sizeof who),
            h, dur, na ? by : "the others");
out:
  free(cut), free(acc);
  return 1;
}

/* Before HV_TIMEOUT: every rank still here waits, each on a peer of another host, for
 * at least PENDING_OLD_S (inside an algorithm, plus what its bytes could take: a long
 * transfer is not a cut), and none is in user code: the hosts no longer hear each other. */
static void verdict_node_waits(an_t *a) {
  int *accuser = calloc((size_t)a->n, sizeof(int)), *accused = calloc((size_t)a->n, sizeof(int));
  int *follower = calloc((size_t)a->n, sizeof(int));
  int waiting = 0, ok = 1, hosts_differ = 0;
  double waited = INFINITY;
  for (int w = 0; accuser && accused && w < a->n && ok; w++) {
    const doctor_comm_t *c = comm_of(&a->m->ranks[w], 0);
    if (!c || a->cause[w]) continue;
    double age = a->m->ranks[w].time - c->since;
    int p = c->waiting_peer;
    /* inside an algorithm, the time its bytes could take at a pessimistic 50 MB/s */
    double running = 0;
    for (int i = 0; i < c->nevents; i++)
      if (!strcmp(c->events[i].state, "running") && c->events[i].bytes > 0) running += (double)c->events[i].bytes;
    int long_wait = (!strcmp(c->phase, "negotiating") && age >= PENDING_OLD_S) ||
                    (!strcmp(c->phase, "executing") && age >= PENDING_OLD_S + running / 50e6);
    if (!long_wait) ok = 0;
    else if (p < 0 || p >= a->n || !a->host[p][0] || !strcmp(a->host[p], a->host[w]))
      follower[w] = 1; /* waits inside its node (a node barrier, a local peer) */
    else {
      accuser[w] = 1, accused[p] = 1, waiting++;
      hosts_differ = 1;
      if (age < waited) waited = age;
    }
  }
  /* A rank waiting inside its node is held up by a local rank that waits across the
   * network (the hierarchical allreduce's node phase behind its cross-node phase): it
   * is part of the picture when some rank of its host accuses another host, and
   * spoils it otherwise. */
  for (int w = 0; ok && follower && w < a->n; w++) {
    if (!follower[w]) continue;
    int led = 0;
    for (int v = 0; v < a->n; v++) led |= accuser[v] && !strcmp(a->host[v], a->host[w]);
    if (!led) ok = 0;
  }
  for (int w = 0; ok && follower && w < a->n; w++)
    if (follower[w]) accuser[w] = 1; /* named among those who wait */
  if (ok && follower && waiting >= 2 && hosts_differ) verdict_node(a, accuser, accused, waited);
  free(accuser), free(accused), free(follower);
}

/* ---- 5: mismatches ----------------------------------------------------------- */

static int unfinished(const doctor_event_t *e) { return strcmp(e->state, "done") != 0; }

static void signature(const doctor_event_t *e, char *out, size_t len) {
  if (e->count >= 0) snprintf(out, len, "%s %s x%lld", e->coll, e->dtype[0] ? e->dtype : "?", e->count);
  else snprintf(out, len, "%s %s", e->coll, e->dtype[0] ? e->dtype : "?");
}

/* Groups ranks by a string of theirs; prints "ranks A and ranks B" style text. */
typedef struct {
  char key[256];
  int *ranks, n;
} group_t;

static int group_add(group_t *g, int ng, int cap, const char *key, int w) {
  for (int i = 0; i < ng; i++)
    if (!strcmp(g[i].key, key)) {
      g[i].ranks[g[i].n++] = w;
      return ng;
    }
  if (ng == cap) return ng;
  snprintf(g[ng].key, sizeof g[ng].key, "%s", key);
  g[ng].ranks[0] = w, g[ng].n = 1;
  return ng + 1;
}

static group_t *groups_new(int cap, int n) {
  group_t *g = calloc((size_t)cap, sizeof *g);
  for (int i = 0; g && i < cap; i++)
    if (!(g[i].ranks = calloc((size_t)n, sizeof(int)))) return NULL;
  return g;
}

static void groups_free(group_t *g, int cap) {
  for (int i = 0; g && i < cap; i++) free(g[i].ranks);
  free(g);
}

/* The ordered (hv_cuda.h) or the named events of a communicator, each in seq order
 * (their seqs count different things), for binary search by seq. */
typedef struct {
  const doctor_event_t **v;
  int n;
} evview_t;

static evview_t view_of(const doctor_comm_t *c, int ordered) {
  evview_t vw = {NULL, 0};
  if (!c || !(vw.v = malloc((size_t)(c->nevents > 0 ? c->nevents : 1) * sizeof *vw.v))) return vw;
  for (int i = 0; i < c->nevents; i++)
    if (!!c->events[i].ordered == !!ordered && (vw.n == 0 || c->events[i].seq > vw.v[vw.n - 1]->seq))
      vw.v[vw.n++] = &c->events[i];
  return vw;
}

static const doctor_event_t *view_at(const evview_t *vw, long long seq) {
  int lo = 0, hi = vw->n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (vw->v[mid]->seq == seq) return vw->v[mid];
    if (vw->v[mid]->seq < seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

static void views_free(evview_t *vs, int n) {
  for (int i = 0; vs && i < n; i++) free(vs[i].v);
  free(vs);
}

/* Ordered (GPU) calls that differ at one seq; returns 1 when found. */
static int verdict_ordered(an_t *a, int index) {
  long long first = -1;
  int found = 0, ref = -1;
  group_t *g = groups_new(4, a->n);
  evview_t *vs = calloc((size_t)a->n, sizeof *vs);
  int *all = calloc((size_t)a->n, sizeof *all);
  if (!g || !vs || !all) goto out;
  for (int w = 0; w < a->n; w++) {
    vs[w] = view_of(comm_of(&a->m->ranks[w], index), 1);
    if (vs[w].n && (ref < 0 || vs[w].n > vs[ref].n)) ref = w;
  }
  /* the smallest seq at which a rank's call differs from the reference rank's (the one
   * that recorded most): O(ranks x events x log events) */
  for (int w = 0; ref >= 0 && w < a->n; w++)
    for (int i = 0; w != ref && i < vs[w].n; i++) {
      const doctor_event_t *e = vs[w].v[i], *f;
      if (first >= 0 && e->seq >= first) break;
      if ((f = view_at(&vs[ref], e->seq)) && strcmp(f->name, e->name) != 0) {
        first = e->seq;
        break;
      }
    }
  if (first < 0) goto out;
  int ng = 0, nall = 0;
  for (int w = 0; w < a->n; w++) {
    const doctor_event_t *e = view_at(&vs[w], first);
    if (e) ng = group_add(g, ng, 4, e->name, w), all[nall++] = w;
  }
  int major = 0;
  for (int i = 1; i < ng; i++)
    if (g[i].n > g[major].n || (g[i].n == g[major].n && g[i].ranks[0] < g[major].ranks[0])) major = i;
  char who[600], text[2048] = "", one[700];
  size_t used = 0;
  for (int i = 0; i < ng; i++) {
    if (i == major) continue;
    int w = snprintf(text + used, sizeof text - used, "%s%s called %s", used ? ", " : "",
                     ranks_phrase(g[i].ranks, g[i].n, one, sizeof one), g[i].key);
    if (w > 0 && (size_t)w < sizeof text - used) used += (size_t)w;
  }
  verdict(a, "%s issued different GPU collectives at sequence %lld: %s, the others %s",
          ranks_phrase(all, nall, who, sizeof who), first, text, g[major].key);
  found = 1;
out:
  groups_free(g, 4);
  views_free(vs, vs ? a->n : 0);
  free(all);
  return found;
}

/* The same name submitted differently: the latest unfinished instance on each rank. */
static void verdict_mismatch(an_t *a, int index, int skip_ordered) {
  group_t *g = groups_new(8, a->n);
  if (!g) return;
  /* candidate names: every unfinished latest instance */
  for (int w = 0; w < a->n; w++) {
    const doctor_comm_t *c = comm_of(&a->m->ranks[w], index);
    for (int i = c ? c->nevents - 1 : -1; i >= 0; i--) {
      const doctor_event_t *e = &c->events[i];
      if (!unfinished(e) || (skip_ordered && e->ordered)) continue;
      /* only the latest instance of this name on this rank, and each name once */
      int later = 0, earlier_rank = 0;
      for (int j = i + 1; j < c->nevents; j++) later |= !strcmp(c->events[j].name, e->name);
      for (int v = 0; v < w && !earlier_rank; v++) {
        const doctor_comm_t *d = comm_of(&a->m->ranks[v], index);
        for (int j = 0; d && j < d->nevents; j++)
          if (unfinished(&d->events[j]) && !strcmp(d->events[j].name, e->name)) {
            earlier_rank = 1;
            break;
          }
      }
      if (later || earlier_rank) continue;
      int ng = 0;
      for (int v = 0; v < a->n; v++) {
        const doctor_comm_t *d = comm_of(&a->m->ranks[v], index);
        for (int j = d ? d->nevents - 1 : -1; j >= 0; j--)
          if (!strcmp(d->events[j].name, e->name)) {
            if (unfinished(&d->events[j])) {
              char sig[256];
              signature(&d->events[j], sig, sizeof sig);
              ng = group_add(g, ng, 8, sig, v);
            }
            break;
          }
      }
      if (ng > 1) {
        char text[2048] = "", sigs[2048] = "", one[700];
        size_t u1 = 0, u2 = 0;
        for (int k = 0; k < ng; k++) {
          int x = snprintf(text + u1, sizeof text - u1, "%s%s", k == 0 ? "" : k == ng - 1 ? " and " : ", ",
                           ranks_phrase(g[k].ranks, g[k].n, one, sizeof one));
          if (x > 0 && (size_t)x < sizeof text - u1) u1 += (size_t)x;
          x = snprintf(sigs + u2, sizeof sigs - u2, "%s%s", k ? " against " : "", g[k].key);
          if (x > 0 && (size_t)x < sizeof sigs - u2) u2 += (size_t)x;
        }
        verdict(a, "%s submitted '%s' differently: %s", text, e->name, sigs);
      }
    }
  }
  groups_free(g, 8);
}

/* ---- 6: names a rank never submitted ------------------------------------------ */

static int has_pending(const doctor_comm_t *c, const char *name, double *t) {
  for (int i = 0; c && i < c->npending; i++)
    if (!strcmp(c->pending[i].name, name)) {
      if (t) *t = c->pending[i].t_submit;
      return 1;
    }
  return 0;
}

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
  const doctor_comm_t *c = comm_of(r, index);
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
  verdict(a, "rank %d never submitted '%s'; %s", w, name, tail);
}

/* hv_cuda.h calls (ordered, no name of the user's): their order is verdict_ordered's. */
static int ordered_name(const doctor_comm_t *c, const char *name) {
  for (int i = c ? c->nevents - 1 : -1; i >= 0; i--)
    if (!strcmp(c->events[i].name, name)) return c->events[i].ordered;
  return 0;
}

static void verdict_never(an_t *a, int index, int *blamed) {
  /* per rank: the oldest name others wait for that it lacks */
  const char **oldest = calloc((size_t)a->n, sizeof *oldest);
  double *age = calloc((size_t)a->n, sizeof *age);
  if (!oldest || !age) goto out;
  for (int s = 0; s < a->n; s++) {
    const doctor_comm_t *c = comm_of(&a->m->ranks[s], index);
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
          const doctor_comm_t *d = comm_of(&a->m->ranks[w], index);
          if (!d || a->cause[w]) continue;
          if (has_pending(d, p->name, NULL)) {
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
        int w = world_of(a, index, cw->missing[k]);
        if (w < 0 || a->cause[w]) continue;
        const doctor_comm_t *d = comm_of(&a->m->ranks[w], index);
        if (d && has_pending(d, cw->name, NULL)) continue; /* it has since */
        if (old > age[w]) age[w] = old, oldest[w] = cw->name;
      }
    }
  }
  for (int w = 0; w < a->n; w++)
    if (oldest[w] && !blamed[w]) {
      if (a->m->ranks[w].present) never_line(a, w, index, oldest[w]);
      else verdict(a, "rank %d never submitted '%s'; it left no document (not started, or gone without a trace)", w,
                   oldest[w]);
      blamed[w] = 1;
    }
out:
  free(oldest), free(age);
}

/* ---- 7: a straggler ------------------------------------------------------------ */

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
static int verdict_straggler(an_t *a, int print) {
  int *who = calloc((size_t)a->n, sizeof *who), np = 0, found = 0, steps = 0, one_host = 1;
  evview_t *vs = calloc((size_t)a->n, sizeof *vs);
  double *wait = calloc((size_t)a->n, sizeof *wait), *tmp = calloc((size_t)a->n, sizeof *tmp);
  double **lag = calloc((size_t)a->n, sizeof *lag);
  if (!who || !vs || !wait || !tmp || !lag) goto out;
  for (int w = 0; w < a->n; w++) {
    evview_t vw = view_of(comm_of(&a->m->ranks[w], 0), 0);
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
      const doctor_event_t *f = view_at(&vs[k], e->seq);
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
      verdict(a, "rank %d is a straggler: it submits each step's first gradient %.0f ms (p50) after the median rank",
              who[worst], 1e3 * p50w);
  }
out:
  for (int i = 0; lag && i < np; i++) free(lag[i]);
  views_free(vs, np);
  free(lag), free(who), free(wait), free(tmp);
  return found;
}

/* ---- evidence --------------------------------------------------------------------- */

static void event_text(const doctor_event_t *e, double now, char *out, size_t len) {
  char sig[300];
  signature(e, sig, sizeof sig);
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

static void rank_line(const doctor_model_t *m, int w, const char *indent) {
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
  for (int w = 0; w < m->world_size; w++) rank_line(m, w, "");
}

/* Names some ranks wait for and others do not have pending, with who is who. */
static void picture_print(const an_t *a) {
  int printed = 0;
  size_t n = a->n > 0 ? (size_t)a->n : 1;
  int *by = calloc(n, sizeof *by), *not = calloc(n, sizeof *not);
  if (!by || !not) goto out;
  for (int s = 0; s < a->n; s++) {
    const doctor_comm_t *c = comm_of(&a->m->ranks[s], 0);
    for (int i = 0; c && i < c->npending; i++) {
      const char *name = c->pending[i].name;
      int seen = 0;
      for (int v = 0; v < s; v++) seen |= has_pending(comm_of(&a->m->ranks[v], 0), name, NULL);
      for (int j = 0; j < i; j++) seen |= !strcmp(c->pending[j].name, name);
      if (seen) continue;
      int nb = 0, nn = 0;
      for (int v = 0; v < a->n; v++) {
        const doctor_comm_t *d = comm_of(&a->m->ranks[v], 0);
        if (has_pending(d, name, NULL)) by[nb++] = v;
        else if (d) not[nn++] = v;
      }
      if (!nn) continue;
      if (!printed++) printf("names submitted by some ranks only:\n");
      char t1[600], t2[600];
      printf("  '%s' (%s): submitted by %s, not by %s\n", name, c->pending[i].coll, ranks_phrase(by, nb, t1, sizeof t1),
             ranks_phrase(not, nn, t2, sizeof t2));
    }
    for (int i = 0; c && i < c->ncwait; i++) {
      char t1[600], t2[600];
      int nb = 0, nn = 0;
      for (int k = 0; k < c->cwait[i].nsubmitted; k++) by[nb++] = world_of(a, 0, c->cwait[i].submitted_by[k]);
      for (int k = 0; k < c->cwait[i].nmissing; k++) not[nn++] = world_of(a, 0, c->cwait[i].missing[k]);
      if (!printed++) printf("names submitted by some ranks only:\n");
      printf("  '%s' (%s, rank %d's coordinator, first seen %.1f s ago): submitted by %s, missing from %s\n",
             c->cwait[i].name, c->cwait[i].coll, s, a->m->ranks[s].time - c->cwait[i].first_seen,
             nb ? ranks_phrase(by, nb, t1, sizeof t1) : "no rank", nn ? ranks_phrase(not, nn, t2, sizeof t2) : "no rank");
    }
  }
out:
  free(by), free(not);
}

/* ---- the driver --------------------------------------------------------------------- */

int doctor_verdicts_print(const doctor_model_t *m, int evidence) {
  an_t a = {0};
  a.m = m;
  a.n = m->world_size;
  a.host = calloc((size_t)a.n, sizeof *a.host);
  a.gone_claim = calloc((size_t)a.n, sizeof(int));
  a.stopped_claim = calloc((size_t)a.n, sizeof(int));
  a.shutdown_claim = calloc((size_t)a.n, sizeof(int));
  a.accused = calloc((size_t)a.n, sizeof(int));
  a.timed_out = calloc((size_t)a.n, sizeof(int));
  a.cause = calloc((size_t)a.n, sizeof(int));
  int *blamed = calloc((size_t)a.n, sizeof(int));
  if (!a.host || !a.gone_claim || !a.stopped_claim || !a.shutdown_claim || !a.accused || !a.timed_out || !a.cause ||
      !blamed) {
    printf("verdict: none: out of memory for %d ranks\n", a.n);
    goto out;
  }
  for (int w = 0; w < a.n; w++) {
    const doctor_rank_t *r = &m->ranks[w];
    if (r->present) snprintf(a.host[w], sizeof a.host[w], "%s", r->host);
    else if (r->probe_host[0]) snprintf(a.host[w], sizeof a.host[w], "%s", r->probe_host);
  }
  for (int w = 0; w < a.n; w++) {
    const doctor_rank_t *r = &m->ranks[w];
    if (!r->present) continue;
    if (!strcmp(r->reason, "timeout")) a.timed_out[w] = 1;
    scan_text(&a, w, r->reason_detail);
    const doctor_comm_t *c = comm_of(r, 0);
    if (!c) continue;
    scan_text(&a, w, c->error);
    if (a.timed_out[w] && c->waiting_peer >= 0 && c->waiting_peer < a.n) a.accused[c->waiting_peer] = 1;
    for (int i = 0; i < c->nevents; i++)
      if (!strcmp(c->events[i].state, "failed")) scan_text(&a, w, c->events[i].error);
  }

  verdict_lost(&a);
  if (!verdict_node(&a, a.timed_out, a.accused, 0)) verdict_node_waits(&a);
  int ncomms = 0;
  for (int w = 0; w < a.n; w++)
    for (int i = 0; m->ranks[w].present && i < m->ranks[w].ncomms; i++)
      if (m->ranks[w].comms[i].index + 1 > ncomms) ncomms = m->ranks[w].comms[i].index + 1;
  for (int index = 0; index < ncomms && index < 1024; index++) {
    int ordered = verdict_ordered(&a, index);
    verdict_mismatch(&a, index, ordered);
    verdict_never(&a, index, blamed);
  }
  if (!a.nverdicts) verdict_straggler(&a, 1);
  if (!a.nverdicts) {
    /* old pending collectives or an engine error without a cause found */
    double oldest = 0;
    const char *name = NULL;
    int *who = blamed, nw = 0;
    for (int w = 0; w < a.n; w++) {
      const doctor_comm_t *c = comm_of(&m->ranks[w], 0);
      for (int i = 0; c && i < c->npending; i++) {
        double age = m->ranks[w].time - c->pending[i].t_submit;
        if (age > oldest) oldest = age, name = c->pending[i].name;
      }
    }
    for (int w = 0; w < a.n; w++) {
      const doctor_comm_t *c = comm_of(&m->ranks[w], 0);
      if (c && c->error[0]) {
        verdict(&a, "rank %d's engine stopped: %s", w, c->error);
        break;
      }
    }
    if (!a.nverdicts && oldest >= PENDING_OLD_S) {
      for (int w = 0; w < a.n; w++)
        if (has_pending(comm_of(&m->ranks[w], 0), name, NULL)) who[nw++] = w;
      char t[600];
      verdict(&a, "%s have waited %.1f s for '%s' and no cause was found: see the evidence (the peers they wait for)",
              ranks_phrase(who, nw, t, sizeof t), oldest, name);
    } else if (!a.nverdicts && name)
      verdict(&a, "no hang: every rank is moving (the oldest pending collective, '%s', is %.1f s old)", name, oldest);
    else if (!a.nverdicts) verdict(&a, "no hang: every rank completed its last collective");
  }
  if (evidence == 1) {
    printf("evidence:\n");
    for (int w = 0; w < a.n; w++) rank_line(m, w, "  ");
  }
  if (evidence) picture_print(&a);
out:
  free(a.host), free(a.gone_claim), free(a.stopped_claim), free(a.shutdown_claim), free(a.accused);
  free(a.timed_out), free(a.cause), free(blamed);
  return a.nverdicts;
}

int doctor_analyze_run(const char *dir, const char *job) {
  doctor_model_t m;
  char err[2048];
  doctor_model_init(&m);
  if (doctor_load_dir(&m, dir, job, err, sizeof err) != 0) hvrun_die(NULL, 1, "--analyze: %s", err);
  doctor_verdicts_print(&m, 1);
  doctor_model_free(&m);
  return 0;
}
