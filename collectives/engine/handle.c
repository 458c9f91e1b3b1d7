/* handle.c: completion and release of request handles, and the waiting calls
 * (hv_wait, hv_test, hv_wait_all). The background thread completes a handle under
 * comm->mutex and broadcasts done_cv; waiters sleep on it. */
#include <sched.h>
#include <stdlib.h>

#include "flight_recorder.h"
#include "hv_internal.h"

/* comm->mutex held. */
static void mark_done(hv_comm_t *comm, struct hv_handle *h, hv_result_t result, char *error_detail, double now,
                      int stream) {
  hv__map_remove_hashed(&comm->names_in_flight, h->name, h->name_hash);
  hv__fr_finish(comm, h, result, error_detail, now, stream);
  h->result = result;
  h->error = error_detail;
  if (h->phantom) { /* a joined rank's stand-in (join.c): nobody waits for it */
    free(h->phantom_buf);
    hv__handle_free(h);
    return;
  }
  atomic_store_explicit(&h->done, 1, memory_order_release);
}

void hv__handle_complete(struct hv_handle *h, hv_result_t result, char *error_detail) {
  hv_comm_t *comm = h->comm;
  const double now = comm->flight ? hv__coarse_now_us() : 0; /* the flight recorder's */
  pthread_mutex_lock(&comm->mutex);
  mark_done(comm, h, result, error_detail, now, 0);
  pthread_cond_broadcast(&comm->done_cv);
  pthread_mutex_unlock(&comm->mutex);
}

void hv__handles_complete(hv_comm_t *comm, hv__exec_t *exec, size_t n) {
  /* One lock and one wake-up for a fused batch: a thread in hv_wait_all over it
   * would otherwise be woken once per tensor. */
  const double now = comm->flight ? hv__coarse_now_us() : 0;
  const int stream = n >= HV__FR_STREAM_MIN;
  pthread_mutex_lock(&comm->mutex);
  for (size_t i = 0; i < n; i++) {
    mark_done(comm, exec[i].handle, HV_SUCCESS, NULL, now, stream);
    /* Its thread may release it at once, while the rest of the list still runs and
     * a stall report lists what is left (fault.c): the entry must not point at it. */
    exec[i].handle = NULL;
  }
  if (stream) hv__fr_fence(comm);
  pthread_cond_broadcast(&comm->done_cv);
  pthread_mutex_unlock(&comm->mutex);
}

void hv__handle_free(struct hv_handle *h) {
  if (!h) return;
  free(h->error); /* the name shares the handle's block */
  free(h->own_counts);
  free(h->splits_send); /* splits_recv shares its block */
  free(h);
}

/* Releases a completed handle, moving its error detail to the communicator. */
static hv_result_t finish(struct hv_handle *h) {
  hv_result_t rc = h->result;
  if (rc != HV_SUCCESS)
    hv__set_error(h->comm, rc, "%s", h->error ? h->error : hv_strerror(rc));
  hv__handle_free(h);
  return rc;
}

/* How long hv_wait polls before sleeping, when the rank has a core to spare for it
 * (comm->spin_ok): a small collective completes within tens of microseconds, and a
 * futex wake-up would add about as much again. Without a spare core, spinning only
 * takes the core from the background thread that does the work. */
#define WAIT_SPIN_US 50.0

hv_result_t hv_wait(hv_handle_t h) {
  if (!h) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_wait: handle is NULL");
  hv_comm_t *comm = h->comm;
  /* Done already (the usual case in hv_wait_all over a fused batch): the completing
   * thread stored done last and touches the handle no more, so neither the clock nor
   * the mutex is needed. */
  if (atomic_load_explicit(&h->done, memory_order_acquire)) return finish(h);
  hv__inline_rounds(comm, h, 0);
  double start = hv__now_us();
  while (comm->spin_ok && !atomic_load_explicit(&h->done, memory_order_acquire) &&
         hv__now_us() - start < WAIT_SPIN_US)
    sched_yield();
  pthread_mutex_lock(&comm->mutex);
  while (!h->done) pthread_cond_wait(&comm->done_cv, &comm->mutex);
  pthread_mutex_unlock(&comm->mutex);
  return finish(h);
}

hv_result_t hv_test(hv_handle_t h, int *done) {
  if (!h || !done) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_test: handle or done is NULL");
  hv_comm_t *comm = h->comm;
  /* Without a background thread, a poll is what makes progress: one round. */
  if (comm->threadless && !atomic_load_explicit(&h->done, memory_order_acquire)) hv__inline_poll(comm);
  pthread_mutex_lock(&comm->mutex);
  int finished = h->done;
  pthread_mutex_unlock(&comm->mutex);
  *done = finished;
  return finished ? finish(h) : HV_SUCCESS;
}

hv_result_t hv_wait_all(hv_handle_t *handles, size_t n) {
  if (n && !handles) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_wait_all: handles is NULL");
  hv_result_t first = HV_SUCCESS;
  for (size_t i = 0; i < n; i++) {
    hv_result_t rc = hv_wait(handles[i]);
    if (first == HV_SUCCESS) first = rc;
  }
  return first;
}
