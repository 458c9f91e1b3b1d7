/* hvbench.h: the internal interface between hvbench's modules.
 *
 * hvbench measures hv's collectives the way nccl-tests and OSU measure NCCL and MPI:
 * a sweep of sizes, warm-up then timed iterations, the nccl-tests table (time, algbw,
 * busbw, #wrong for out-of-place and in-place), and the MPI library's own collective
 * run on the same buffers as the peer. The modules:
 *   bench_options.c  command line -> bench_options_t, --help
 *   bench_dtype.c    dtypes and ops: names, sizes, MPI types/ops, fp16/bf16 conversion
 *   bench_coll.c     per-collective layout: counts, buffer sizes, busbw factor
 *   bench_data.c     exactly-known inputs, result checking, out-of-bounds guards
 *   bench_mpi.c      the peer: MPI's own collectives
 *   bench_engine.c   hv through the engine (one communicator per algorithm)
 *   bench_direct.c   --no-engine: one hv allreduce algorithm called directly
 *   bench_cuda.c     --device cuda: device buffers, hv_cuda.h and raw NCCL (the peer
 *                    there), the GPU timed loop; bench_cuda_stub.c in builds without NCCL
 *   bench_run.c      warm-up, timed loop, statistics combined across ranks
 *   bench_report.c   the table, footer and --algo all summary
 *   bench_output.c   --json, --csv and --plot (gnuplot)
 */
#ifndef HVBENCH_H
#define HVBENCH_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "hv.h"

/* Exit status of hvbench (documented in --help). */
enum {
  BENCH_EXIT_OK = 0,
  BENCH_EXIT_RUNTIME = 1, /* an hv/MPI call failed, a file could not be written */
  BENCH_EXIT_USAGE = 2,   /* bad command line */
  BENCH_EXIT_WRONG = 3,   /* #wrong or out-of-bounds values were found */
  BENCH_EXIT_SLOW = 4     /* an average bus bandwidth below --min-busbw */
};

typedef enum {
  BENCH_ALLREDUCE = 0,
  BENCH_ALLGATHER,
  BENCH_BROADCAST,
  BENCH_REDUCESCATTER,
  BENCH_ALLTOALL,
  BENCH_ALLTOALLV, /* equal splits, as nccl-tests' alltoall; hv_alltoallv vs MPI_Alltoallv */
  BENCH_REDUCE,
  BENCH_GATHER,
  BENCH_SCATTER,
  BENCH_SENDRECV, /* nccl-tests' sendrecv: each rank sends to rank+1, receives from rank-1 */
  BENCH_NUM_COLLS
} bench_coll_t;

/* Algorithms named by --algo. BENCH_ALGO_AUTO is the engine's own choice. */
typedef enum {
  BENCH_ALGO_AUTO = 0,
  BENCH_ALGO_RING,
  BENCH_ALGO_RD,
  BENCH_ALGO_HIER,
  BENCH_ALGO_MPI,
  BENCH_ALGO_NCCL,
  BENCH_ALGO_SHM,
  BENCH_ALGO_RAB,
  BENCH_ALGO_2D,
  BENCH_NUM_ALGOS
} bench_algo_t;

typedef enum { BENCH_DEVICE_CPU = 0, BENCH_DEVICE_CUDA } bench_device_t;

/* Bytes after every send and receive buffer that must stay untouched. */
#define BENCH_GUARD_BYTES 64

#define BENCH_MAX_DTYPES HV_NUM_DTYPES
#define BENCH_MAX_OPS HV_NUM_OPS
#define BENCH_MAX_BACKENDS 8 /* --algo all: 7 hv algorithms and the peer */

