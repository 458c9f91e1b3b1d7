/* ping_allreduce.c: smallest check that a SimGrid platform loads and a collective runs
 * on it. REPS MPI_Allreduce of N floats (sum); rank 0 prints the MPI_Wtime difference of
 * the last one (simulated time under smpirun) and checks the result.
 * Build: smpicc -O2 -o build/sim/ping_allreduce tools/sim/ping_allreduce.c
 * Run:   smpirun -np 16 -platform tools/sim/platforms/fattree-16n-100g.xml \
 *          -hostfile tools/sim/platforms/hosts-16n-1ppn.txt \
 *          --cfg=smpi/simulate-computation:no ./build/sim/ping_allreduce 1048576
 * Usage: ping_allreduce [N=1048576] [REPS=1] [nocheck]   (nocheck: for runs with
 * smpi/auto-shared-malloc-thresh, where all ranks share one buffer and results are garbage) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long n = argc > 1 ? atol(argv[1]) : 1048576;
  int reps = argc > 2 ? atoi(argv[2]) : 1;
  float *x = malloc((size_t)n * sizeof *x);
  double dt = 0;
  for (int r = 0; r < reps; r++) {
    for (long i = 0; i < n; i++) x[i] = 1.0f;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    dt = MPI_Wtime() - t0;
  }
  int check = !(argc > 3 && strcmp(argv[3], "nocheck") == 0), bad = 0;
  for (long i = 0; check && i < n; i++) bad += x[i] != (float)size;
  if (rank == 0)
    printf("ping_allreduce: %d ranks, %ld floats (%ld bytes): %.6f ms %s\n", size, n, n * 4L, dt * 1e3,
           !check ? "(not checked)" : bad ? "WRONG RESULT" : "ok");
  free(x);
  MPI_Finalize();
  return bad != 0;
}
