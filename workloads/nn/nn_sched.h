/* nn_sched.h: dynamic assignment of bootstraps to ranks through hv collectives only.
 *
 * Ranks meet in numbered "ticks": each tick is one hv allgather of a flag per rank
 * (1: I am idle and want a bootstrap, 0: I am busy, 2: idle after a failure). From the gathered flags every
 * rank computes the same assignment: the next unassigned bootstraps go to the idle
 * ranks in rank order. An idle rank submits a tick and waits on it; a busy rank
 * submits one every interval from its training loop (nn_sched_poll, between steps) and
 * only tests it, so an idle rank waits at most about one interval plus one step for
 * work, and nobody ever blocks on a rank that is computing. The search ends at the
 * first tick where every rank is idle and no bootstrap is left: all ranks see that
 * same tick, so they leave together and nothing is left pending. */
#ifndef HV_NN_SCHED_H
#define HV_NN_SCHED_H

#include <stdint.h>

#include "hv.h"

typedef struct nn_sched {
  hv_comm_t *comm;
  int rank, size;
  int n_jobs, next;     /* next unassigned job: the same on every rank after each tick */
  long tick;            /* number of the next tick to submit */
  int pending;          /* a busy tick is in flight */
  hv_handle_t handle;
  int32_t mine, *all;   /* my flag; (size) gathered flags */
  double interval_s, last_submit;
  int my_job;           /* job the last processed tick gave me, or -1 */
  int finished;
  int stopping;         /* a rank reported a failure: no more jobs are handed out */
  hv_result_t error;    /* first hv error; the search then stops on this rank */
  char err[512];
} nn_sched_t;

/* 0, or -1 when out of memory. interval_s: how often a busy rank offers a tick. */
int nn_sched_init(nn_sched_t *s, hv_comm_t *comm, int n_jobs, double interval_s);
void nn_sched_free(nn_sched_t *s);

/* Called by an idle rank: blocks until it is given a job (returns its index) or the
 * search is over on every rank (returns -1; also on an hv error, in s->error).
 * failed: this rank's last job failed; the flag travels with the tick (value 2) and
 * every rank then stops handing out jobs, so a run that cannot succeed ends after the
 * bootstraps already running rather than after all of them. */
int nn_sched_next(nn_sched_t *s, int failed);

/* Called by a busy rank between training steps (an nn_poll_fn: ctx is the
 * nn_sched_t). Never blocks. */
void nn_sched_poll(void *ctx);

#endif /* HV_NN_SCHED_H */
