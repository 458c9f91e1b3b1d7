/* doctor_verdict.h: what the verdict files of `hvrun --analyze` / `--status` share
 * (the analysis state and its helpers, doctor_verdict_common.c), and each verdict
 * family's entry, in the order doctor_verdict.c asks them:
 *   doctor_verdict_lost.c      1-3: dead, stopped, shut-down ranks
 *   doctor_verdict_node.c      4: a node that stopped answering
 *   doctor_verdict_mismatch.c  5: the same name submitted differently, ordered calls
 *   doctor_verdict_never.c     6: names a rank never submitted
 *   doctor_verdict_straggler.c 7: a straggler
 *   doctor_verdict_none.c      8: no cause found, an engine error, or no hang
 *   doctor_evidence.c          the evidence after the verdicts, and --status lines
 * Internal to hvrun (doctor.h is the interface). */
#ifndef HVRUN_DOCTOR_VERDICT_H
#define HVRUN_DOCTOR_VERDICT_H

#include <stddef.h>

#include "doctor.h"

/* A name pending for less than this long is traffic, not a hang (status snapshots of
 * different ranks are a few ms apart). */
#define PENDING_OLD_S 1.0

enum { CAUSE_NONE, CAUSE_DEAD, CAUSE_STOPPED, CAUSE_SHUTDOWN, CAUSE_NODE };

/* The analysis state: what the documents' texts say of each world rank, and which
 * ranks a verdict explained already (not blamed again by a later one). */
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

/* ---- doctor_verdict_common.c ---- */
/* "rank 3" or "ranks 0,2-3" */
const char *dv_ranks_phrase(const int *ranks, int n, char *out, size_t len);
/* World rank r's communicator of creation index `index`, or NULL. */
const doctor_comm_t *dv_comm_of(const doctor_rank_t *r, int index);
/* The world rank of communicator rank q of communicator index, or -1. */
int dv_world_of(const an_t *a, int index, int q);
/* Prints one "verdict: ..." line and counts it. */
void dv_verdict(an_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The name most ranks (not explained yet, not in skip) wait for, oldest first; else the
 * first of the requests that failed. NULL when none. */
const char *dv_waited_name(const an_t *a, const int *skip);
/* " during 'name'", or "" without a name. */
void dv_during(const char *name, char *out, size_t len);
/* An event not "done" (submitted, negotiated, running, failed). */
int dv_unfinished(const doctor_event_t *e);
/* "allreduce float32 x1024" */
void dv_signature(const doctor_event_t *e, char *out, size_t len);
/* c has name pending (*t: its submission, when t). */
int dv_has_pending(const doctor_comm_t *c, const char *name, double *t);

/* The ordered (hv_cuda.h) or the named events of a communicator, each in seq order
 * (their seqs count different things), for binary search by seq. */
typedef struct {
  const doctor_event_t **v;
  int n;
} evview_t;
evview_t dv_view_of(const doctor_comm_t *c, int ordered);
const doctor_event_t *dv_view_at(const evview_t *vw, long long seq);
void dv_views_free(evview_t *vs, int n);

/* ---- the verdict families: each prints its verdicts and marks the ranks it explains ---- */
void dv_verdict_lost(an_t *a);
int dv_verdict_node(an_t *a, const int *accuser, const int *accused, double waited_s);
void dv_verdict_node_waits(an_t *a);
int dv_verdict_ordered(an_t *a, int index);
void dv_verdict_mismatch(an_t *a, int index, int skip_ordered);
void dv_verdict_never(an_t *a, int index, int *blamed);
int dv_verdict_straggler(an_t *a, int print);
/* scratch: a.n ints. */
void dv_verdict_none(an_t *a, int *scratch);

/* ---- doctor_evidence.c ---- */
void dv_rank_line(const doctor_model_t *m, int w, const char *indent);
void dv_picture_print(const an_t *a);

#endif /* HVRUN_DOCTOR_VERDICT_H */
