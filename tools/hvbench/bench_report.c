/* bench_report.c: the text output, laid out as nccl-tests' (a '#'-prefixed header
 * naming every rank, one line per size, a footer with out-of-bounds values and the
 * average bus bandwidth) so scripts written for all_reduce_perf read it. hvbench adds,
 * at the end of each line, tail-latency columns (OSU's view), and after all tables a
 * summary: per size, the fastest backend and each one's speed relative to MPI.
 * Everything prints on rank 0 only; the statistics are already global. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvbench.h"

static int my_rank(void) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void report_header(const bench_options_t *o, int argc, char **argv, MPI_Comm world) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &nranks);
  enum { HOST_LEN = 64 };
  char host[HOST_LEN] = {0};
  gethostname(host, sizeof(host) - 1);
  long pid = (long)getpid();
  /* Each rank's device: "cpu", or its GPU as nccl-tests names it. */
  enum { DEV_LEN = 128 };
  char dev[DEV_LEN] = "cpu";
  if (o->device == BENCH_DEVICE_CUDA) cuda_describe(dev, sizeof(dev));
  char *hosts = rank == 0 ? calloc((size_t)nranks, HOST_LEN) : NULL;
  char *devs = rank == 0 ? calloc((size_t)nranks, DEV_LEN) : NULL;
  long *pids = rank == 0 ? calloc((size_t)nranks, sizeof(long)) : NULL;
  MPI_Gather(host, HOST_LEN, MPI_CHAR, hosts, HOST_LEN, MPI_CHAR, 0, world);
  MPI_Gather(dev, DEV_LEN, MPI_CHAR, devs, DEV_LEN, MPI_CHAR, 0, world);
  MPI_Gather(&pid, 1, MPI_LONG, pids, 1, MPI_LONG, 0, world);
  if (rank != 0) return;

  printf("# hvbench %d.%d.%d:", HV_VERSION_MAJOR, HV_VERSION_MINOR, HV_VERSION_PATCH);
  for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
  printf("\n# %s  minBytes %zu maxBytes %zu step: ", coll_name(o->coll), o->min_bytes,
         o->max_bytes);
  if (o->step_bytes) printf("%zu(bytes)", o->step_bytes);
  else printf("%g(factor)", o->step_factor);
  printf(" warmup iters: %d iters: %d validation: %d\n", o->warmup, o->iters, o->check);
  const int cuda = o->device == BENCH_DEVICE_CUDA;
  printf("# algo: %s  engine: %s  tensors: %d%s  compression: %s  device: %s  peer: %s  "
         "ranks: %d\n",
         o->algo_all ? "all" : algo_name(o->algo), o->engine ? "on" : "off", o->tensors,
         o->grouped ? " (grouped)" : "",
         compression_name(o->compression), device_name(o->device), !o->peer ? "off" : cuda ? "nccl" : "mpi",
         nranks);
  const char *cycle = getenv("HV_CYCLE_TIME"), *fusion = getenv("HV_FUSION_THRESHOLD");
  printf("# HV_CYCLE_TIME=%s HV_FUSION_THRESHOLD=%s (unset: the engine's defaults)\n",
         cycle ? cycle : "unset", fusion ? fusion : "unset");
  /* Shared machines make noisy numbers: say how busy this one was when we started. */
  FILE *load = fopen("/proc/loadavg", "r");
  double l1 = 0, l5 = 0;
  if (load && fscanf(load, "%lf %lf", &l1, &l5) == 2)
    printf("# load average on rank 0's node: %.2f (1 min) %.2f (5 min)\n", l1, l5);
  if (load) fclose(load);
  if (data_fault_enabled())
    printf("# FAULT INJECTION ACTIVE (HVBENCH_INJECT_FAULT=1): results are damaged on "
           "purpose\n");
  printf("#\n# Using devices\n");
  for (int r = 0; r < nranks; r++)
    printf("#  Rank %2d Pid %7ld on %10s %s%s\n", r, pids[r], hosts + (size_t)r * HOST_LEN,
           cuda ? "" : "device ", devs + (size_t)r * DEV_LEN);
  fflush(stdout);
  free(devs);
  free(hosts);
  free(pids);
}

void report_table_start(const bench_backend_t *be, const bench_options_t *o) {
  if (my_rank() != 0) return;
  (void)o;
  printf("#\n# %s: %s\n", be->name, be->detail);
  printf("#%75s%34s%45s\n", "out-of-place", "in-place", "time of first placement");
  printf("# %10s  %12s  %8s  %6s  %6s  %8s  %7s  %7s  %6s  %8s  %7s  %7s  %6s  %8s  %8s  %8s  "
         "%8s\n",
         "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
         "algbw", "busbw", "#wrong", "min", "max", "p50", "p99");
  printf("# %10s  %12s  %8s  %6s  %6s  %8s  %7s  %7s  %6s  %8s  %7s  %7s  %6s  %8s  %8s  %8s  "
         "%8s\n",
         "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
         "(GB/s)", "", "(us)", "(us)", "(us)", "(us)");
  fflush(stdout);
}

