/* engine_threadless.c: the engine without a background thread, for simulated builds
 * (HV_SIMGRID: SimGrid's SMPI runs every rank as a simulated process, and a second
 * thread per rank is something a simulated rank cannot have). Rounds run on the
 * calling thread only: hv_wait and the blocking calls run them until their request
 * completes (engine_inline.c), hv_test runs one, and hv_shutdown runs the shutdown
 * rounds here. The rounds themselves (negotiation, cache, coordinator, fusion,
 * algorithms) are the same code as with the thread, so every rank still meets every
 * other rank's k-th round; what is lost is only progress while the program computes,
 * which a simulation of the collectives does not need. */
#include "hv_internal.h"

hv_result_t hv__engine_start(hv_comm_t *comm) {
  comm->threadless = 1;
  return HV_SUCCESS;
}

void hv__engine_stop(hv_comm_t *comm) {
  pthread_mutex_lock(&comm->mutex);
  comm->shutdown_requested = 1;
  pthread_mutex_unlock(&comm->mutex);
  pthread_mutex_lock(&comm->round_lock);
  if (comm->rounds_over) {
    pthread_mutex_unlock(&comm->round_lock);
    return;
  }
  hv_result_t failure = comm->round_failure;
  for (int agreed = comm->round_agreed; failure == HV_SUCCESS && !agreed;) {
    int productive = 0;
    failure = hv__round(comm, 1, &agreed, &productive);
  }
  hv__engine_teardown(comm, failure); /* releases round_lock */
}
