/* touched_allreduce.c: hv_allreduce through the engine the way a training step uses it:
 * the send buffer written before and the receive buffer read after every call, so the
 * time includes fetching the result into this core's cache. hvbench reuses untouched
 * buffers, which flatters a path that leaves the result in a peer's cache (the
 * single-copy allreduce, allreduce_shm_cma.c). Prints, on rank 0, each size (doubling
 * from LO to HI bytes of float32) and the median over ITERS calls of the slowest rank's
 * time, us. Build and run beside a build of hv (B):
 *   mpicc -O2 -Icollectives -o touched tests/perf/touched_allreduce.c -LB/collectives -lhvcoll \
 *         -Wl,-rpath,B/collectives
 *   HV_SHM_CMA=0 mpirun -np 2 --bind-to core ./touched 8192 4194304 300   # then HV_SHM_CMA=1 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "hv.h"
#include "hv_mpi.h"

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int provided, rank;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  hv_comm_t *comm;
  if (hv_init_from_mpi(MPI_COMM_WORLD, &comm) != HV_SUCCESS) {
    fprintf(stderr, "touched_allreduce: rank %d: hv_init_from_mpi failed\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const size_t lo = argc > 1 ? strtoul(argv[1], NULL, 0) : 8192, hi = argc > 2 ? strtoul(argv[2], NULL, 0) : 4u << 20;
  const int iters = argc > 3 ? atoi(argv[3]) : 300;
  double *times = malloc(sizeof(double) * (size_t)(iters > 0 ? iters : 1));
  volatile float sink = 0;
  for (size_t bytes = lo; bytes <= hi && iters > 0; bytes *= 2) {
    const size_t n = bytes / sizeof(float);
    float *send = malloc(bytes), *recv = malloc(bytes);
    for (int it = -3; it < iters; it++) { /* three warm-up calls */
      for (size_t i = 0; i < n; i++) send[i] = (float)((i + (size_t)it) & 7);
      const double t0 = MPI_Wtime();
      if (hv_allreduce(comm, "touched", send, recv, n, HV_FLOAT32, HV_SUM, NULL) != HV_SUCCESS) {
        fprintf(stderr, "touched_allreduce: rank %d: hv_allreduce failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      double dt = MPI_Wtime() - t0, slowest;
      float acc = 0;
      for (size_t i = 0; i < n; i += 16) acc += recv[i]; /* one element per cache line */
      sink += acc;
      MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (it >= 0) times[it] = slowest;
    }
    qsort(times, (size_t)iters, sizeof *times, by_value);
    if (rank == 0) printf("%zu %.2f\n", bytes, times[iters / 2] * 1e6);
    free(send);
    free(recv);
  }
  free(times);
  hv_shutdown(comm);
  MPI_Finalize();
  return 0;
}
