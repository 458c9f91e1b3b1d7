/* mpi_peer_stopped.c: a rank that stops answering (here: the last rank stops itself
 * with SIGSTOP in the middle of a training-like loop) never hangs the others: their
 * pending handles fail with HV_ERR_TIMEOUT after HV_TIMEOUT (the test sets 3 s),
 * with a message saying a peer stopped answering, and they exit. The wrapper
 * (check_peer_stopped.sh) checks the message, the bounded time, and that mpirun
 * ended the job (the stopped rank included) instead of hanging. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hv.h"

int main(int argc, char **argv) {
  hv_comm_t *comm;
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) return 1;
  int rank, size;
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  float grad[4096];
  for (int step = 0;; step++) {
    if (step == 5 && rank == size - 1) raise(SIGSTOP);
    for (int i = 0; i < 4096; i++) grad[i] = (float)(rank + i % 3);
    double t0 = MPI_Wtime();
    hv_result_t rc = hv_allreduce(comm, "grad", grad, grad, 4096, HV_FLOAT32, HV_SUM, NULL);
    double waited = MPI_Wtime() - t0;
    if (rc != HV_SUCCESS) {
      const char *msg = hv_comm_last_error(comm);
      int ok = rc == HV_ERR_TIMEOUT && strstr(msg, "stopped answering") && waited > 2.5 && waited < 15;
      printf("rank %d step %d: %s after %.1f s: %s%s\n", rank, step, hv_strerror(rc), waited, msg,
             ok ? " PEER-STOPPED-DETECTED" : "");
      fflush(stdout);
      hv_shutdown(comm); /* returns at once: MPI is left alone, its peer being gone */
      /* The first non-zero exit makes mpirun kill the job: give the other survivors
       * the moment they need to print their own line (the wrapper reads them all). */
      sleep(2);
      return ok ? 3 : 4;
    }
    if (step > 1000) return 5; /* the stop never happened */
  }
}
