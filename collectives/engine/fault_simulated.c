/* fault_simulated.c: the fault watcher of simulated builds (HV_SIMGRID), in place of
 * fault.c. Its machinery is node-local (process ids, /proc, signals, a notice channel
 * polled during waits), and a simulated rank is a process of the simulator, not of a
 * node: SimGrid itself reports a rank that never answers (a deadlock), and waits are
 * MPI's own (algo/wait_mpi.c). So nothing is watched; the same calls answer that no
 * peer failed, and a shutdown is everyone's. */
#include <stdio.h>

#include "hv_internal.h"

_Thread_local hv_comm_t *hv__engine_thread_comm;

hv_result_t hv__fault_init(hv_comm_t *comm) {
  (void)comm;
  return HV_SUCCESS;
}

void hv__fault_free(hv_comm_t *comm) { (void)comm; }

hv_result_t hv__fault_poll(hv_comm_t *comm, hv__wait_watch_t *ww, double waited_us, const char *what) {
  (void)comm, (void)ww, (void)waited_us, (void)what;
  return HV_SUCCESS;
}

void hv__fault_stopped_note(hv_comm_t *comm, char *out, size_t len) {
  (void)comm;
  if (len) out[0] = '\0';
}

void hv__fault_report(hv_comm_t *comm, hv_result_t failure) { (void)comm, (void)failure; }

hv_result_t hv__fault_explain(hv_comm_t *comm, hv_result_t failure) {
  (void)comm;
  return failure;
}

hv_result_t hv__fault_shutdown_reason(hv_comm_t *comm, int want_shutdown) {
  (void)comm, (void)want_shutdown;
  return HV_SUCCESS;
}

int hv__fault_shutdown_why(hv_comm_t *comm, char *out, size_t len) {
  (void)comm;
  snprintf(out, len, "hv_shutdown was called on this rank before it ran");
  return 0;
}

size_t hv__fault_pending_names(hv_comm_t *comm, char *out, size_t len, int with_exec, const struct hv_handle *queued) {
  (void)comm, (void)with_exec, (void)queued;
  if (len) out[0] = '\0';
  return 0;
}

const char *hv__fault_dump_reason(hv_comm_t *comm, hv_result_t failure) {
  (void)comm;
  return failure == HV_ERR_TIMEOUT ? "timeout" : failure == HV_ERR_STALLED ? "stall" : "error";
}
