/* wait_mpi.c: every wait on MPI goes through here, so none can hang: requests are
 * polled until they complete or HV_TIMEOUT passes. Negotiation waits (peers may be
 * idle for up to 100 ms) spin briefly, then yield, then sleep with a growing
 * interval capped at 50 us, so a rank waiting for slower peers does not pin a core.
 * Data transfers never sleep: Open MPI moves large messages only while someone
 * polls, and every peer is in the same transfer, so they spin and yield.
 * A timeout means a peer stopped answering (died, was stopped, lost its network):
 * the caller fails every pending request on this rank with HV_ERR_TIMEOUT instead of
 * waiting forever. Before that, a wait of more than a few milliseconds also asks the
 * host (the engine's fault watcher) whether a peer's process is gone or stopped, so
 * the usual case (a rank killed or crashed) ends at once with a message naming it. */
#include <sched.h>
#include <time.h>

#include "algo.h"

hv_result_t hv__wait_mpi(const hv__algo_host_t *host, int n, MPI_Request *reqs, const char *what, int may_sleep) {
  return hv__wait_mpi_described(host, n, reqs, what, may_sleep, NULL, NULL);
}

hv_result_t hv__wait_mpi_described(const hv__algo_host_t *host, int n, MPI_Request *reqs, const char *what,
                                   int may_sleep, void (*describe)(void *arg, char *out, size_t len), void *arg) {
#if HV_SIMULATED
  /* Simulated ranks (SimGrid SMPI): the simulator advances time only inside MPI
   * calls, charges every polling MPI_Test, and finds deadlocks itself, so a wait is
   * MPI's own, timed exactly. */
  (void)may_sleep, (void)describe, (void)arg;
  if (MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return hv__algo_host_timeout(host, what);
  return HV_SUCCESS;
#else
  double start = hv__now_us();
  double timeout_us = host->timeout_s > 0 ? host->timeout_s * 1e6 : 0;
  long sleep_ns = 2000;
  hv__wait_watch_t watch = {0, 0};
  char described[400];
  for (unsigned iter = 0;; iter++) {
    int done = 0;
    HV_MPI_CHECK(&host->errors, MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
    if (done) return HV_SUCCESS;
    if ((iter & 63) != 63) continue; /* read the clock now and then only */
    double waited = hv__now_us() - start;
    if (describe && waited > HV__WAIT_DESCRIBE_US) {
      describe(arg, described, sizeof described);
      what = described, describe = NULL;
    }
    HV_CHECK(hv__algo_host_poll(host, &watch, waited, what));
    if (timeout_us > 0 && waited > timeout_us) return hv__algo_host_timeout(host, what);
    /* Spin while it is cheap: only with a spare core, and only briefly otherwise. */
    if (waited < (host->spin_ok ? 100 : 5)) continue;
    if (waited < (host->spin_ok ? 1000 : 50) || !may_sleep) {
      sched_yield();
      continue;
    }
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL);
    if (sleep_ns < 50000) sleep_ns *= 2;
  }
#endif
}
