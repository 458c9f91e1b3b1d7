/* engine_inline.c: rounds run by the thread that waits, when the background thread is
 * idle. A blocking call (or hv_wait) that finds round_lock free submits its request
 * without waking the background thread and runs the negotiation round and the
 * execution list itself: a small collective then costs what its messages cost, not
 * two thread hand-offs (submitter -> background thread -> waiter), each a futex
 * wake-up of several microseconds and, without a spare core, a context switch.
 *
 * Rounds stay in lockstep across ranks whoever runs them: round_lock makes them one
 * sequence per rank, and a rank's k-th round meets every other rank's k-th round,
 * whichever thread runs it there. An inline round that fails (or agrees on shutdown)
 * leaves the result for the background thread, which stops and fails what is left,
 * exactly as if it had run the round. */
#include <limits.h>

#include "autotune.h"
#include "hv_internal.h"

/* A waiting thread runs at most this many rounds, then leaves the rest to the
 * background thread's paced rounds: enough for a new name (its coordinator round)
 * and peers a little behind; a peer far behind is waited for there instead. */
#define INLINE_ROUNDS_MAX 8

_Thread_local int hv__submit_quiet;

hv_result_t hv__round(hv_comm_t *comm, int shutdown, int *shutdown_agreed, int *productive) {
  hv_comm_t *saved = hv__engine_thread_comm;
  hv__engine_thread_comm = comm; /* fault.c: notices and pending tables are this thread's now */
  hv_result_t rc = hv__negotiate_round(comm, shutdown, shutdown_agreed, productive);
  if (rc == HV_SUCCESS && comm->autotune) {
    size_t bytes = 0;
    for (size_t i = 0; i < comm->exec_count; i++) {
      const struct hv_handle *h = comm->exec[i].handle;
      if (h) bytes += (size_t)h->meta.count * hv_dtype_size((hv_dtype_t)h->meta.dtype);
    }
    hv__autotune_round(comm, bytes);
  }
  if (rc == HV_SUCCESS) rc = hv__execute_list(comm);
  hv__engine_thread_comm = saved;
  return rc;
}

int hv__inline_begin(hv_comm_t *comm) {
  if (pthread_mutex_trylock(&comm->round_lock) != 0) return 0;
  if (comm->rounds_over || comm->round_failure != HV_SUCCESS || comm->round_agreed) {
    pthread_mutex_unlock(&comm->round_lock);
    return 0;
  }
  return 1;
}

/* Runs up to max_rounds rounds while h (if given) is not done; round_lock held. */
static void run_rounds(hv_comm_t *comm, struct hv_handle *h, int max_rounds) {
  for (int i = 0; i < max_rounds && (!h || !atomic_load_explicit(&h->done, memory_order_acquire)); i++) {
    pthread_mutex_lock(&comm->mutex);
    int shutdown = comm->shutdown_requested;
    pthread_mutex_unlock(&comm->mutex);
    if (shutdown) break; /* the background thread runs the shutdown round */
    int agreed = 0, productive = 0;
    hv_result_t rc = hv__round(comm, 0, &agreed, &productive);
    if (rc != HV_SUCCESS || agreed) {
      comm->round_failure = rc;
      comm->round_agreed = agreed;
      break;
    }
  }
}

/* Releases round_lock after rounds run inline, waking the background thread for
 * what is left; without one (engine_threadless.c) ends the engine here when a round
 * failed or agreed to shut down. */
static void end_inline(hv_comm_t *comm) {
  if (comm->threadless) {
    if (comm->round_failure != HV_SUCCESS || comm->round_agreed) hv__engine_teardown(comm, comm->round_failure);
    else pthread_mutex_unlock(&comm->round_lock);
    return;
  }
  int wake = comm->pending_count > 0 || comm->round_failure != HV_SUCCESS || comm->round_agreed;
  pthread_mutex_unlock(&comm->round_lock);
  if (wake) { /* the background thread sleeps until work arrives: this is work */
    pthread_mutex_lock(&comm->mutex);
    pthread_cond_signal(&comm->queue_cv);
    pthread_mutex_unlock(&comm->mutex);
  }
}

void hv__inline_rounds(hv_comm_t *comm, struct hv_handle *h, int locked) {
  if (!locked && !hv__inline_begin(comm)) return;
  /* Without a background thread nobody else runs rounds: run them until h completes. */
  if (h) run_rounds(comm, h, comm->threadless ? INT_MAX : INLINE_ROUNDS_MAX);
  end_inline(comm);
}

void hv__inline_poll(hv_comm_t *comm) {
  if (!hv__inline_begin(comm)) return;
  run_rounds(comm, NULL, 1);
  end_inline(comm);
}
