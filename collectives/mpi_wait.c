/* mpi_wait.c: every wait on MPI in the engine goes through here, so none can hang:
 * requests are polled until they complete or HV_TIMEOUT passes. Negotiation waits
 * (peers may be idle for up to 100 ms) spin briefly, then yield, then sleep with a
 * growing interval capped at 50 us, so a rank waiting for slower peers does not pin
 * a core. Data transfers never sleep: Open MPI moves large messages only while
 * someone polls, and every peer is in the same transfer, so they spin and yield.
 * A timeout means a peer stopped answering (died, was stopped, lost its network):
 * the caller fails every pending request on this rank with HV_ERR_TIMEOUT instead of
 * waiting forever. Before that, a wait of more than a few milliseconds also asks
 * fault.c whether a peer's process is gone or stopped, so the usual case (a rank
 * killed or crashed) ends at once with a message naming it. */
#include <sched.h>
#include <time.h>

#include "hv_internal.h"

hv_result_t hv__mpi_wait_all(hv_comm_t *comm, int n, MPI_Request *reqs, const char *what, int may_sleep) {
  double start = hv__now_us();
  double timeout_us = comm->config.timeout_s > 0 ? comm->config.timeout_s * 1e6 : 0;
  long sleep_ns = 2000;
  hv__wait_watch_t watch = {0, 0};
  for (unsigned iter = 0;; iter++) {
    int done = 0;
    HV_MPI_CHECK(comm, MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
    if (done) return HV_SUCCESS;
    if ((iter & 63) != 63) continue; /* read the clock now and then only */
    double waited = hv__now_us() - start;
    HV_CHECK(hv__fault_poll(comm, &watch, waited, what));
    if (timeout_us > 0 && waited > timeout_us) {
      /* The requests stay with MPI: freeing an unfinished collective's request makes
       * Open MPI's progress engine touch freed memory. The communicator is dead now;
       * hv_shutdown leaves it (and MPI) alone, and the job ends non-zero. */
      char stopped[200];
      hv__fault_stopped_note(comm, stopped, sizeof stopped);
      return hv__set_error(comm, HV_ERR_TIMEOUT,
                           "rank %d: %s did not complete within HV_TIMEOUT=%g s: a peer rank stopped answering "
                           "(it may have died, been stopped, or lost its network)%s",
                           comm->rank, what, comm->config.timeout_s, stopped);
    }
    /* Spin while it is cheap: only with a spare core, and only briefly otherwise. */
    if (waited < (comm->spin_ok ? 100 : 5)) continue;
    if (waited < (comm->spin_ok ? 1000 : 50) || !may_sleep) {
      sched_yield();
      continue;
    }
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL);
    if (sleep_ns < 50000) sleep_ns *= 2;
  }
}
