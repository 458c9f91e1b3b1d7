/* nn_sched.c: the tick protocol of nn_sched.h. Every tick uses the same tensor name:
 * a rank submits tick t+1 only after tick t completed on it, and tick t completes only
 * once every rank has submitted it, so no rank's t+1 can meet another rank's t, at most
 * one tick per rank is in flight, and the numbers stay in step everywhere. One name
 * also keeps hv's response cache (its fast path) warm and its name table small over
 * long runs. */
#include "nn_sched.h"

#include <stdio.h>
#include <stdlib.h>

#include "clock.h"

int nn_sched_init(nn_sched_t *s, hv_comm_t *comm, int n_jobs, double interval_s) {
  *s = (nn_sched_t){0};
  s->comm = comm;
  if (hv_comm_rank(comm, &s->rank) != HV_SUCCESS || hv_comm_size(comm, &s->size) != HV_SUCCESS)
    return -1;
  s->n_jobs = n_jobs;
  s->interval_s = interval_s;
  s->my_job = -1;
  s->all = calloc((size_t)s->size, sizeof(int32_t));
  return s->all ? 0 : -1;
}

void nn_sched_free(nn_sched_t *s) {
  free(s->all);
  s->all = NULL;
}

static void fail(nn_sched_t *s, hv_result_t r, const char *what) {
  if (s->error == HV_SUCCESS) {
    s->error = r;
    snprintf(s->err, sizeof s->err, "tick %ld (%s): %s (%s)", s->tick, what, hv_strerror(r),
             hv_comm_last_error(s->comm));
  }
  s->finished = 1;
}

static int submit(nn_sched_t *s, int idle) {
  s->mine = idle;
  s->last_submit = now_s();
  hv_result_t r = hv_allgather_async(s->comm, "nn/tick", &s->mine, s->all, 1, HV_INT32,
                                     &s->handle);
  if (r != HV_SUCCESS) {
    fail(s, r, "submit");
    return -1;
  }
  s->pending = 1;
  return 0;
}

/* The assignment every rank computes from the same flags. */
static void process(nn_sched_t *s) {
  s->pending = 0;
  s->tick++;
  s->my_job = -1;
  for (int r = 0; r < s->size; ++r)
    if (s->all[r] == 2) s->stopping = 1;
  /* Stopping: pretend every job is handed out; all ranks saw the same flags. */
  if (s->stopping) s->next = s->n_jobs;
  const int none_left = s->next >= s->n_jobs;
  int idle = 0;
  for (int r = 0; r < s->size; ++r) {
    if (!s->all[r]) continue;
    idle++;
    if (s->next < s->n_jobs) {
      if (r == s->rank) s->my_job = s->next;
      s->next++;
    }
  }
  /* Everyone idle and nothing left to hand out: over, on every rank at this tick. */
  if (idle == s->size && none_left) s->finished = 1;
}

int nn_sched_next(nn_sched_t *s, int failed) {
  if (s->pending) {
    /* A busy tick of mine is in flight: finish it first (it gives me nothing). */
    hv_result_t r = hv_wait(s->handle);
    if (r != HV_SUCCESS) {
      s->pending = 0;
      fail(s, r, "wait");
      return -1;
    }
    process(s);
  }
  while (!s->finished) {
    if (submit(s, failed ? 2 : 1) != 0) return -1;
    hv_result_t r = hv_wait(s->handle);
    if (r != HV_SUCCESS) {
      s->pending = 0;
      fail(s, r, "wait");
      return -1;
    }
    process(s);
    if (s->my_job >= 0) return s->my_job;
  }
  return -1;
}

void nn_sched_poll(void *ctx) {
  nn_sched_t *s = ctx;
  if (s->error != HV_SUCCESS) return;
  if (s->pending) {
    int done = 0;
    hv_result_t r = hv_test(s->handle, &done);
    if (done && r != HV_SUCCESS) {
      s->pending = 0;
      fail(s, r, "test");
      return;
    }
    if (done) process(s);
    return;
  }
  if (now_s() - s->last_submit >= s->interval_s) submit(s, 0);
}