static void print_place(const bench_stats_t *s) {
  if (!s->valid) {
    printf("  %8s  %7s  %7s  %6s", "n/a", "n/a", "n/a", "n/a");
    return;
  }
  char wrong[24];
  if (s->wrong < 0) snprintf(wrong, sizeof(wrong), "N/A");
  else snprintf(wrong, sizeof(wrong), "%lld", s->wrong);
  printf("  %8.2f  %7.2f  %7.2f  %6s", s->avg_us, s->algbw, s->busbw, wrong);
}

void report_row(const bench_row_t *row, const bench_options_t *o) {
  if (my_rank() != 0) return;
  const char *redop = coll_is_reducing(o->coll) ? op_short_name(row->op) : "none";
  printf("  %10zu  %12zu  %8s  %6s  %6d", row->bytes, row->count, dtype_short_name(row->dtype),
         redop, row->root);
  print_place(&row->place[0]);
  print_place(&row->place[1]);
  const bench_stats_t *first = row->place[0].valid ? &row->place[0] : &row->place[1];
  if (first->valid)
    printf("  %8.2f  %8.2f  %8.2f  %8.2f", first->min_us, first->max_us, first->p50_us,
           first->p99_us);
  printf("\n");
  fflush(stdout);
}

double report_table_end(const bench_row_t *rows, size_t nrows, int backend) {
  long long oob = 0;
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < nrows; i++) {
    if (rows[i].backend != backend) continue;
    for (int p = 0; p < 2; p++) {
      if (!rows[i].place[p].valid) continue;
      oob += rows[i].place[p].oob;
      sum += rows[i].place[p].busbw;
      n++;
    }
  }
  double avg = n ? sum / n : 0.0;
  if (my_rank() == 0) {
    printf("# Out of bounds values : %lld %s\n", oob, oob ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g\n", avg);
    fflush(stdout);
  }
  return avg;
}

static const bench_stats_t *first_place(const bench_row_t *r) {
  return r->place[0].valid ? &r->place[0] : r->place[1].valid ? &r->place[1] : NULL;
}

static const bench_row_t *find_row(const bench_row_t *rows, size_t nrows, const bench_row_t *like,
                                   int backend) {
  for (size_t i = 0; i < nrows; i++)
    if (rows[i].backend == backend && rows[i].dtype == like->dtype && rows[i].op == like->op &&
        rows[i].bytes == like->bytes)
      return &rows[i];
  return NULL;
}

void report_summary(const bench_row_t *rows, size_t nrows, bench_backend_t *backends,
                    int nbackends, const bench_options_t *o) {
  if (my_rank() != 0 || nbackends < 2) return;
  int peer = -1;
  for (int k = 0; k < nbackends; k++)
    if (backends[k].is_peer) peer = k;
  /* The ratios are to the peer: MPI on the CPU, NCCL with --device cuda. */
  const char *pn = peer < 0 || strcmp(backends[peer].name, "mpi") == 0 ? "MPI"
                   : backends[peer].name;
  printf("#\n# Summary: time of the first placement; xR = %s's time / this time (above 1: "
         "faster than %s)\n", pn, pn);
  printf("# %10s  %8s  %6s  %10s", "size", "type", "redop", "fastest");
  for (int k = 0; k < nbackends; k++) printf("  %10s", backends[k].name);
  printf("\n");
  for (size_t i = 0; i < nrows; i++) {
    if (rows[i].backend != 0) continue; /* one line per (dtype, op, size) */
    const bench_row_t *per[BENCH_MAX_BACKENDS] = {0};
    int fastest = -1;
    double best = 0;
    for (int k = 0; k < nbackends; k++) {
      per[k] = find_row(rows, nrows, &rows[i], k);
      const bench_stats_t *s = per[k] ? first_place(per[k]) : NULL;
      if (s && (fastest < 0 || s->avg_us < best)) {
        fastest = k;
        best = s->avg_us;
      }
    }
    const bench_stats_t *ps = peer >= 0 && per[peer] ? first_place(per[peer]) : NULL;
    printf("  %10zu  %8s  %6s  %10s", rows[i].bytes, dtype_short_name(rows[i].dtype),
           coll_is_reducing(o->coll) ? op_short_name(rows[i].op) : "none", fastest >= 0 ? backends[fastest].name : "-");
    for (int k = 0; k < nbackends; k++) {
      const bench_stats_t *s = per[k] ? first_place(per[k]) : NULL;
      if (s && ps && s->avg_us > 0) printf("  %9.3gx", ps->avg_us / s->avg_us);
      else printf("  %10s", "-");
    }
    printf("\n");
  }
  fflush(stdout);
}
