/* doctor_verdict_node.c: verdict 4 of doctor_verdict.c, a node that stopped
 * answering: ranks that hit HV_TIMEOUT name peers on another host whose ranks are
 * missing or accuse the other side too; or, before HV_TIMEOUT, every rank still
 * there has waited long on a peer of another host. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_verdict.h"

/* Ranks of one host named by accusers on other hosts: the timed-out ranks' texts
 * (waited_s 0), or live waits that cross hosts (waited_s: how long). Returns 1 when a
 * verdict was given. */
int dv_verdict_node(an_t *a, const int *accuser, const int *accused, double waited_s) {
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
  dv_during(dv_waited_name(a, a->cause), dur, sizeof dur);
  dv_ranks_phrase(acc, na, by, sizeof by);
  if (waited_s > 0)
    dv_verdict(a, "%s on host %s stopped answering (network?)%s: %s %s waited %.1f s for them",
               dv_ranks_phrase(cut, nc, who, sizeof who), h, dur, by, na > 1 ? "have" : "has", waited_s);
  else
    dv_verdict(a, "%s on host %s stopped answering (network?)%s: HV_TIMEOUT on %s",
               dv_ranks_phrase(cut, nc, who, sizeof who), h, dur, na ? by : "the others");
out:
  free(cut), free(acc);
  return 1;
}

/* Before HV_TIMEOUT: every rank still here waits, each on a peer of another host, for
 * at least PENDING_OLD_S (inside an algorithm, plus what its bytes could take: a long
 * transfer is not a cut), and none is in user code: the hosts no longer hear each other. */
void dv_verdict_node_waits(an_t *a) {
  int *accuser = calloc((size_t)a->n, sizeof(int)), *accused = calloc((size_t)a->n, sizeof(int));
  int *follower = calloc((size_t)a->n, sizeof(int));
  int waiting = 0, ok = 1, hosts_differ = 0;
  double waited = INFINITY;
  for (int w = 0; accuser && accused && w < a->n && ok; w++) {
    const doctor_comm_t *c = dv_comm_of(&a->m->ranks[w], 0);
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
  if (ok && follower && waiting >= 2 && hosts_differ) dv_verdict_node(a, accuser, accused, waited);
  free(accuser), free(accused), free(follower);
}
