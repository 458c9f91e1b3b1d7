/* doctor_verdict.c: the verdicts of `hvrun --analyze` and `hvrun --status` over the
 * model of doctor.h, in the exact wordings of FLIGHT_RECORDER.md, then the evidence:
 * the analysis state from the documents' texts, and the order in which the verdict
 * families (one file each, doctor_verdict.h) are asked.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_verdict.h"
#include "hvrun.h"

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
    const doctor_comm_t *c = dv_comm_of(r, 0);
    if (!c) continue;
    scan_text(&a, w, c->error);
    if (a.timed_out[w] && c->waiting_peer >= 0 && c->waiting_peer < a.n) a.accused[c->waiting_peer] = 1;
    for (int i = 0; i < c->nevents; i++)
      if (!strcmp(c->events[i].state, "failed")) scan_text(&a, w, c->events[i].error);
  }

  dv_verdict_lost(&a);
  if (!dv_verdict_node(&a, a.timed_out, a.accused, 0)) dv_verdict_node_waits(&a);
  int ncomms = 0;
  for (int w = 0; w < a.n; w++)
    for (int i = 0; m->ranks[w].present && i < m->ranks[w].ncomms; i++)
      if (m->ranks[w].comms[i].index + 1 > ncomms) ncomms = m->ranks[w].comms[i].index + 1;
  for (int index = 0; index < ncomms && index < 1024; index++) {
    int ordered = dv_verdict_ordered(&a, index);
    dv_verdict_mismatch(&a, index, ordered);
    dv_verdict_never(&a, index, blamed);
  }
  if (!a.nverdicts) dv_verdict_straggler(&a, 1);
  if (!a.nverdicts) dv_verdict_none(&a, blamed);
  if (evidence == 1) {
    printf("evidence:\n");
    for (int w = 0; w < a.n; w++) dv_rank_line(m, w, "  ");
  }
  if (evidence) dv_picture_print(&a);
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
