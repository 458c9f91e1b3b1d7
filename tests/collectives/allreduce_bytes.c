/* allreduce_bytes.c: ITERS float32 allreduces of BYTES through hv with the algorithm
 * HV_ALLREDUCE_ALGO chooses; checks every result exactly and prints the median time
 * and bus bandwidth. Used by hier_netns.sh to count the bytes each algorithm puts on
 * the emulated node links. Usage: allreduce_bytes BYTES ITERS [compression] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  hv_comm_t *comm;
  if (argc < 3 || hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "usage: allreduce_bytes BYTES ITERS [none|fp16] (under mpirun)\n");
    return 2;
  }
  int rank, size, nodes, local;
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  hv_comm_cross_size(comm, &nodes);
  hv_comm_local_size(comm, &local);
  size_t n = (size_t)atoll(argv[1]) / sizeof(float);
  int iters = atoi(argv[2]);
  hv_allreduce_opts_t opts = HV_ALLREDUCE_OPTS_INIT;
  if (argc > 3 && strcmp(argv[3], "fp16") == 0) opts.compression = HV_COMPRESSION_FP16;
  float *x = malloc(n * sizeof *x);
  double *t = calloc((size_t)iters, sizeof *t);
  int bad = 0;
  for (int it = 0; it < iters; it++) {
    for (size_t i = 0; i < n; i++) x[i] = (float)((i + (size_t)rank) % 5);
    double t0 = MPI_Wtime();
    if (hv_allreduce(comm, "bytes", x, x, n, HV_FLOAT32, HV_SUM, &opts) != HV_SUCCESS) bad++;
    t[it] = MPI_Wtime() - t0;
    for (size_t i = 0; i < n && !bad; i++) {
      double want = 0;
      for (int r = 0; r < size; r++) want += (double)((i + (size_t)r) % 5);
      if (x[i] != want) bad++;
    }
  }
  qsort(t, (size_t)iters, sizeof *t, cmp);
  double busbw = 2.0 * (size - 1) / size * (double)(n * sizeof(float)) / t[iters / 2] / 1e9;
  if (rank == 0)
    printf("allreduce_bytes: %d ranks on %d nodes x %d, %zu bytes, algo %s, compression %s: median %.1f ms, "
           "busbw %.3f GB/s, %s\n", size, nodes, local, n * sizeof(float),
           getenv("HV_ALLREDUCE_ALGO") ? getenv("HV_ALLREDUCE_ALGO") : "auto", argc > 3 ? argv[3] : "none",
           t[iters / 2] * 1e3, busbw, bad ? "WRONG RESULTS" : "results correct");
  hv_shutdown(comm);
  return bad ? 1 : 0;
}