typedef struct bench_options {
  bench_coll_t coll;
  size_t min_bytes, max_bytes;
  double step_factor; /* 0 when step_bytes is used */
  size_t step_bytes;
  int iters, warmup;
  int check;
  int dtypes[BENCH_MAX_DTYPES]; /* hv_dtype_t values to run, in order */
  int num_dtypes;
  int ops[BENCH_MAX_OPS]; /* hv_op_t values to run, in order */
  int num_ops;
  int root;
  int algo_all;                   /* --algo all */
  bench_algo_t algo;              /* when !algo_all */
  hv_compression_t compression;   /* HV_COMPRESSION_NONE/FP16/BF16 */
  int tensors;                    /* tensors per iteration (--tensors K) */
  int engine;                     /* 1: through negotiation and fusion */
  int grouped;                    /* --grouped: the K tensors as one grouped allreduce */
  int peer;                       /* 1: also run the peer (default): MPI, or NCCL on cuda */
  bench_device_t device;          /* where the buffers live (--device) */
  const char *json_path, *csv_path, *plot_path;
  double min_busbw; /* GB/s; 0 = no gate */
  int help;
} bench_options_t;

/* One measured configuration of one backend: size, dtype, op, root. */
typedef struct bench_case {
  bench_coll_t coll;
  hv_dtype_t dtype;
  hv_op_t op; /* meaningful for reducing collectives only */
  int root;   /* broadcast, reduce, gather, scatter; -1 otherwise */
  size_t bytes;       /* the size column: whole buffer as nccl-tests counts it */
  size_t count;       /* the count column: bytes / dtype size */
  size_t param_count; /* the count given to the collective call */
  size_t send_elems, recv_elems; /* per tensor, per rank */
  int tensors;
  int grouped; /* the K tensors as one hv_grouped_allreduce (one name, one handle) */
  hv_compression_t compression;
  int rank, nranks;
} bench_case_t;

/* Send/receive buffers of K tensors, each followed by a guard zone. With --device cuda
 * the collectives run on device copies (dev_send, dev_recv, same layout); the host
 * buffers then hold the inputs before an upload and the results after a download, so
 * filling and checking are the same code for both devices. */
typedef struct bench_buffers {
  int tensors;
  void **send; /* [tensors] */
  void **recv; /* [tensors] */
  size_t send_bytes, recv_bytes;
  size_t alloc_send_bytes, alloc_recv_bytes; /* as allocated (the largest size) */
  int shared; /* simulated timing run: SMPI shared buffers, values meaningless (bench_data.c) */
  void **dev_send, **dev_recv; /* [tensors], NULL on the CPU */
} bench_buffers_t;

/* Statistics of one placement (out-of-place or in-place), combined across ranks. */
typedef struct bench_stats {
  int valid;                  /* 0: this placement is n/a for the backend */
  double avg_us, min_us, max_us, p50_us, p99_us;
  double algbw, busbw;        /* GB/s, from avg_us */
  /* Process CPU time per iteration (every thread of the rank: the engine's too), mean
   * over ranks: the cost of the algorithm when ranks outnumber cores and wall time
   * measures the scheduler. */
  double cpu_us;
  long long wrong;            /* -1 when not checked */
  long long oob;              /* guard bytes overwritten, summed over ranks */
} bench_stats_t;

typedef struct bench_row {
  int backend;
  hv_dtype_t dtype;
  hv_op_t op;
  int root;
  size_t bytes, count;
  bench_stats_t place[2]; /* [0] out-of-place, [1] in-place */
} bench_row_t;

/* A way of running the collective: the peer (MPI) or hv with some algorithm. */
typedef struct bench_backend bench_backend_t;
struct bench_backend {
  char name[32];   /* "hv:ring", "mpi" ... */
  char detail[96]; /* one line for the header */
  int is_peer;
  bench_algo_t algo;
  void *state;
  /* Runs one iteration (all tensors); in_place selects the placement. Returns 0, or
   * non-zero with err filled. */
  int (*run)(bench_backend_t *self, const bench_case_t *c, bench_buffers_t *b, int in_place,
             char *err, size_t err_len);
  /* Whether the placement is meaningful for this backend and collective. */
  int (*supports)(const bench_backend_t *self, const bench_case_t *c, int in_place);
  void (*destroy)(bench_backend_t *self);
  /* GPU backends: waits until the work run() enqueued has finished; returns 0, or
   * non-zero with err filled. NULL on the CPU, where run() returns when done. */
  int (*sync)(bench_backend_t *self, char *err, size_t err_len);
};

