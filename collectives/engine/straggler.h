/* straggler.h: the engine's side of the straggler report (hv_straggler_step,
 * hv_straggler_report in hv.h; straggler.c). Each rank measures, for the first
 * request of each step, the time between its own submission and the round that
 * found it ready on every rank; the rank that arrived last waited least, so the
 * ranks' waits compare without any clock shared between hosts. */
#ifndef HV_STRAGGLER_H
#define HV_STRAGGLER_H

#include <stdatomic.h>
#include <stdint.h>

/* The last waits kept between two reports (a report covers at most this many steps). */
#define HV__STRAGGLER_SAMPLES 1024

typedef struct hv__straggler {
  atomic_int armed;          /* hv_straggler_step was called: the next submission is a step's first */
  _Atomic uint64_t recorded; /* waits recorded since hv_init (written by whoever runs the rounds) */
  uint64_t reported;         /* `recorded` at the last report (the reporting thread's) */
  double wait_us[HV__STRAGGLER_SAMPLES]; /* a ring, indexed by recorded % HV__STRAGGLER_SAMPLES */
} hv__straggler_t;

struct hv_comm;
struct hv_handle;
/* At submission (api.c, before the request is queued): a step's first request gets
 * its submission time in h->t_step_first. */
void hv__straggler_submitted(struct hv_comm *comm, struct hv_handle *h);
/* Where a name becomes ready on every rank (negotiate_round.c), for a request with
 * t_step_first set: records its wait. Only the thread running rounds calls it. */
void hv__straggler_ready(struct hv_comm *comm, struct hv_handle *h);

#endif /* HV_STRAGGLER_H */
