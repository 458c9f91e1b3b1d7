/* engine_vs_mpi.c: the engine against the MPI library on the same ranks, in one run
 * (the measurement of the collective-engine issue; hvbench has the full set):
 *  - one 64 MiB float32 allreduce through hv (ring, and auto) vs MPI_Allreduce;
 *  - 256 tensors of 4 KiB through hv (negotiated and fused) vs 256 MPI_Allreduce calls.
 * Prints the median of the timed iterations and the ratios; checks every result. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "hv_mpi.h"

#define ITERS 7
#define NSMALL 256
#define SMALL_COUNT 1024 /* 4 KiB of float32 */

static int R, N;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return t[n / 2];
}

static void fill(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = (float)((i + (size_t)R) % 7);
}

static int check(const float *x, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    double want = 0;
    for (int r = 0; r < N; r++) want += (double)((i + (size_t)r) % 7);
    if (x[i] != want) {
      fprintf(stderr, "rank %d: %s wrong at %zu: %g != %g\n", R, what, i, x[i], want);
      return 1;
    }
  }
  return 0;
}

static double time_hv_large(hv_comm_t *comm, float *x, size_t n, int *bad) {
  double t[ITERS];
  for (int it = 0; it < ITERS; it++) {
    fill(x, n);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (hv_allreduce(comm, "large", x, x, n, HV_FLOAT32, HV_SUM, NULL) != HV_SUCCESS) *bad = 1;
    t[it] = MPI_Wtime() - t0;
    *bad |= check(x, n, "hv 64 MiB");
  }
  return median(t, ITERS);
}

int main(int argc, char **argv) {
  int provided, bad = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  MPI_Comm_size(MPI_COMM_WORLD, &N);
  size_t n = (64u << 20) / sizeof(float);
  float *x = malloc(n * sizeof *x);
  double t[ITERS];

  for (int it = 0; it < ITERS; it++) {
    fill(x, n);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t[it] = MPI_Wtime() - t0;
    bad |= check(x, n, "MPI 64 MiB");
  }
  double t_mpi = median(t, ITERS);
  const char *algos[] = {"ring", "auto"};
  double t_hv[2];
  for (int a = 0; a < 2; a++) {
    setenv("HV_ALLREDUCE_ALGO", algos[a], 1);
    hv_comm_t *comm;
    if (hv_init_from_mpi(MPI_COMM_WORLD, &comm) != HV_SUCCESS) return 1;
    t_hv[a] = time_hv_large(comm, x, n, &bad);
    hv_shutdown(comm);
  }
  unsetenv("HV_ALLREDUCE_ALGO");
  double busbw = 2.0 * (N - 1) / N * (double)(n * sizeof(float)) / 1e9;
  if (R == 0) {
    printf("# %d ranks, 64 MiB float32 allreduce, median of %d\n", N, ITERS);
    printf("%-28s %10.2f ms  busbw %6.2f GB/s\n", "MPI_Allreduce", t_mpi * 1e3, busbw / t_mpi);
    for (int a = 0; a < 2; a++)
      printf("hv %-25s %10.2f ms  busbw %6.2f GB/s  (%.2fx MPI)\n", algos[a], t_hv[a] * 1e3, busbw / t_hv[a], t_mpi / t_hv[a]);
  }
  free(x);

  /* 256 x 4 KiB */
  float *small = malloc((size_t)NSMALL * SMALL_COUNT * sizeof *small);
  for (int it = 0; it < ITERS; it++) {
    fill(small, (size_t)NSMALL * SMALL_COUNT);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < NSMALL; k++)
      MPI_Allreduce(MPI_IN_PLACE, small + (size_t)k * SMALL_COUNT, SMALL_COUNT, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t[it] = MPI_Wtime() - t0;
  }
  double t_mpi_small = median(t, ITERS);
  hv_comm_t *comm;
  if (hv_init_from_mpi(MPI_COMM_WORLD, &comm) != HV_SUCCESS) return 1;
  hv_handle_t hs[NSMALL];
  for (int it = 0; it < ITERS + 1; it++) { /* the first pass fills the response cache */
    fill(small, (size_t)NSMALL * SMALL_COUNT);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < NSMALL; k++) {
      char name[32];
      snprintf(name, sizeof name, "grad.%d", k);
      if (hv_allreduce_async(comm, name, small + (size_t)k * SMALL_COUNT, small + (size_t)k * SMALL_COUNT,
                             SMALL_COUNT, HV_FLOAT32, HV_SUM, NULL, &hs[k]) != HV_SUCCESS) bad = 1;
    }
    if (hv_wait_all(hs, NSMALL) != HV_SUCCESS) bad = 1;
    if (it > 0) t[it - 1] = MPI_Wtime() - t0;
    bad |= check(small, (size_t)NSMALL * SMALL_COUNT, "hv 256 x 4 KiB");
  }
  double t_hv_small = median(t, ITERS);
  hv_shutdown(comm);
  if (R == 0) {
    printf("# 256 tensors x 4 KiB float32, median of %d\n", ITERS);
    printf("%-28s %10.3f ms\n", "256 x MPI_Allreduce", t_mpi_small * 1e3);
    printf("%-28s %10.3f ms  (%.2fx faster)\n", "hv fused (256 async)", t_hv_small * 1e3, t_mpi_small / t_hv_small);
    printf("%s\n", bad ? "RESULTS WRONG" : "all results correct");
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  free(small);
  MPI_Finalize();
  return any;
}
