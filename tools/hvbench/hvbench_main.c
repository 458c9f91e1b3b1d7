/* hvbench_main.c: hvbench's driver. Parses the command line, decides which backends
 * run (hv with each requested algorithm, then the MPI library's own collective as the
 * peer), and sweeps dtype x op x size over all backends, measuring out-of-place and
 * in-place, then prints one table per backend, the summary and the files asked for.
 *
 * With --device cuda the backends are hv through hv_cuda.h and raw NCCL (bench_cuda.c),
 * on device copies of the same buffers.
 * Each backend has its own hv communicator, all created before the sweep; every size
 * is measured on each backend in turn before the next size, so the comparison with
 * the peer is made under the same conditions (the tables print at the end). Buffers
 * are allocated once for the largest size and reused, as nccl-tests does. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvbench.h"

typedef struct plan {
  bench_backend_t backends[BENCH_MAX_BACKENDS];
  int nbackends;
  bench_algo_t algos[BENCH_MAX_BACKENDS]; /* hv algorithms to run, in order */
  int nalgos;
  int with_peer;
} plan_t;

static void plan_make(const bench_options_t *o, plan_t *p) {
  memset(p, 0, sizeof(*p));
  int allreduce = o->coll == BENCH_ALLREDUCE;
  if (o->device == BENCH_DEVICE_CUDA) {
    /* hv through hv_cuda.h (auto or all), then raw NCCL as the peer; --algo nccl: the
     * peer alone. */
    if (o->algo_all || o->algo == BENCH_ALGO_AUTO) p->algos[p->nalgos++] = BENCH_ALGO_AUTO;
  } else if (allreduce && o->algo_all) {
    p->algos[p->nalgos++] = BENCH_ALGO_RING;
    p->algos[p->nalgos++] = BENCH_ALGO_RD;
    p->algos[p->nalgos++] = BENCH_ALGO_SHM;
    p->algos[p->nalgos++] = BENCH_ALGO_HIER;
    p->algos[p->nalgos++] = BENCH_ALGO_MPI;
    p->algos[p->nalgos++] = BENCH_ALGO_RAB;
    p->algos[p->nalgos++] = BENCH_ALGO_2D;
  } else if (o->engine || allreduce) {
    p->algos[p->nalgos++] = o->algo_all ? BENCH_ALGO_AUTO : o->algo;
  }
  /* Without the engine, other collectives have only MPI's own (--algo mpi). */
  p->with_peer = o->peer || p->nalgos == 0;
}

/* The sweep: min, then times the factor (or plus the step), while <= max. Stops one
 * past MAX_SIZES so the caller can refuse a sweep that would never end. */
enum { MAX_SIZES = 10000 };
static size_t sizes_make(const bench_options_t *o, size_t **out) {
  size_t cap = 16, n = 0;
  size_t *sizes = malloc(cap * sizeof(size_t));
  for (size_t s = o->min_bytes; sizes && s <= o->max_bytes && n <= MAX_SIZES;) {
    if (n == cap) {
      size_t *grown = realloc(sizes, 2 * cap * sizeof(size_t));
      if (!grown) break;
      sizes = grown;
      cap *= 2;
    }
    sizes[n++] = s;
    size_t next = o->step_bytes ? s + o->step_bytes : (size_t)((double)s * o->step_factor);
    if (next <= s) next = s + 1; /* a factor close to 1 on small sizes still advances */
    s = next;
  }
  *out = sizes;
  return n;
}

static void case_init(bench_case_t *c, const bench_options_t *o, hv_dtype_t dtype, hv_op_t op,
                      int rank, int nranks) {
  memset(c, 0, sizeof(*c));
  c->coll = o->coll;
  c->dtype = dtype;
  c->op = op;
  c->root = coll_has_root(o->coll) ? o->root : -1;
  c->tensors = o->tensors;
  c->grouped = o->grouped;
  c->compression = o->compression;
  c->rank = rank;
  c->nranks = nranks;
}

static int rows_push(bench_row_t **rows, size_t *n, size_t *cap, const bench_row_t *row) {
  if (*n == *cap) {
    size_t ncap = *cap ? 2 * *cap : 64;
    bench_row_t *grown = realloc(*rows, ncap * sizeof(bench_row_t));
    if (!grown) return -1;
    *rows = grown;
    *cap = ncap;
  }
  (*rows)[(*n)++] = *row;
  return 0;
}

/* Stable: rows of backend 0 first, each backend's in measurement order. Should the
 * copy not fit in memory, the rows stay as measured (the tables filter by backend). */