/* ---- bench_options.c ---- */
/* Parses argv; on error prints one line on rank 0 and returns BENCH_EXIT_USAGE. */
int options_parse(int argc, char **argv, int rank, int nranks, bench_options_t *opts);
void options_print_help(void);
const char *coll_name(bench_coll_t coll);
const char *algo_name(bench_algo_t algo);

/* ---- bench_dtype.c ---- */
int dtype_parse(const char *text, hv_dtype_t *dtype);
int op_parse(const char *text, hv_op_t *op);
const char *dtype_short_name(hv_dtype_t dtype);
const char *op_short_name(hv_op_t op);
size_t dtype_size(hv_dtype_t dtype);
int dtype_is_float(hv_dtype_t dtype);
double dtype_epsilon(hv_dtype_t dtype);
double dtype_load(const void *buf, hv_dtype_t dtype, size_t i);
void dtype_store(void *buf, hv_dtype_t dtype, size_t i, double value);
MPI_Datatype dtype_mpi(hv_dtype_t dtype);
/* MPI op for (dtype, op); AVERAGE maps to SUM (the caller divides). */
MPI_Op dtype_mpi_op(hv_dtype_t dtype, hv_op_t op);
void dtype_mpi_ops_create(void);
void dtype_mpi_ops_free(void);

/* ---- bench_coll.c ---- */
int coll_is_reducing(bench_coll_t coll);
/* broadcast, reduce, gather, scatter: --root applies. */
int coll_has_root(bench_coll_t coll);
/* Fills the layout fields of c for a size in bytes; returns 0 or non-zero with err
 * filled when the size does not fit the collective and rank count. */
int coll_layout(bench_case_t *c, size_t bytes, char *err, size_t err_len);
void coll_bandwidth(const bench_case_t *c, double seconds, double *algbw, double *busbw);
double coll_busbw_factor(bench_coll_t coll, int nranks);
/* "none", "fp16", "bf16"; "cpu", "cuda" (the header, --json and --csv). */
const char *compression_name(hv_compression_t c);
const char *device_name(bench_device_t d);
/* err = "what: hv's error string: the communicator's detail"; returns -1. comm may be
 * NULL (before hv_init). */
int bench_hv_error(hv_comm_t *comm, hv_result_t rc, const char *what, char *err, size_t err_len);
/* hv over world for a backend: 0, or -1 with err set. */
int bench_hv_open(MPI_Comm world, hv_comm_t **comm, char *err, size_t err_len);
/* err = "out of memory"; returns -1. */
int bench_out_of_memory(char *err, size_t err_len);

/* ---- bench_data.c ---- */
int buffers_alloc(bench_buffers_t *b, const bench_case_t *c, char *err, size_t err_len);
/* Sets the used sizes for a case that fits in what buffers_alloc() was given. */
void buffers_use(bench_buffers_t *b, const bench_case_t *c);
void buffers_free(bench_buffers_t *b);
/* Writes the exactly-known inputs (and a sentinel in outputs and guards). */
void data_fill(const bench_case_t *c, bench_buffers_t *b, int in_place);
/* Counts wrong elements and overwritten guard bytes on this rank. */
void data_check(const bench_case_t *c, const bench_buffers_t *b, int in_place,
                long long *wrong, long long *oob);
/* Test-only: damages one result element when HVBENCH_INJECT_FAULT=1. */
int data_fault_enabled(void);
void data_inject_fault(const bench_case_t *c, bench_buffers_t *b, int in_place);
void *data_input_ptr(const bench_case_t *c, bench_buffers_t *b, int t, int in_place);

/* ---- bench_mpi.c ---- */
int mpi_backend_create(bench_backend_t *be, MPI_Comm world);

/* ---- bench_engine.c ---- */
/* Creates an hv communicator for the algorithm; returns 0, or non-zero with err. */
int engine_backend_create(bench_backend_t *be, bench_coll_t coll, bench_algo_t algo,
                          MPI_Comm world, char *err, size_t err_len);

