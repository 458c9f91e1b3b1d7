/* straggler.c: the straggler report (hv.h: hv_straggler_step, hv_straggler_report).
 *
 * Why waits and not arrival times: ranks on different hosts share no clock, but every
 * rank sees a name become ready in the same negotiation round (rounds run in
 * lockstep). So each rank measures only its own interval, from submitting a step's
 * first request to that round: the rank that submitted last waited least, and the
 * others' waits exceed its own by how late it was. The report gathers each rank's
 * median wait and names the rank with the smallest. Medians, not means: one slow
 * step (a checkpoint, a page fault) must not make a straggler. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hv_internal.h"

void hv__straggler_submitted(hv_comm_t *comm, struct hv_handle *h) {
  hv__straggler_t *s = &comm->straggler;
  /* Cheap when unarmed (every other request): a relaxed load, no write. */
  if (atomic_load_explicit(&s->armed, memory_order_relaxed) && atomic_exchange(&s->armed, 0))
    h->t_step_first = hv__now_us();
}

void hv__straggler_ready(hv_comm_t *comm, struct hv_handle *h) {
  hv__straggler_t *s = &comm->straggler;
  /* One writer (rounds are serialised by round_lock); the reader loads `recorded`
   * with acquire, so a slot is written before it is counted. */
  uint64_t n = atomic_load_explicit(&s->recorded, memory_order_relaxed);
  s->wait_us[n % HV__STRAGGLER_SAMPLES] = hv__now_us() - h->t_step_first;
  atomic_store_explicit(&s->recorded, n + 1, memory_order_release);
  h->t_step_first = 0;
}

hv_result_t hv_straggler_step(hv_comm_t *comm) {
  if (!comm) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_straggler_step: communicator is NULL");
  atomic_store_explicit(&comm->straggler.armed, 1, memory_order_relaxed);
  return HV_SUCCESS;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v); NAN when n is 0. */
static double median(double *v, size_t n) {
  if (n == 0) return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

hv_result_t hv_straggler_report(hv_comm_t *comm, hv_straggler_t *out) {
  if (!comm || !out) return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_straggler_report: NULL argument");
  hv__straggler_t *s = &comm->straggler;
  const uint64_t recorded = atomic_load_explicit(&s->recorded, memory_order_acquire);
  uint64_t n = recorded - s->reported;
  if (n > HV__STRAGGLER_SAMPLES) n = HV__STRAGGLER_SAMPLES;
  const int size = comm->size;
  double *mine = malloc(sizeof(double) * (n ? n : 1)), *all = malloc(sizeof(double) * 2 * (size_t)size);
  double *others = malloc(sizeof(double) * (size_t)size);
  if (!mine || !all || !others) {
    free(mine), free(all), free(others);
    return hv__set_error(comm, HV_ERR_NO_MEMORY, "hv_straggler_report: %d ranks' waits", size);
  }
  for (uint64_t i = 0; i < n; i++) mine[i] = s->wait_us[(recorded - n + i) % HV__STRAGGLER_SAMPLES];
  double send[2] = {n ? median(mine, (size_t)n) * 1e-3 : -1.0, (double)n};
  /* The gather is a request like any other: it must not take a step's mark (the
   * caller may have marked a step it has not submitted yet), so the mark waits. */
  const int armed = atomic_exchange(&s->armed, 0);
  hv_result_t rc = hv_allgather(comm, "hv.straggler", send, all, 2, HV_FLOAT64);
  if (armed) atomic_store(&s->armed, 1);
  if (rc == HV_SUCCESS) {
    *out = (hv_straggler_t){-1, 0.0, 0.0, 0};
    int measured = 0;
    for (int r = 0; r < size; r++) {
      if (all[2 * r + 1] < 1) continue; /* no step measured there */
      measured++;
      if (out->rank < 0 || all[2 * r] < all[2 * out->rank]) out->rank = r;
    }
    if (measured >= 2) {
      size_t k = 0;
      for (int r = 0; r < size; r++)
        if (r != out->rank && all[2 * r + 1] >= 1) others[k++] = all[2 * r];
      out->wait_ms = all[2 * out->rank];
      out->lag_ms = median(others, k) - out->wait_ms;
      out->steps = (uint64_t)all[2 * out->rank + 1];
    } else {
      out->rank = -1;
    }
    s->reported = recorded;
  }
  free(mine), free(all), free(others);
  return rc;
}