static void rows_sort_by_backend(bench_row_t *rows, size_t n) {
  bench_row_t *sorted = malloc((n ? n : 1) * sizeof(bench_row_t));
  if (!sorted) return;
  size_t out = 0;
  for (int k = 0; out < n && k < BENCH_MAX_BACKENDS; k++)
    for (size_t i = 0; i < n; i++)
      if (rows[i].backend == k) sorted[out++] = rows[i];
  if (out == n) memcpy(rows, sorted, n * sizeof(bench_row_t));
  free(sorted);
}

int main(int argc, char **argv) {
  int provided = 0, rank = 0, nranks = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm world;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &nranks);

  bench_options_t o;
  int status = options_parse(argc, argv, rank, nranks, &o);
  if (status == 0 && o.help) {
    if (rank == 0) options_print_help();
    MPI_Finalize();
    return 0;
  }
  /* Every size must fit every dtype before anything runs, so a sweep never fails late. */
  size_t *sizes = NULL, nsizes = 0;
  if (status == 0) {
    nsizes = sizes_make(&o, &sizes);
    if (!sizes) bench_die(rank, "out of memory for the size list");
    if (nsizes > MAX_SIZES) {
      if (rank == 0)
        fprintf(stderr, "hvbench: rank 0: the sweep from %zu to %zu bytes has more than %d "
                "sizes: use a larger -i/--stepbytes or -f/--stepfactor\n",
                o.min_bytes, o.max_bytes, MAX_SIZES);
      status = BENCH_EXIT_USAGE;
    }
    for (int d = 0; d < o.num_dtypes && status == 0; d++)
      for (size_t s = 0; s < nsizes && status == 0; s++) {
        bench_case_t c;
        char err[256];
        case_init(&c, &o, (hv_dtype_t)o.dtypes[d], HV_SUM, rank, nranks);
        if (coll_layout(&c, sizes[s], err, sizeof(err)) != 0) {
          if (rank == 0) fprintf(stderr, "hvbench: rank 0: %s\n", err);
          status = BENCH_EXIT_USAGE;
        }
      }
  }
  /* Every rank learns whether every rank has a GPU, so none waits for one that left. */
  if (status == 0 && o.device == BENCH_DEVICE_CUDA) status = cuda_setup(world, rank);
  if (status != 0) {
    free(sizes);
    MPI_Comm_free(&world);
    MPI_Finalize();
    return status;
  }
  dtype_mpi_ops_create();
  report_header(&o, argc, argv, world);
  if (rank == 0 && provided < MPI_THREAD_MULTIPLE)
    printf("# warning: MPI gives thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
  if (rank == 0 && o.algo_all && o.coll == BENCH_ALLREDUCE && o.device == BENCH_DEVICE_CPU)
    printf(cuda_built() ? "# nccl: measured with --device cuda\n"
                        : "# not available in this build: hv:nccl (comes with the GPU path)\n");

  /* One buffer set, sized for the largest case of the widest dtype layout. */
  bench_case_t biggest;
  case_init(&biggest, &o, HV_UINT8, HV_SUM, rank, nranks);
  char err[512];
  if (coll_layout(&biggest, nsizes ? sizes[nsizes - 1] : 0, err, sizeof(err)) != 0)
    bench_die(rank, "%s", err);
  bench_buffers_t bufs;
  if (buffers_alloc(&bufs, &biggest, err, sizeof(err)) != 0) bench_die(rank, "%s", err);
  if (o.device == BENCH_DEVICE_CUDA && cuda_buffers_alloc(&bufs, err, sizeof(err)) != 0)
    bench_die(rank, "%s", err);

  plan_t plan;
  plan_make(&o, &plan);
  bench_row_t *rows = NULL;
  size_t nrows = 0, rows_cap = 0;
  int slow = 0, wrong = 0;
  int total = plan.nalgos + plan.with_peer;
  /* Every backend exists for the whole sweep, and each size runs on all of them before
   * the next size: a slow spell of a shared machine then lands on every backend of
   * that size, and the ratios against the peer stay meaningful. (Measured: one
   * backend after another, MPI's 1 MiB allreduce took 110 us in one table and 550 us
   * in the next run's.) The tables are printed once the sweep is done. */
  for (int k = 0; k < total; k++) {
    bench_backend_t *be = &plan.backends[plan.nbackends];
    if (o.device == BENCH_DEVICE_CUDA) {
      int failed = k < plan.nalgos ? cuda_hv_backend_create(be, world, err, sizeof(err))
                                   : cuda_nccl_backend_create(be, world, err, sizeof(err));
      if (failed)
        bench_die(rank, "cannot create the %s backend: %s", k < plan.nalgos ? "hv:cuda" : "nccl",
                  err);
    } else if (k < plan.nalgos) {
      int failed = o.engine
                       ? engine_backend_create(be, o.coll, plan.algos[k], world, err, sizeof(err))
                       : direct_backend_create(be, plan.algos[k], world, err, sizeof(err));
      if (failed)
        bench_die(rank, "cannot create the hv communicator for --algo %s: %s",
                  algo_name(plan.algos[k]), err);
    } else if (mpi_backend_create(be, world) != 0) {
      bench_die(rank, "out of memory creating the MPI peer");
    }
    plan.nbackends++;
  }
  for (int d = 0; d < o.num_dtypes; d++)
    for (int p = 0; p < o.num_ops; p++) {
      hv_dtype_t dtype = (hv_dtype_t)o.dtypes[d];
      hv_op_t op = (hv_op_t)o.ops[p];
      if (op == HV_AVERAGE && !dtype_is_float(dtype)) continue; /* -o all on ints */
      for (size_t s = 0; s < nsizes; s++)
        for (int k = 0; k < plan.nbackends; k++) {
          bench_backend_t *be = &plan.backends[k];
          bench_case_t c;
          case_init(&c, &o, dtype, op, rank, nranks);
          coll_layout(&c, sizes[s], err, sizeof(err)); /* validated above */
          buffers_use(&bufs, &c);
          bench_row_t row;
          memset(&row, 0, sizeof(row));
          row.backend = k;
          row.dtype = dtype;
          row.op = op;
          row.root = c.root;
          row.bytes = c.bytes;
          row.count = c.count;
          for (int ip = 0; ip < 2; ip++)
            run_measure(be, &c, &bufs, &o, ip, world, &row.place[ip]);
          for (int ip = 0; ip < 2; ip++)
            if (row.place[ip].wrong > 0 || row.place[ip].oob > 0) wrong = 1;
          if (rows_push(&rows, &nrows, &rows_cap, &row) != 0)
            bench_die(rank, "out of memory for result rows");
        }
    }
  /* Tables, files and the summary list the rows backend by backend, as measured
   * within each backend. */
  rows_sort_by_backend(rows, nrows);
  for (int k = 0; k < plan.nbackends; k++) {
    bench_backend_t *be = &plan.backends[k];
    report_table_start(be, &o);
    for (size_t i = 0; i < nrows; i++)
      if (rows[i].backend == k) report_row(&rows[i], &o);
    double avg = report_table_end(rows, nrows, k);
    if (o.min_busbw > 0 && !(be->is_peer && plan.nalgos > 0) && avg < o.min_busbw) {
      slow = 1;
      if (rank == 0)
        printf("# %s: average bus bandwidth %g GB/s is below --min-busbw %g\n", be->name, avg,
               o.min_busbw);
    }
  }
  for (int k = 0; k < plan.nbackends; k++) plan.backends[k].destroy(&plan.backends[k]);
  report_summary(rows, nrows, plan.backends, plan.nbackends, &o);

  int files_failed = 0;
  if (rank == 0) {
    if (o.json_path)
      files_failed |= output_json(o.json_path, &o, rows, nrows, plan.backends, plan.nbackends,
                                  nranks) != 0;
    if (o.csv_path)
      files_failed |= output_csv(o.csv_path, &o, rows, nrows, plan.backends, plan.nbackends,
                                 nranks) != 0;
    if (o.plot_path)
      files_failed |= output_plot(o.plot_path, &o, rows, nrows, plan.backends, plan.nbackends,
                                  nranks) != 0;
  }
  MPI_Bcast(&files_failed, 1, MPI_INT, 0, world);
  if (wrong) status = BENCH_EXIT_WRONG;
  else if (files_failed) status = BENCH_EXIT_RUNTIME;
  else if (slow) status = BENCH_EXIT_SLOW;
  if (rank == 0) {
    if (wrong)
      printf("# FAILED: wrong or out-of-bounds values were found (see #wrong and the "
             "footers)\n");
    printf("# exit status %d\n", status);
    fflush(stdout);
  }

  free(rows);
  free(sizes);
  if (o.device == BENCH_DEVICE_CUDA) {
    cuda_buffers_free(&bufs);
    cuda_teardown();
  }
  buffers_free(&bufs);
  dtype_mpi_ops_free();
  MPI_Comm_free(&world);
  MPI_Finalize();
  return status;
}
