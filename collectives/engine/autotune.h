/* autotune.h: HV_AUTOTUNE=1 (autotune.c), as Horovod's autotuner: during a job's first
 * seconds rank 0 tries fusion thresholds and cycle times (and, across nodes, the
 * recursive-doubling threshold), scores each by the bytes its rounds reduced per
 * second, and keeps the best. A change reaches every rank in the same round as a
 * coordinator response (negotiate_round.c, negotiate_coordinator.c), so fusion
 * decisions never part. Engine-private. */
#ifndef HV_AUTOTUNE_H
#define HV_AUTOTUNE_H

#include "hv_internal.h"

/* From HV_AUTOTUNE / HV_AUTOTUNE_LOG at communicator creation: 0, or an error with the
 * variable named (a log that cannot be opened). Rank 0 alone keeps state. */
hv_result_t hv__autotune_create(hv_comm_t *comm);
void hv__autotune_free(hv_comm_t *comm);

/* Rank 0, round thread: a round is about to execute `bytes` (its execution list). */
void hv__autotune_round(hv_comm_t *comm, size_t bytes);
/* Rank 0, round thread: 1 when a new setting waits to be sent (the round's flag). */
int hv__autotune_pending(const hv_comm_t *comm);
/* Rank 0's coordinator: the setting to send, as a response meta (and marks it sent). */
void hv__autotune_encode(hv_comm_t *comm, hv__meta_t *meta);
/* Every rank, in the round the response arrives: applies it. */
void hv__autotune_apply(hv_comm_t *comm, const hv__meta_t *meta);

#define HV__AUTOTUNE_NAME "hv.autotune"

#endif
