/* peer_allreduce.c: MPI_Allreduce of any MPI library, timed as hvbench times hv (a
 * barrier, back-to-back iterations, each timed on every rank, the slowest rank per
 * iteration taken, p50 over iterations), for tests/perf/peer_mpi_bench.sh. Built with
 * that library's compiler wrapper (Intel MPI's mpigcc, MPICH's or Open MPI 5's
 * mpicc), so it is plain MPI and links nothing of hv.
 *
 *   mpirun -np 2 peer_allreduce [-b 4K] [-e 256M] [-f 4] [-n 50] [-w 10] [--tensors K]
 *                               [--in-place]
 * prints one line per size: "peer BYTES P50_US MEAN_US CPU_US_PER_RANK WRONG", where
 * WRONG counts elements that differ from the exact float32 sum (small integers) of a
 * checked run after the timed ones. --tensors K makes K calls of BYTES each per
 * iteration (the time covers all K, as hvbench --tensors). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024.0;
  else if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024;
  else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t minb = 4096, maxb = 256u << 20;
  double factor = 4;
  int iters = 50, warm = 10, tensors = 1, in_place = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-b") && v) minb = parse_size(v), i++;
    else if (!strcmp(a, "-e") && v) maxb = parse_size(v), i++;
    else if (!strcmp(a, "-f") && v) factor = atof(v), i++;
    else if (!strcmp(a, "-n") && v) iters = atoi(v), i++;
    else if (!strcmp(a, "-w") && v) warm = atoi(v), i++;
    else if (!strcmp(a, "--tensors") && v) tensors = atoi(v), i++;
    else if (!strcmp(a, "--in-place")) in_place = 1;
    else {
      if (rank == 0) fprintf(stderr, "peer_allreduce: unknown or incomplete option '%s'\n", a);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (iters < 1 || tensors < 1 || factor <= 1 || minb < 4 || maxb < minb) {
    if (rank == 0) fprintf(stderr, "peer_allreduce: bad sizes or counts\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double *times = malloc(sizeof(double) * (size_t)iters), *slowest = malloc(sizeof(double) * (size_t)iters);
  for (size_t bytes = minb; bytes <= maxb; bytes = (size_t)(bytes * factor)) {
    const size_t count = bytes / sizeof(float);
    float **send = malloc(sizeof(float *) * (size_t)tensors), **recv = malloc(sizeof(float *) * (size_t)tensors);
    for (int t = 0; t < tensors; t++) {
      send[t] = malloc(bytes);
      recv[t] = malloc(bytes);
      for (size_t k = 0; k < count; k++) send[t][k] = (float)((k * 7 + (size_t)rank * 3) % 5 + 1);
      memcpy(recv[t], send[t], bytes);
    }
    for (int w = 0; w < warm; w++)
      for (int t = 0; t < tensors; t++)
        MPI_Allreduce(in_place ? MPI_IN_PLACE : send[t], recv[t], (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double total = 0, cpu0 = cpu_seconds();
    for (int it = 0; it < iters; it++) {
      double t0 = MPI_Wtime();
      for (int t = 0; t < tensors; t++)
        MPI_Allreduce(in_place ? MPI_IN_PLACE : send[t], recv[t], (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      times[it] = MPI_Wtime() - t0;
      total += times[it];
    }
    double cpu = (cpu_seconds() - cpu0) / iters, cpu_sum = 0, mean_sum = 0, mean = total / iters;
    MPI_Allreduce(times, slowest, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&cpu, &cpu_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mean, &mean_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    qsort(slowest, (size_t)iters, sizeof(double), cmp_double);
    /* The check: fresh inputs, one call, the exact sum of small integers. */
    long wrong = 0, wrong_all = 0;
    for (size_t k = 0; k < count; k++) recv[0][k] = send[0][k];
    MPI_Allreduce(in_place ? MPI_IN_PLACE : send[0], recv[0], (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (size_t k = 0; k < count; k++) {
      double want = 0;
      for (int r = 0; r < size; r++) want += (double)((k * 7 + (size_t)r * 3) % 5 + 1);
      wrong += recv[0][k] != (float)want;
    }
    MPI_Allreduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
      printf("peer %zu %.2f %.2f %.2f %ld\n", bytes, slowest[(iters - 1) / 2] * 1e6, mean_sum / size * 1e6,
             cpu_sum / size * 1e6, wrong_all);
    fflush(stdout);
    for (int t = 0; t < tensors; t++) free(send[t]), free(recv[t]);
    free(send);
    free(recv);
  }
  free(times);
  free(slowest);
  MPI_Finalize();
  return 0;
}
