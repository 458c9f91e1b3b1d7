/* host.c: the defaults of an algorithm host and the two things every wait on peers
 * asks of it (host.h): has a peer failed, and how to word a timeout. */
#include "host.h"

#include <string.h>

#include "algo.h" /* HV__ALGO_AUTO */

void hv__algo_host_defaults(hv__algo_host_t *host) {
  memset(host, 0, sizeof *host);
  host->errors.rank = -1;
  host->rank = -1;
  host->timeout_s = 0;
  host->ring_chunk_bytes = (size_t)1 << 20;
  host->small_allreduce_bytes = (size_t)64 << 10;
  host->hierarchical = -1;
  host->cross_algo = HV__ALGO_AUTO;
  host->grid_cols = 0;
  host->shm_cma = -1;
}

hv_result_t hv__algo_host_poll(const hv__algo_host_t *host, hv__wait_watch_t *ww, double waited_us,
                               const char *what) {
  return host->fault_poll ? host->fault_poll(host->owner, ww, waited_us, what) : HV_SUCCESS;
}

hv_result_t hv__algo_host_timeout(const hv__algo_host_t *host, const char *what) {
  /* The requests of the wait stay with MPI: freeing an unfinished collective's
   * request makes Open MPI's progress engine touch freed memory. The communicator
   * is dead now; hv_shutdown leaves it (and MPI) alone, and the job ends non-zero. */
  char stopped[200] = "";
  if (host->stopped_note) host->stopped_note(host->owner, stopped, sizeof stopped);
  return hv__fail(&host->errors, HV_ERR_TIMEOUT,
                  "rank %d: %s did not complete within HV_TIMEOUT=%g s: a peer rank stopped answering "
                  "(it may have died, been stopped, or lost its network)%s",
                  host->rank, what, host->timeout_s, stopped);
}
