/* engine_thread.c: the background thread of a communicator. It alternates negotiation
 * rounds (negotiate_round.c) and execution (engine_execute.c), in lockstep with the
 * other ranks' threads.
 *
 * Pacing, so an idle engine sleeps instead of spinning:
 *  - work arrived (or the last round did something): the next round starts at once;
 *  - requests pending but the last round found nothing ready (peers are behind):
 *    wait for a new submission or a short delay growing from 20 us to HV_CYCLE_TIME,
 *    which is also the window in which later submissions join the same round;
 *  - nothing pending: sleep until a submission, or a delay growing from HV_CYCLE_TIME
 *    to 100 ms, then join a round anyway: peers may need this rank for a stall
 *    report or a shutdown, and an idle job then costs about ten tiny allreduces a
 *    second.
 * A submission signals queue_cv, so a sleeping engine wakes within microseconds.
 * Blocking calls run their round themselves while this thread sleeps
 * (engine_inline.c); round_lock keeps one round at a time. */
#include <errno.h>
#include <stdio.h>
#include <sched.h>
#include <sys/prctl.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "flight_recorder.h"
#include "hv_internal.h"

#define IDLE_WAIT_MAX_MS 100.0
#define UNPRODUCTIVE_WAIT_MIN_MS 0.02
/* After a productive round, poll the queue this long before sleeping: training loops
 * and benchmarks submit the next tensor within microseconds, and catching it
 * without a futex wake-up halves the latency of small collectives. */
#define ACTIVE_SPIN_US 50.0

static void spin_for_work(hv_comm_t *comm) {
  if (!comm->spin_ok) return;
  double start = hv__now_us();
  while (!atomic_load_explicit(&comm->queued, memory_order_relaxed) && hv__now_us() - start < ACTIVE_SPIN_US)
    sched_yield();
}

/* Returns 1 if the wait ended by timing out (not by a submission's signal). */
static int timed_wait(hv_comm_t *comm, double ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  long ns = (long)(ms * 1e6);
  ts.tv_sec += ns / 1000000000L;
  ts.tv_nsec += ns % 1000000000L;
  if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  return pthread_cond_timedwait(&comm->queue_cv, &comm->mutex, &ts) == ETIMEDOUT;
}

static void *engine_main(void *arg) {
  hv_comm_t *comm = arg;
  prctl(PR_SET_NAME, "hv-engine", 0, 0, 0); /* as top -H, gdb and the soak test show it */
#ifdef PR_SET_TIMERSLACK
  /* Short sleeps while peers catch up must stay short: the default 50 us slack would
   * round every one of them up. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#endif
  double cycle = comm->config.cycle_time_ms > 0 ? comm->config.cycle_time_ms : 0.001;
  double idle_ms = cycle, unproductive_ms = UNPRODUCTIVE_WAIT_MIN_MS;
  int last_productive = 1;
  size_t pending = 0; /* after this thread's last round (rounds inline may change it) */
  hv_result_t failure = HV_SUCCESS;
  for (;;) {
    if (last_productive && pending == 0) spin_for_work(comm);
    int timed_out = 0;
    pthread_mutex_lock(&comm->mutex);
    cycle = comm->config.cycle_time_ms > 0 ? comm->config.cycle_time_ms : 0.001; /* HV_AUTOTUNE may change it */
    int shutdown = comm->shutdown_requested;
    if (!shutdown && !comm->queue_head) {
      if (pending == 0) {
        timed_out = timed_wait(comm, idle_ms);
        idle_ms = idle_ms * 2 > IDLE_WAIT_MAX_MS ? IDLE_WAIT_MAX_MS : idle_ms * 2;
      } else if (!last_productive) {
        timed_wait(comm, unproductive_ms);
        unproductive_ms = unproductive_ms * 2 > cycle ? cycle : unproductive_ms * 2;
      }
    }
    if (comm->queue_head) idle_ms = cycle;
    shutdown = comm->shutdown_requested;
    pthread_mutex_unlock(&comm->mutex);

    pthread_mutex_lock(&comm->round_lock);
    hv__fr_poll(comm, NULL); /* a status request woke an idle engine (flight_dump.c) */
    if (comm->round_failure != HV_SUCCESS || comm->round_agreed) { /* an inline round's outcome */
      failure = comm->round_failure;
      break;
    }
    pending = comm->pending_count;
    /* Woken for work that a round inline has already done: a round now would only
     * wait for the peers' next one. Idle rounds (timed out) and shutdown still run. */
    if (!shutdown && !timed_out && pending == 0 && !atomic_load(&comm->queued)) {
      pthread_mutex_unlock(&comm->round_lock);
      last_productive = 1;
      continue;
    }
    int agreed = 0, productive = 0;
    hv_result_t rc = hv__round(comm, shutdown, &agreed, &productive);
    pending = comm->pending_count;
    if (rc != HV_SUCCESS) {
      failure = rc;
      break;
    }
    if (agreed) break;
    pthread_mutex_unlock(&comm->round_lock);
    last_productive = productive;
    if (productive) unproductive_ms = UNPRODUCTIVE_WAIT_MIN_MS;
  }
  hv__engine_teardown(comm, failure); /* releases round_lock */
  return NULL;
}

hv_result_t hv__engine_start(hv_comm_t *comm) {
  int rc = pthread_create(&comm->thread, NULL, engine_main, comm);
  if (rc != 0) return hv__set_error(comm, HV_ERR_SYSTEM, "cannot start the background thread: %s", strerror(rc));
  comm->thread_started = 1;
  return HV_SUCCESS;
}

void hv__engine_stop(hv_comm_t *comm) {
  if (!comm->thread_started) return;
  pthread_mutex_lock(&comm->mutex);
  comm->shutdown_requested = 1;
  pthread_cond_signal(&comm->queue_cv);
  pthread_mutex_unlock(&comm->mutex);
  pthread_join(comm->thread, NULL);
  comm->thread_started = 0;
}
