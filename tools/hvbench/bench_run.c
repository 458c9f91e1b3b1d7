/* bench_run.c: one measurement: warm-up, timed iterations, one checked run, and the
 * statistics combined across ranks.
 *
 * Timing follows nccl-tests (a barrier, then back-to-back iterations with no barrier
 * between them, so pipelining across iterations counts as it would in training) and
 * adds OSU's tail-latency view: each iteration is timed on every rank, the slowest rank
 * per iteration gives the per-iteration time, and p50/p99 are taken over those.
 * The reported time is the average over ranks of each rank's mean (nccl-tests' default
 * "-a 1"), with the min and max of those means beside it.
 * The check runs after timing on freshly written inputs, as nccl-tests does, so a
 * checked run never perturbs the timed ones.
 * --device cuda (be->sync set): inputs are written on the host and uploaded, results
 * downloaded before the same check; the timed loop is bench_cuda.c's (one wait after
 * all iterations, as nccl-tests times GPUs), the statistics are combined as here.
 * Also the backends' shared hv set-up and error text (bench_hv_open, bench_hv_error). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hv_mpi.h"
#include "hvbench.h"

void bench_die(int rank, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hvbench: rank %d: ", rank);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  /* Other ranks may be blocked in a collective with us: abort the whole job rather
   * than leave them hanging. */
  MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_RUNTIME);
  exit(BENCH_EXIT_RUNTIME);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *sorted, int n, double q) {
  int k = (int)ceil(q * n) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return sorted[k];
}

static void run_once(bench_backend_t *be, const bench_case_t *c, bench_buffers_t *b,
                     int in_place) {
  char err[512];
  if (be->run(be, c, b, in_place, err, sizeof(err)) != 0)
    bench_die(c->rank, "%s %s %s %zu B (%s): %s", be->name, coll_name(c->coll),
              dtype_short_name(c->dtype), c->bytes, in_place ? "in-place" : "out-of-place",
              err);
}

static void run_sync(bench_backend_t *be, const bench_case_t *c) {
  char err[512];
  if (be->sync && be->sync(be, err, sizeof(err)) != 0)
    bench_die(c->rank, "%s %s %s %zu B: %s", be->name, coll_name(c->coll),
              dtype_short_name(c->dtype), c->bytes, err);
}

/* Inputs to the device (--device cuda), or nothing on the CPU. */
static void run_upload(const bench_options_t *opts, const bench_case_t *c, bench_buffers_t *b) {
  char err[512];
  if (opts->device == BENCH_DEVICE_CUDA && cuda_upload(b, err, sizeof(err)) != 0)
    bench_die(c->rank, "%s", err);
}

static double process_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int run_measure(bench_backend_t *be, const bench_case_t *c, bench_buffers_t *b,
                const bench_options_t *opts, int in_place, MPI_Comm world,
                bench_stats_t *stats) {
  stats->valid = 0;
  stats->wrong = -1;
  stats->oob = 0;
  if (!be->supports(be, c, in_place)) return 0;

  int iters = opts->iters;
  double *times = malloc((size_t)iters * sizeof(double));
  double *slowest = malloc((size_t)iters * sizeof(double));
  if (!times || !slowest) bench_die(c->rank, "out of memory for %d iteration times", iters);

  data_fill(c, b, in_place);
  run_upload(opts, c, b);
  for (int w = 0; w < opts->warmup; w++) run_once(be, c, b, in_place);
  run_sync(be, c);
  MPI_Barrier(world);
  double total = 0.0, cpu0 = process_cpu_seconds();
  if (opts->device == BENCH_DEVICE_CUDA) {
    char err[512];
    if (cuda_timed_loop(be, c, b, in_place, iters, times, &total, err, sizeof(err)) != 0)
      bench_die(c->rank, "%s %s %s %zu B (%s): %s", be->name, coll_name(c->coll),
                dtype_short_name(c->dtype), c->bytes, in_place ? "in-place" : "out-of-place",
                err);
  } else {
    for (int it = 0; it < iters; it++) {
      double t0 = MPI_Wtime();
      run_once(be, c, b, in_place);
      times[it] = MPI_Wtime() - t0;
      total += times[it];
    }
  }

  double cpu = (process_cpu_seconds() - cpu0) / iters, sum_cpu = 0;
  double mean = total / iters, sum_mean = 0, min_mean = 0, max_mean = 0;
  MPI_Allreduce(&cpu, &sum_cpu, 1, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(&mean, &sum_mean, 1, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(&mean, &min_mean, 1, MPI_DOUBLE, MPI_MIN, world);
  MPI_Allreduce(&mean, &max_mean, 1, MPI_DOUBLE, MPI_MAX, world);
  MPI_Allreduce(times, slowest, iters, MPI_DOUBLE, MPI_MAX, world);
  qsort(slowest, (size_t)iters, sizeof(double), cmp_double);

  stats->valid = 1;
  stats->avg_us = sum_mean / c->nranks * 1e6;
  stats->min_us = min_mean * 1e6;
  stats->max_us = max_mean * 1e6;
  stats->p50_us = percentile(slowest, iters, 0.50) * 1e6;
  stats->p99_us = percentile(slowest, iters, 0.99) * 1e6;
  stats->cpu_us = sum_cpu / c->nranks * 1e6;
  coll_bandwidth(c, sum_mean / c->nranks, &stats->algbw, &stats->busbw);
  free(times);
  free(slowest);

  if (opts->check) {
    long long local[2] = {0, 0}, global[2] = {0, 0};
    data_fill(c, b, in_place);
    run_upload(opts, c, b);
    run_once(be, c, b, in_place);
    run_sync(be, c);
    if (opts->device == BENCH_DEVICE_CUDA) {
      char err[512];
      if (cuda_download(b, err, sizeof(err)) != 0) bench_die(c->rank, "%s", err);
    }
    if (data_fault_enabled()) data_inject_fault(c, b, in_place);
    data_check(c, b, in_place, &local[0], &local[1]);
    MPI_Allreduce(local, global, 2, MPI_LONG_LONG, MPI_SUM, world);
    stats->wrong = global[0];
    stats->oob = global[1];
  }
  return 0;
}

int bench_hv_error(hv_comm_t *comm, hv_result_t rc, const char *what, char *err, size_t err_len) {
  const char *detail = hv_comm_last_error(comm);
  snprintf(err, err_len, "%s: %s%s%s", what, hv_strerror(rc), detail && *detail ? ": " : "",
           detail ? detail : "");
  return -1;
}

int bench_hv_open(MPI_Comm world, hv_comm_t **comm, char *err, size_t err_len) {
  hv_result_t rc = hv_init_from_mpi(world, comm);
  return rc == HV_SUCCESS ? 0 : bench_hv_error(NULL, rc, "hv_init_from_mpi", err, err_len);
}

int bench_out_of_memory(char *err, size_t err_len) {
  snprintf(err, err_len, "out of memory");
  return -1;
}