/* ---- bench_direct.c ---- */
/* --no-engine: one allreduce algorithm called directly, on an hv communicator. */
int direct_backend_create(bench_backend_t *be, bench_algo_t algo, MPI_Comm world, char *err,
                          size_t err_len);

/* ---- bench_cuda.c (bench_cuda_stub.c without NCCL) ---- */
/* 1 when this build can run --device cuda. */
int cuda_built(void);
/* Collective over world: picks device (local rank) mod (device count) and makes the
 * stream. Returns 0, or an exit status after every rank printed why (no CUDA device
 * visible: 1, or 77 under HVBENCH_SKIP_NO_GPU=1 so a test can be skipped). */
int cuda_setup(MPI_Comm world, int rank);
void cuda_teardown(void);
/* "device 0 [0000:1b:00] NVIDIA H100 80GB HBM3" for this rank's GPU. */
void cuda_describe(char *out, size_t len);
/* Device copies of b's buffers, for the largest case, as buffers_alloc() made them. */
int cuda_buffers_alloc(bench_buffers_t *b, char *err, size_t err_len);
void cuda_buffers_free(bench_buffers_t *b);
/* Host -> device (inputs, sentinels, guards) and device -> host (everything back),
 * both finished on return. */
int cuda_upload(bench_buffers_t *b, char *err, size_t err_len);
int cuda_download(bench_buffers_t *b, char *err, size_t err_len);
/* hv through hv_cuda.h, and the peer: raw NCCL calls on a communicator of all ranks. */
int cuda_hv_backend_create(bench_backend_t *be, MPI_Comm world, char *err, size_t err_len);
int cuda_nccl_backend_create(bench_backend_t *be, MPI_Comm world, char *err, size_t err_len);
/* The timed loop on the GPU (after the caller's barrier): iterations enqueued back to
 * back, one sync at the end; *total is the wall time of it all, times[] per-iteration
 * GPU times from events between iterations. Returns 0 or non-zero with err. */
int cuda_timed_loop(bench_backend_t *be, const bench_case_t *c, bench_buffers_t *b, int in_place,
                    int iters, double *times, double *total, char *err, size_t err_len);

/* ---- bench_run.c ---- */
/* Measures one placement of one case: warm-up, timed iterations, one checked run.
 * Collective over world. Returns 0 or an exit status after printing the error. */
int run_measure(bench_backend_t *be, const bench_case_t *c, bench_buffers_t *b,
                const bench_options_t *opts, int in_place, MPI_Comm world,
                bench_stats_t *stats);
/* Prints "hvbench: rank R: <msg>" on stderr and aborts the job. */
void bench_die(int rank, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- bench_report.c ---- */
void report_header(const bench_options_t *opts, int argc, char **argv, MPI_Comm world);
void report_table_start(const bench_backend_t *be, const bench_options_t *opts);
void report_row(const bench_row_t *row, const bench_options_t *opts);
/* Prints the footer; returns the average bus bandwidth of the table. */
double report_table_end(const bench_row_t *rows, size_t nrows, int backend);
void report_summary(const bench_row_t *rows, size_t nrows, bench_backend_t *backends,
                    int nbackends, const bench_options_t *opts);

/* ---- bench_output.c ---- */
int output_json(const char *path, const bench_options_t *opts, const bench_row_t *rows,
                size_t nrows, bench_backend_t *backends, int nbackends, int nranks);
int output_csv(const char *path, const bench_options_t *opts, const bench_row_t *rows,
               size_t nrows, bench_backend_t *backends, int nbackends, int nranks);
int output_plot(const char *path, const bench_options_t *opts, const bench_row_t *rows,
                size_t nrows, bench_backend_t *backends, int nbackends, int nranks);

/* 16-bit floats: hv's own conversions (round to nearest even), see hv.h. */
#define half_from_float hv_float_to_half
#define half_to_float hv_half_to_float
#define bf16_from_float hv_float_to_bfloat16
#define bf16_to_float hv_bfloat16_to_float

#endif /* HVBENCH_H */
