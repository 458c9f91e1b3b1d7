/* bench_autotune.c: the 256-tensor fused step (K named float32 allreduces of SIZE
 * bytes in an hv group, then hv_wait_all) timed for SECONDS, in steps per second.
 *   mpirun -np 2 bench_autotune [K=256] [SIZE=4096] [SECONDS=5]
 * Under HV_AUTOTUNE=1 (with HV_AUTOTUNE_LOG=FILE) the steps run first until rank 0's
 * log has its choice, and the timing starts after it; otherwise after 1 s of warm-up.
 * autotune_bench.sh runs it over a manual sweep of HV_FUSION_THRESHOLD x HV_CYCLE_TIME
 * and autotuned, alternating, and prints the ratio. Rank 0 prints one line:
 *   bench_autotune steps_per_s=S tuning_s=T */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune_log.h"
#include "hv.h"
#include "hv_mpi.h"

static void step(hv_comm_t *comm, float *bufs, hv_handle_t *h, int k, size_t count) {
  hv_group_start(comm);
  for (int i = 0; i < k; i++) {
    char name[32];
    snprintf(name, sizeof name, "g/%d", i);
    if (hv_allreduce_async(comm, name, bufs + (size_t)i * count, bufs + (size_t)i * count, count, HV_FLOAT32, HV_SUM,
                           NULL, &h[i]) != HV_SUCCESS) {
      fprintf(stderr, "bench_autotune: %s\n", hv_comm_last_error(comm));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  hv_group_end(comm);
  if (hv_wait_all(h, (size_t)k) != HV_SUCCESS) {
    fprintf(stderr, "bench_autotune: %s\n", hv_comm_last_error(comm));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

int main(int argc, char **argv) {
  int provided, rank;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int k = argc > 1 ? atoi(argv[1]) : 256;
  const size_t count = (argc > 2 ? (size_t)atol(argv[2]) : 4096) / sizeof(float);
  const double seconds = argc > 3 ? atof(argv[3]) : 5;
  hv_comm_t *comm;
  if (k < 1 || count < 1 || !(seconds > 0) || hv_init_from_mpi(MPI_COMM_WORLD, &comm) != HV_SUCCESS) {
    if (rank == 0) fprintf(stderr, "bench_autotune: bad arguments or hv_init failed: %s\n", hv_comm_last_error(NULL));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  float *bufs = calloc((size_t)k * count, sizeof(float));
  hv_handle_t *h = malloc(sizeof *h * (size_t)k);
  const char *tuning = getenv("HV_AUTOTUNE"), *log = getenv("HV_AUTOTUNE_LOG");
  const int autotune = tuning && strcmp(tuning, "1") == 0;
  double t0 = MPI_Wtime();
  for (long s = 0;; s++) {
    step(comm, bufs, h, k, count);
    if (s % 20 == 19) {
      int over = autotune ? autotune_log_chosen(log, rank) || MPI_Wtime() - t0 > 300 : MPI_Wtime() - t0 > 1.0;
      MPI_Bcast(&over, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (over) break;
    }
  }
  const double tuning_s = MPI_Wtime() - t0;
  MPI_Barrier(MPI_COMM_WORLD);
  long steps = 0;
  t0 = MPI_Wtime();
  for (int over = 0; !over; steps++) {
    step(comm, bufs, h, k, count);
    over = MPI_Wtime() - t0 >= seconds;
    MPI_Bcast(&over, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  const double elapsed = MPI_Wtime() - t0;
  if (rank == 0) printf("bench_autotune steps_per_s=%.1f tuning_s=%.1f\n", (double)steps / elapsed, tuning_s);
  hv_shutdown(comm);
  free(bufs);
  free(h);
  MPI_Finalize();
  return 0;
}
