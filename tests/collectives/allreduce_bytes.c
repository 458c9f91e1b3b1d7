/* allreduce_bytes.c: ITERS float32 allreduces of BYTES through hv with the algorithm
 * HV_ALLREDUCE_ALGO chooses; checks every result exactly and prints the median time
 * and bus bandwidth. Used by hier_netns.sh to count the bytes each algorithm puts on
 * the emulated node links. Usage: allreduce_bytes BYTES ITERS [compression] [ALGOS]
 *
 * ALGOS (a comma list, e.g. auto,hier,ring) compares algorithms within one launch:
 * one communicator per algorithm (HV_ALLREDUCE_ALGO set for each hv_init_from_mpi),
 * and the iterations interleaved (iteration i of every algorithm, then i + 1; each
 * iteration begins with the next algorithm, so none always follows the same), so
 * every algorithm meets the same TCP connections and the same spells of a busy
 * machine. Open MPI's TCP transport lands in a fast or a slow mode per launch (the
 * README), so medians of separate launches compare launches as much as algorithms.
 * One line per algorithm. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "hv_mpi.h"

#define MAX_ALGOS 8

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (argc < 3) {
    fprintf(stderr, "usage: allreduce_bytes BYTES ITERS [none|fp16] [ALGO,ALGO...] (under mpirun)\n");
    MPI_Finalize();
    return 2;
  }
  char list[256] = "";
  const char *algos[MAX_ALGOS];
  int nalgos = 0;
  if (argc > 4) {
    snprintf(list, sizeof list, "%s", argv[4]);
    for (char *tok = strtok(list, ","); tok && nalgos < MAX_ALGOS; tok = strtok(NULL, ",")) algos[nalgos++] = tok;
  } else {
    algos[nalgos++] = getenv("HV_ALLREDUCE_ALGO") ? getenv("HV_ALLREDUCE_ALGO") : "auto";
  }
  hv_comm_t *comm[MAX_ALGOS];
  for (int a = 0; a < nalgos; a++) {
    if (argc > 4) setenv("HV_ALLREDUCE_ALGO", algos[a], 1);
    if (hv_init_from_mpi(MPI_COMM_WORLD, &comm[a]) != HV_SUCCESS) {
      fprintf(stderr, "allreduce_bytes: hv_init_from_mpi (%s): %s\n", algos[a], hv_comm_last_error(NULL));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  int rank, size, nodes, local;
  hv_comm_rank(comm[0], &rank);
  hv_comm_size(comm[0], &size);
  hv_comm_cross_size(comm[0], &nodes);
  hv_comm_local_size(comm[0], &local);
  size_t n = (size_t)atoll(argv[1]) / sizeof(float);
  int iters = atoi(argv[2]);
  hv_allreduce_opts_t opts = HV_ALLREDUCE_OPTS_INIT;
  if (argc > 3 && strcmp(argv[3], "fp16") == 0) opts.compression = HV_COMPRESSION_FP16;
  float *x = malloc(n * sizeof *x);
  double *t = calloc((size_t)iters * (size_t)nalgos, sizeof *t);
  int bad[MAX_ALGOS] = {0}, any_bad = 0;
  for (int it = 0; it < iters; it++)
    for (int k = 0; k < nalgos; k++) {
      const int a = (it + k) % nalgos; /* each iteration starts with the next algorithm */
      for (size_t i = 0; i < n; i++) x[i] = (float)((i + (size_t)rank) % 5);
      double t0 = MPI_Wtime();
      if (hv_allreduce(comm[a], "bytes", x, x, n, HV_FLOAT32, HV_SUM, &opts) != HV_SUCCESS) bad[a]++;
      t[a * iters + it] = MPI_Wtime() - t0;
      for (size_t i = 0; i < n && !bad[a]; i++) {
        double want = 0;
        for (int r = 0; r < size; r++) want += (double)((i + (size_t)r) % 5);
        if (x[i] != want) bad[a]++;
      }
    }
  for (int a = 0; a < nalgos; a++) {
    double *ta = t + a * iters;
    qsort(ta, (size_t)iters, sizeof *ta, cmp);
    double busbw = 2.0 * (size - 1) / size * (double)(n * sizeof(float)) / ta[iters / 2] / 1e9;
    if (rank == 0)
      printf("allreduce_bytes: %d ranks on %d nodes x %d, %zu bytes, algo %s, compression %s: median %.1f ms, "
             "busbw %.3f GB/s, %s\n", size, nodes, local, n * sizeof(float), algos[a], argc > 3 ? argv[3] : "none",
             ta[iters / 2] * 1e3, busbw, bad[a] ? "WRONG RESULTS" : "results correct");
    any_bad |= bad[a];
  }
  for (int a = 0; a < nalgos; a++) hv_shutdown(comm[a]);
  free(x);
  free(t);
  MPI_Finalize();
  return any_bad ? 1 : 0;
}
