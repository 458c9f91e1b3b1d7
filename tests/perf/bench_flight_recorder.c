/* bench_flight_recorder.c: what the flight recorder costs, measured in one run so
 * that the machine's load is the same for both sides: two communicators over the
 * same ranks, one with the recorder (HV_FLIGHT_RECORDER_SIZE=4096) and one without
 * (0), timed in alternating blocks of steps. A step is hvbench's fused case: K named
 * allreduces of SIZE bytes (float32) submitted in an hv group, then hv_wait_all.
 *   mpirun -np 2 bench_flight_recorder [K=256] [SIZE=4096] [BLOCKS=40] [STEPS=20]
 * Rank 0 prints each side's median and fastest block (us per step) and the median
 * of the blocks' on/off ratios (each block beside the other side's next one).
 * BENCH_SAME=1 runs both sides without the recorder (the pairing's own noise);
 * BENCH_ON_SIZE=N gives the recorder side N events. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "hv.h"
#include "hv_mpi.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double run_block(hv_comm_t *comm, float **bufs, int k, size_t count, int steps) {
  hv_handle_t *h = malloc(sizeof *h * (size_t)k);
  char name[32];
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int s = 0; s < steps; s++) {
    hv_group_start(comm);
    for (int i = 0; i < k; i++) {
      snprintf(name, sizeof name, "g/%d", i);
      if (hv_allreduce_async(comm, name, bufs[i], bufs[i], count, HV_FLOAT32, HV_SUM, NULL, &h[i]) != HV_SUCCESS) {
        fprintf(stderr, "bench_flight_recorder: %s\n", hv_comm_last_error(comm));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
    hv_group_end(comm);
    if (hv_wait_all(h, (size_t)k) != HV_SUCCESS) {
      fprintf(stderr, "bench_flight_recorder: %s\n", hv_comm_last_error(comm));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  double t = (MPI_Wtime() - t0) / steps * 1e6, slowest;
  free(h);
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

int main(int argc, char **argv) {
  int provided, rank;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int k = argc > 1 ? atoi(argv[1]) : 256, blocks = argc > 3 ? atoi(argv[3]) : 40, steps = argc > 4 ? atoi(argv[4]) : 20;
  size_t count = (argc > 2 ? (size_t)atol(argv[2]) : 4096) / sizeof(float);
  hv_comm_t *comm[2]; /* [0]: recorder on, [1]: off */
  const char *sizes[2] = {"4096", "0"};
  /* BENCH_SAME=1: both without, to see what the pairing alone gives (about 1). */
  if (getenv("BENCH_SAME") && getenv("BENCH_SAME")[0] == '1') sizes[0] = "0";
  /* BENCH_ON_SIZE=N: the recorder side keeps N events instead of 4096. */
  if (getenv("BENCH_ON_SIZE")) sizes[0] = getenv("BENCH_ON_SIZE");
  for (int side = 0; side < 2; side++) {
    setenv("HV_FLIGHT_RECORDER_SIZE", sizes[side], 1);
    if (hv_init_from_mpi(MPI_COMM_WORLD, &comm[side]) != HV_SUCCESS) {
      fprintf(stderr, "bench_flight_recorder: hv_init_from_mpi: %s\n", hv_comm_last_error(NULL));
      return 1;
    }
  }
  float **bufs = malloc(sizeof *bufs * (size_t)k);
  for (int i = 0; i < k; i++) {
    bufs[i] = calloc(count, sizeof(float));
  }
  for (int side = 0; side < 2; side++) run_block(comm[side], bufs, k, count, steps); /* warm-up, names cached */
  double *t[2] = {malloc(sizeof(double) * (size_t)blocks), malloc(sizeof(double) * (size_t)blocks)};
  double *ratio = malloc(sizeof(double) * (size_t)blocks);
  for (int b = 0; b < blocks; b++) {
    /* Which side goes first alternates, so neither always follows the other. */
    int first = b % 2;
    t[first][b] = run_block(comm[first], bufs, k, count, steps);
    t[1 - first][b] = run_block(comm[1 - first], bufs, k, count, steps);
    ratio[b] = t[0][b] / t[1][b];
  }
  if (rank == 0) {
    double r = median(ratio, blocks), on = median(t[0], blocks), off = median(t[1], blocks);
    printf("%d x %zu B fused, %d blocks of %d steps: recorder on %.1f us/step (fastest block %.1f), off %.1f "
           "(fastest %.1f); median on/off ratio of paired blocks %.4f\n",
           k, count * sizeof(float), blocks, steps, on, t[0][0], off, t[1][0], r);
  }
  for (int side = 1; side >= 0; side--) hv_shutdown(comm[side]);
  for (int i = 0; i < k; i++) free(bufs[i]);
  free(bufs);
  free(t[0]), free(t[1]), free(ratio);
  MPI_Finalize();
  return 0;
}
