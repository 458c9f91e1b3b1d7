/* negotiation_sim.c: the cost of hv's negotiation rounds at scale, simulated (built by
 * the simulated build, run under smpirun by tools/sim/negotiation_sweep.sh):
 *  - a steady-state round: a cached name every rank submits (an allreduce of 0
 *    elements, so no data moves): one AND of the bit vector (negotiate_vector.c);
 *  - a cache-miss round: hv_barrier, whose names are never cached: the bit vector,
 *    then the misses gathered to the coordinator (rank 0) and its responses broadcast;
 *  - the peer: one 8-byte MPI_Allreduce of the same simulation (SMPI's Open MPI
 *    selection).
 * Prints one line on rank 0: ranks, then the three times in simulated microseconds
 * (the mean of ITERS after one warm-up round) and the steady round's ratio to the allreduce,
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
  double t_steady = 0, t_miss = 0, t_mpi = 0;
  /* Warm-up: the first round caches the name. The simulation is deterministic, so the
   * other two need none (the 8-byte MPI_Allreduce is rdb: no set-up on first use). */
  if ((rc = hv_allreduce(comm, "steady", &none, &none, 0, HV_FLOAT32, HV_SUM, NULL)) != HV_SUCCESS)
    return fail("hv_allreduce", rc);
  for (int phase = 1; phase < 2; phase++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
      if ((rc = hv_allreduce(comm, "steady", &none, &none, 0, HV_FLOAT32, HV_SUM, NULL)) != HV_SUCCESS)
        return fail("hv_allreduce", rc);
    double t1 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
      if ((rc = hv_barrier(comm)) != HV_SUCCESS) return fail("hv_barrier", rc);
    double t2 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
      uint64_t x = (uint64_t)rank;
      MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    double t3 = MPI_Wtime();
    t_steady = (t1 - t0) / iters, t_miss = (t2 - t1) / iters, t_mpi = (t3 - t2) / iters;
  }
  if (rank == 0)
    printf("ranks %d steady_us %.2f miss_us %.2f mpi_allreduce8_us %.2f steady/mpi %.2f miss/mpi %.2f "
           "init_us %.1f init_wall_s %.1f\n",
           size, t_steady * 1e6, t_miss * 1e6, t_mpi * 1e6, t_steady / t_mpi, t_miss / t_mpi, init_sim * 1e6, init_wall);
  rc = hv_shutdown(comm);
  MPI_Finalize();
  return rc == HV_SUCCESS ? 0 : 1;
}
