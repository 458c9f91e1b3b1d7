/* mpi_init_timeout.c: hv_init must not wait without bound for a rank that never calls
 * it (issue 27). The last rank initialises MPI but never calls hv_init_from_mpi; every
 * other rank's call must fail with HV_ERR_TIMEOUT after HV_TIMEOUT (the test sets 2 s)
 * and not much later, with an error naming HV_TIMEOUT and hv_init. Each such rank
 * prints INIT-TIMEOUT-OK rank=R; the last rank waits until the others are past it,
 * then every rank leaves with _exit(0) (no MPI_Finalize: the abandoned duplicate
 * would make it wait for the missing rank). check_init_timeout.sh counts the lines. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "hv_mpi.h"

int main(int argc, char **argv) {
  int provided, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *t = getenv("HV_TIMEOUT");
  double timeout = t ? atof(t) : 60;
  if (rank == size - 1) {
    sleep((unsigned)(timeout + 4)); /* never calls hv_init */
    printf("late rank %d leaves\n", rank);
    fflush(stdout);
    _exit(0);
  }
  double t0 = now_s();
  hv_comm_t *comm = NULL;
  hv_result_t rc = hv_init_from_mpi(MPI_COMM_WORLD, &comm);
  double took = now_s() - t0;
  const char *msg = hv_comm_last_error(NULL);
  char want[64];
  snprintf(want, sizeof want, "HV_TIMEOUT=%g s", timeout);
  int ok = rc == HV_ERR_TIMEOUT && comm == NULL && took >= timeout - 0.1 && took <= timeout + 3 &&
           strstr(msg, want) && strstr(msg, "hv_init");
  printf("%s rank=%d rc=%d after %.2f s: %s\n", ok ? "INIT-TIMEOUT-OK" : "INIT-TIMEOUT-BAD", rank, (int)rc, took, msg);
  fflush(stdout);
  _exit(0);
}
