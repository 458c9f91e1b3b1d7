/* negotiation_sim.c: the cost of hv's negotiation rounds at scale, simulated (built by
 * the simulated build, run under smpirun by tools/sim/negotiation_sweep.sh):
 *  - a steady-state round: a cached name every rank submits (an allreduce of 0
 *    elements, so no data moves): one AND of the bit vector (negotiate_vector.c);
 *  - a cache-miss round: hv_barrier, whose names are never cached: the bit vector,
 *    then the misses gathered to the coordinator (rank 0) and its responses broadcast;
 *  - the peer: one 8-byte MPI_Allreduce of the same simulation (SMPI's Open MPI
 *    selection).
 * Prints one line on rank 0: ranks, then the three times in simulated microseconds
 * (the mean of ITERS, after one untimed call of each) and the steady round's ratio to the allreduce,
 * then hv_init_from_mpi's own cost: simulated microseconds and wall seconds (the
 * simulator's, on rank 0). HV_SIM_SHARE_COMM=1 lets hv borrow MPI_COMM_WORLD
 * (comm.c): this program makes no MPI call while an hv operation is in flight. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hv.h"
#include "hv_mpi.h"

/* The simulator's own clock: SMPI redirects clock_gettime to simulated time. */
static double wall_s(void) {
  struct timespec t;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char *what, hv_result_t rc) {
  fprintf(stderr, "negotiation_sim: %s: %s (%s)\n", what, hv_strerror(rc), hv_comm_last_error(NULL));
  return 1;
}

int main(int argc, char **argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 10;
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  hv_comm_t *comm = NULL;
  MPI_Barrier(MPI_COMM_WORLD);
  const double w0 = wall_s(), s0 = MPI_Wtime();
  hv_result_t rc = hv_init_from_mpi(MPI_COMM_WORLD, &comm);
  if (rc != HV_SUCCESS) return fail("hv_init_from_mpi", rc);
  MPI_Barrier(MPI_COMM_WORLD);
  const double init_wall = wall_s() - w0, init_sim = MPI_Wtime() - s0;
  float none = 0;
  /* Warm-up: the first round caches the name. Each timed block starts with one untimed
   * call, so that the barrier's staggered exit is not charged to the first timed one. */
  if ((rc = hv_allreduce(comm, "steady", &none, &none, 0, HV_FLOAT32, HV_SUM, NULL)) != HV_SUCCESS)
    return fail("hv_allreduce", rc);
  double t[3];
  for (int what = 0; what < 3; what++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = 0;
    for (int i = -1; i < iters; i++) {
      if (i == 0) t0 = MPI_Wtime();
      if (what == 0) rc = hv_allreduce(comm, "steady", &none, &none, 0, HV_FLOAT32, HV_SUM, NULL);
      if (what == 1) rc = hv_barrier(comm);
      if (rc != HV_SUCCESS) return fail(what ? "hv_barrier" : "hv_allreduce", rc);
      if (what == 2) {
        uint64_t x = (uint64_t)rank;
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
      }
    }
    t[what] = (MPI_Wtime() - t0) / iters;
  }
  const double t_steady = t[0], t_miss = t[1], t_mpi = t[2];
  if (rank == 0)
    printf("ranks %d steady_us %.2f miss_us %.2f mpi_allreduce8_us %.2f steady/mpi %.2f miss/mpi %.2f "
           "init_us %.1f init_wall_s %.1f\n",
           size, t_steady * 1e6, t_miss * 1e6, t_mpi * 1e6, t_steady / t_mpi, t_miss / t_mpi, init_sim * 1e6, init_wall);
  rc = hv_shutdown(comm);
  MPI_Finalize();
  return rc == HV_SUCCESS ? 0 : 1;
}
