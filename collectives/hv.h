/* hv.h: the public C API of hv (libhvcoll), a Horovod-style collective layer.
 *
 * Every collective is asynchronous and *named*: the call puts a request in the
 * communicator's queue and returns a handle at once; a background thread per
 * communicator negotiates with the other ranks which names are ready everywhere,
 * fuses small tensors into one buffer, and runs the collective. hv_wait() returns
 * once the result is in the receive buffer.
 *
 * Contract for all calls:
 *  - Every call returns hv_result_t. hv_strerror() says what went wrong and what to
 *    do; hv_comm_last_error() gives the detail (rank, tensor name, mismatching
 *    values...). The library never exits or aborts the process.
 *  - Counts are elements of the dtype, never bytes.
 *  - In-place means sendbuf == recvbuf (or sendbuf == NULL).
 *  - Buffers must stay valid and untouched until the handle completes (hv_wait, or
 *    hv_test reporting done); then they may be reused at once.
 *  - Any user thread may submit and wait, concurrently. A handle is waited on by one
 *    thread, once: hv_wait / hv_test(done) releases it.
 *  - Names identify a collective across ranks: every rank must submit the same name
 *    with the same type, dtype, count, op and root, in any order. A name may not be
 *    pending twice on one rank. A mismatch fails that handle on every rank with
 *    HV_ERR_MISMATCH naming the tensor, the ranks and both values. Exception: a
 *    hv_send/hv_recv name is submitted by its two ranks only (see there).
 *
 * This header includes no MPI, CUDA, NCCL or hwloc header: a CPU-only trainer builds
 * against it alone. hv_mpi.h adds initialisation from an MPI_Comm.
 */
#ifndef HV_H
#define HV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What libhvcoll exports: these declarations and nothing else (it is built with
 * hidden visibility; its internal hv__ functions stay inside). */
#if defined(__GNUC__) || defined(__clang__)
#define HV_API __attribute__((visibility("default")))
#else
#define HV_API
#endif

#define HV_VERSION_MAJOR 0
#define HV_VERSION_MINOR 1
#define HV_VERSION_PATCH 0

/* One list of result codes: the enum and hv_strerror() are both generated from it. */
#define HV_RESULT_LIST(X)                                                                  \
  X(HV_SUCCESS, 0, "success")                                                             \
  X(HV_ERR_INVALID_ARGUMENT, 1,                                                           \
    "invalid argument: a parameter of the call is wrong; hv_comm_last_error() names it")  \
  X(HV_ERR_NO_MEMORY, 2, "out of memory: lower HV_FUSION_THRESHOLD or the tensor sizes")   \
  X(HV_ERR_MPI, 3,                                                                        \
    "MPI error: the MPI library failed; hv_comm_last_error() has MPI's message")          \
  X(HV_ERR_MISMATCH, 4,                                                                   \
    "mismatch: the same tensor name was submitted with different type, dtype, count, "    \
    "op or root on different ranks; hv_comm_last_error() names the ranks and values")     \
  X(HV_ERR_STALLED, 5,                                                                    \
    "stalled: some ranks never submitted this tensor within HV_STALL_SHUTDOWN_TIME; "     \
    "check that every rank submits the same names")                                       \
  X(HV_ERR_SHUT_DOWN, 6,                                                                  \
    "shut down: the communicator was shut down (on this or another rank) while the "      \
    "request was pending")                                                                \
  X(HV_ERR_ABORTED, 7,                                                                    \
    "aborted: a rank failed (its process ended, or it stopped on an error); the communicator is unusable")     \
  X(HV_ERR_TIMEOUT, 8, "timeout: a peer did not answer within HV_TIMEOUT")                \
  X(HV_ERR_UNSUPPORTED, 9,                                                                \
    "unsupported: this build or this dtype/op combination does not support the request")  \
  X(HV_ERR_IN_PROGRESS, 10, "in progress: the request has not completed yet")              \
  X(HV_ERR_CUDA, 11, "CUDA error: a CUDA call failed; hv_comm_last_error() has details")   \
  X(HV_ERR_NCCL, 12, "NCCL error: an NCCL call failed; hv_comm_last_error() has details")  \
  X(HV_ERR_SYSTEM, 13, "system error: an operating-system call failed (see errno text)")   \
  X(HV_ERR_INTERNAL, 14, "internal error: a bug in hv; please report it with the log")

typedef enum {
#define HV_RESULT_ENUM_(name, value, text) name = value,
  HV_RESULT_LIST(HV_RESULT_ENUM_)
#undef HV_RESULT_ENUM_
} hv_result_t;

/* Static text for a result code: what went wrong and what to do next. */
HV_API const char *hv_strerror(hv_result_t result);

typedef enum {
  HV_UINT8 = 0,
  HV_INT8 = 1,
  HV_INT32 = 2,
  HV_INT64 = 3,
  HV_FLOAT16 = 4,  /* IEEE 754 binary16 */
  HV_BFLOAT16 = 5, /* bfloat16: the top 16 bits of a float32 */
  HV_FLOAT32 = 6,
  HV_FLOAT64 = 7,
  HV_NUM_DTYPES = 8
} hv_dtype_t;

typedef enum {
  HV_SUM = 0,
  HV_AVERAGE = 1, /* sum, then divided by the number of ranks (float dtypes only) */
  HV_MIN = 2,
  HV_MAX = 3,
  HV_PRODUCT = 4,
  HV_NUM_OPS = 5
} hv_op_t;

/* Wire compression of float32 allreduce (HV_COMPRESSION sets the default). */
typedef enum {
  HV_COMPRESSION_DEFAULT = 0, /* whatever HV_COMPRESSION says (none when unset) */
  HV_COMPRESSION_NONE = 1,
  HV_COMPRESSION_FP16 = 2,
  HV_COMPRESSION_BF16 = 3,
  /* 16-bit on the wire with one rounding of each sum, whatever the number of ranks:
   * all-to-all reduce-scatter, float32 accumulation, allgather (README, "Compression").
   * Host buffers; hv_cuda.h sends these uncompressed. */
  HV_COMPRESSION_FP16_1R = 4,
  HV_COMPRESSION_BF16_1R = 5
} hv_compression_t;

/* Size in bytes of one element of dtype; 0 for an invalid dtype. */
HV_API size_t hv_dtype_size(hv_dtype_t dtype);
HV_API const char *hv_dtype_name(hv_dtype_t dtype);
HV_API const char *hv_op_name(hv_op_t op);

/* ---- communicator lifecycle --------------------------------------------- */

typedef struct hv_comm hv_comm_t;

/* Initialises hv on all processes of the job (MPI_COMM_WORLD). Initialises MPI with
 * MPI_THREAD_MULTIPLE if the program has not; hv_shutdown() then finalises it. argc
 * and argv may be NULL. Collective: every rank must call it. */
HV_API hv_result_t hv_init(int *argc, char ***argv, hv_comm_t **comm);

/* Finishes every request (pending ones fail with HV_ERR_SHUT_DOWN on all ranks),
 * stops the background thread, frees the communicator, and finalises MPI if
 * hv_init() initialised it. Collective. comm may be NULL (no-op). */
HV_API hv_result_t hv_shutdown(hv_comm_t *comm);

/* Rank and size in the whole communicator, on my node (local), and among the ranks
 * with my local rank on every node (cross). */
HV_API hv_result_t hv_comm_rank(const hv_comm_t *comm, int *rank);
HV_API hv_result_t hv_comm_size(const hv_comm_t *comm, int *size);
HV_API hv_result_t hv_comm_local_rank(const hv_comm_t *comm, int *local_rank);
HV_API hv_result_t hv_comm_local_size(const hv_comm_t *comm, int *local_size);
HV_API hv_result_t hv_comm_cross_rank(const hv_comm_t *comm, int *cross_rank);
HV_API hv_result_t hv_comm_cross_size(const hv_comm_t *comm, int *cross_size);
/* The wire compression that HV_COMPRESSION_DEFAULT stands for in this communicator
 * (HV_COMPRESSION at hv_init: NONE, FP16 or BF16). */
HV_API hv_result_t hv_comm_compression(const hv_comm_t *comm, hv_compression_t *compression);

/* Sub-communicators (Horovod's process sets, c10d's new_group, MPI_Comm_split).
 * Each is a communicator of its own: its own names, negotiation, response cache and
 * background thread, used like the parent (from any thread, concurrently with it)
 * and freed with hv_shutdown(sub), before or after the parent's. Collective over the
 * parent: every rank calls with its arguments; a colour out of range, or lists that
 * differ between ranks, fail on every rank with the same message.
 * hv_comm_split: the ranks with the same color >= 0 form one, ordered by key (then by
 * rank in the parent); HV_COLOR_NONE: this rank gets *sub = NULL.
 * hv_comm_create_group: the n parent ranks listed (the same list on every rank), in
 * list order; a rank not listed gets *sub = NULL. */
#define HV_COLOR_NONE (-1)
HV_API hv_result_t hv_comm_split(hv_comm_t *comm, int color, int key, hv_comm_t **sub);
HV_API hv_result_t hv_comm_create_group(hv_comm_t *comm, const int *ranks, int n, hv_comm_t **sub);

/* The detail of the last error seen by this communicator (any thread), or "" when
 * there was none. The returned text stays valid until this thread's next call of
 * hv_comm_last_error(). comm may be NULL for errors of hv_init(). */
HV_API const char *hv_comm_last_error(const hv_comm_t *comm);

/* The first asynchronous error of the communicator (a peer died, a stall shut it
 * down, an abort): HV_SUCCESS while healthy. Lets a training loop stop cleanly. */
HV_API hv_result_t hv_comm_get_async_error(const hv_comm_t *comm, hv_result_t *async_error);

/* What ran. hv picks an algorithm per fused batch (HV_ALLREDUCE_ALGO, else its
 * decision table) and falls back when what it wanted is not there (no shared memory:
 * MPI carries the node's traffic). These say what actually happened, as NCCL_DEBUG's
 * lines and Horovod's timeline do; the timeline (HV_TIMELINE) shows the same names.
 *
 * hv_comm_allreduce_count: allreduce batches this rank has reduced since hv_init
 * with the algorithm named algo, after every fall-back: "shm" (the node's shared
 * memory, one node), "hier_shm" (hierarchical, node phases in shared memory),
 * "hier" (hierarchical over MPI), "ring", "rd", "rab", "2d", "mpi", "1r" (the
 * single-rounding 16-bit allreduce of HV_COMPRESSION=fp16-1r/bf16-1r). A fused batch or
 * a lone tensor counts once. With one rank nothing runs and every count stays 0. An
 * unknown name fails with HV_ERR_INVALID_ARGUMENT. Any thread.
 *
 * hv_comm_shm_status: *on = 1 when this node's ranks share memory, else 0; why (len
 * bytes, may be NULL) gets the reason it is off, "" when on: "HV_SHM_SLOT_BYTES=0",
 * "one rank on this node", or the failure with its sizes ("/dev/shm is too small:
 * the node's region needs 16.0 MiB ..."), also warned once per node at hv_init. */
HV_API hv_result_t hv_comm_allreduce_count(const hv_comm_t *comm, const char *algo, uint64_t *count);
HV_API hv_result_t hv_comm_shm_status(const hv_comm_t *comm, int *on, char *why, size_t len);

/* Who holds the job up: the straggler report (the workloads print it on each epoch
 * line with HV_STRAGGLER_REPORT=1).
 *
 * hv_straggler_step marks the start of a step: the next request submitted on this
 * communicator (from any thread) is the step's first. For that request the engine
 * measures how long it waited between its submission on this rank and the round that
 * found it ready on every rank. The rank that submits last waits least, so the ranks'
 * waits compare without any clock shared between hosts. The DDP layer
 * (trainer/ddp.c) marks every step that reduces gradients. Any thread; an atomic store.
 *
 * hv_straggler_report is collective, like a blocking collective (every rank calls it
 * at the same point; it runs one allgather named "hv.straggler"): the ranks' median
 * waits over the steps since their last report (at most 1024) are gathered, and *out,
 * the same on every rank, names the rank with the smallest (the lowest on a tie), its
 * lag (the median of the other ranks' median waits minus its own, ms: how much later
 * than the typical rank it submits each step's first request), its own median wait and
 * the steps it measured. Every rank then starts over. out->rank is -1 when fewer than
 * two ranks measured a step. */
typedef struct hv_straggler {
  int rank;         /* the slowest rank, or -1 */
  double lag_ms;    /* median of the others' median waits minus its median wait */
  double wait_ms;   /* its median wait */
  uint64_t steps;   /* steps it measured since its last report */
} hv_straggler_t;
HV_API hv_result_t hv_straggler_step(hv_comm_t *comm);
HV_API hv_result_t hv_straggler_report(hv_comm_t *comm, hv_straggler_t *out);

/* ---- handles ------------------------------------------------------------ */

typedef struct hv_handle *hv_handle_t;

/* Blocks until the request completes, returns its result and releases the handle. */
HV_API hv_result_t hv_wait(hv_handle_t handle);
/* Sets *done to 1 and releases the handle if the request completed (the return value
 * is then its result); else sets *done to 0 and returns HV_SUCCESS. */
HV_API hv_result_t hv_test(hv_handle_t handle, int *done);
/* Waits for n handles; returns the first error among them (all are released). */
HV_API hv_result_t hv_wait_all(hv_handle_t *handles, size_t n);

/* ---- collectives (asynchronous) ---------------------------------------- */

typedef struct hv_allreduce_opts {
  double prescale;              /* inputs are multiplied by this before the reduction */
  double postscale;             /* the result is multiplied by this afterwards */
  hv_compression_t compression; /* float32 only; others are sent as they are */
} hv_allreduce_opts_t;
#define HV_ALLREDUCE_OPTS_INIT {1.0, 1.0, HV_COMPRESSION_DEFAULT}

/* recvbuf[i] = op over ranks of (prescale * sendbuf[i]), times postscale. opts may be
 * NULL (no scaling, default compression). Scaling applies to float dtypes only. */
HV_API hv_result_t hv_allreduce_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                               void *recvbuf, size_t count, hv_dtype_t dtype, hv_op_t op,
                               const hv_allreduce_opts_t *opts, hv_handle_t *handle);

/* One tensor of a grouped allreduce: count elements read from sendbuf (NULL or equal
 * to recvbuf: in place) and reduced into recvbuf. */
typedef struct hv_tensor {
  const void *sendbuf;
  void *recvbuf;
  size_t count;
} hv_tensor_t;

/* Grouped allreduce (Horovod's grouped_allreduce): the n tensors, of one dtype, op and
 * set of options, are one request under one name: one negotiation, one handle, and
 * their data fused as they lie (shared memory on one node reads and writes the
 * tensors themselves; otherwise through the fusion buffer, HV_FUSION_THRESHOLD bytes
 * of whole tensors per algorithm call). A DDP bucket of many small gradients costs
 * then about what one tensor of their total size costs. The list is copied: it need
 * not outlive the call, the buffers must (as for hv_allreduce_async). The tensors'
 * receive buffers must not overlap one another: that is not checked. Every rank must
 * give the name the same n and the same count for each tensor, in the same order;
 * another list (even with the same total) fails on every rank with HV_ERR_MISMATCH.
 * n may be 0 (a handle that completes with nothing to do, still matched by name). */
HV_API hv_result_t hv_grouped_allreduce_async(hv_comm_t *comm, const char *name, const hv_tensor_t *tensors,
                                       size_t n, hv_dtype_t dtype, hv_op_t op,
                                       const hv_allreduce_opts_t *opts, hv_handle_t *handle);

/* recvbuf (size * count elements) = every rank's sendbuf (count elements), in rank
 * order. In-place when sendbuf == recvbuf + rank * count. */
HV_API hv_result_t hv_allgather_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                               void *recvbuf, size_t count, hv_dtype_t dtype,
                               hv_handle_t *handle);

/* Like allgather, but each rank contributes sendcount elements, which may differ per
 * rank (a first dimension that differs, times a row that must not). recvbuf holds
 * recv_capacity elements; when the handle completes, recvcounts[r] (size entries)
 * holds rank r's count and recvbuf the concatenation. A too-small capacity fails the
 * handle with HV_ERR_INVALID_ARGUMENT naming the needed count. */
HV_API hv_result_t hv_allgatherv_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                                size_t sendcount, hv_dtype_t dtype, void *recvbuf,
                                size_t recv_capacity, size_t *recvcounts,
                                hv_handle_t *handle);

/* buf (count elements) on every rank = buf on root. */
HV_API hv_result_t hv_broadcast_async(hv_comm_t *comm, const char *name, void *buf, size_t count,
                               hv_dtype_t dtype, int root, hv_handle_t *handle);

/* sendbuf holds size * recvcount elements; rank r receives block r of the
 * element-wise reduction in recvbuf (recvcount elements). Out-of-place only:
 * sendbuf and recvbuf must not overlap. */
HV_API hv_result_t hv_reducescatter_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                                   void *recvbuf, size_t recvcount, hv_dtype_t dtype,
                                   hv_op_t op, hv_handle_t *handle);

/* Block j (count elements) of my sendbuf goes to rank j, arriving as block (my rank)
 * of its recvbuf. sendbuf and recvbuf hold size * count elements and must not overlap. */
HV_API hv_result_t hv_alltoall_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                              void *recvbuf, size_t count, hv_dtype_t dtype,
                              hv_handle_t *handle);

/* All-to-all with per-rank counts (Horovod's alltoall(splits=), c10d's
 * all_to_all_single, MPI_Alltoallv): the first sendsplits[0] elements of sendbuf go to
 * rank 0, the next sendsplits[1] to rank 1, and so on; recvbuf receives recvsplits[j]
 * elements from each rank j, concatenated in rank order. sendsplits and recvsplits
 * have size entries (int64_t, as c10d's split sizes) and are copied at the call. The
 * splits are checked on every rank as the collective starts, and any fault fails the
 * handle on every rank, naming the rank and the values: a negative split, sendsplits
 * that do not sum to sendcount or recvsplits to recvcount (HV_ERR_INVALID_ARGUMENT),
 * rank j's sendsplits[i] unequal to rank i's recvsplits[j] (HV_ERR_MISMATCH, both
 * ranks and both values). Zero splits are fine. Out-of-place only. */
HV_API hv_result_t hv_alltoallv_async(hv_comm_t *comm, const char *name, const void *sendbuf, size_t sendcount,
                                      const int64_t *sendsplits, hv_dtype_t dtype, void *recvbuf,
                                      size_t recvcount, const int64_t *recvsplits, hv_handle_t *handle);

/* recvbuf on root (count elements) = op over ranks of sendbuf; recvbuf is not used on
 * the other ranks (may be NULL). In place on root when sendbuf is NULL or recvbuf.
 * The same count, dtype, op and root on every rank; a root out of range on any rank
 * fails the handle on every rank (HV_ERR_INVALID_ARGUMENT, naming the rank). */
HV_API hv_result_t hv_reduce_async(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf,
                                   size_t count, hv_dtype_t dtype, hv_op_t op, int root, hv_handle_t *handle);

/* Gather: recvbuf on root (size * count elements) = every rank's sendbuf (count
 * elements), in rank order; recvbuf is not used elsewhere (may be NULL). */
HV_API hv_result_t hv_gather_async(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf,
                                   size_t count, hv_dtype_t dtype, int root, hv_handle_t *handle);
/* Gather with per-rank counts: rank j sends sendcount elements; root's recvcounts[j]
 * (size entries, copied at the call; not used elsewhere, may be NULL) must equal rank
 * j's sendcount, and recvbuf on root receives them concatenated in rank order. A
 * negative count or a count that disagrees fails on every rank, naming both ranks
 * and values (HV_ERR_INVALID_ARGUMENT / HV_ERR_MISMATCH). */
HV_API hv_result_t hv_gatherv_async(hv_comm_t *comm, const char *name, const void *sendbuf, size_t sendcount,
                                    hv_dtype_t dtype, void *recvbuf, const int64_t *recvcounts, int root,
                                    hv_handle_t *handle);

/* Scatter: block j (count elements) of root's sendbuf (size * count elements; not used
 * elsewhere, may be NULL) lands in rank j's recvbuf. */
HV_API hv_result_t hv_scatter_async(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf,
                                    size_t count, hv_dtype_t dtype, int root, hv_handle_t *handle);
/* Scatter with per-rank counts: root's sendcounts[j] elements (size entries, copied;
 * not used elsewhere, may be NULL), taken from root's sendbuf in rank order, land in
 * rank j's recvbuf, whose recvcount must equal them (checked as for hv_gatherv). */
HV_API hv_result_t hv_scatterv_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                                     const int64_t *sendcounts, hv_dtype_t dtype, void *recvbuf, size_t recvcount,
                                     int root, hv_handle_t *handle);

/* Point-to-point: a named pair. hv_send on rank src (to dest) and hv_recv on rank dest
 * (from src) with the same name make one transfer of count elements; the other ranks
 * take no part. The pair is negotiated like a collective, by the two ranks only: a
 * different count, dtype or peer on the two ends fails both with HV_ERR_MISMATCH
 * naming both; a send whose receive never comes (or the reverse) is named by the
 * stall report (HV_STALL_CHECK_TIME) with the missing rank, and fails with
 * HV_ERR_STALLED after HV_STALL_SHUTDOWN_TIME. dest/src must be another rank. */
HV_API hv_result_t hv_send_async(hv_comm_t *comm, const char *name, const void *buf, size_t count,
                                 hv_dtype_t dtype, int dest, hv_handle_t *handle);
HV_API hv_result_t hv_recv_async(hv_comm_t *comm, const char *name, void *buf, size_t count, hv_dtype_t dtype,
                                 int src, hv_handle_t *handle);

/* Completes once every rank has called it (barriers are matched in call order). */
HV_API hv_result_t hv_barrier_async(hv_comm_t *comm, hv_handle_t *handle);

/* Grouped submit: requests made by this thread between hv_group_start() and
 * hv_group_end() are queued together at hv_group_end(), so they are negotiated in
 * the same cycle and fused together (up to HV_FUSION_THRESHOLD). Handles are
 * returned by each call as usual, and usable only after hv_group_end(). */
HV_API hv_result_t hv_group_start(hv_comm_t *comm);
HV_API hv_result_t hv_group_end(hv_comm_t *comm);

/* ---- blocking forms: submit then hv_wait ------------------------------- */

HV_API hv_result_t hv_allreduce(hv_comm_t *comm, const char *name, const void *sendbuf,
                         void *recvbuf, size_t count, hv_dtype_t dtype, hv_op_t op,
                         const hv_allreduce_opts_t *opts);
HV_API hv_result_t hv_grouped_allreduce(hv_comm_t *comm, const char *name, const hv_tensor_t *tensors,
                                 size_t n, hv_dtype_t dtype, hv_op_t op,
                                 const hv_allreduce_opts_t *opts);
HV_API hv_result_t hv_allgather(hv_comm_t *comm, const char *name, const void *sendbuf,
                         void *recvbuf, size_t count, hv_dtype_t dtype);
HV_API hv_result_t hv_allgatherv(hv_comm_t *comm, const char *name, const void *sendbuf,
                          size_t sendcount, hv_dtype_t dtype, void *recvbuf,
                          size_t recv_capacity, size_t *recvcounts);
HV_API hv_result_t hv_broadcast(hv_comm_t *comm, const char *name, void *buf, size_t count,
                         hv_dtype_t dtype, int root);
HV_API hv_result_t hv_reducescatter(hv_comm_t *comm, const char *name, const void *sendbuf,
                             void *recvbuf, size_t recvcount, hv_dtype_t dtype, hv_op_t op);
HV_API hv_result_t hv_alltoall(hv_comm_t *comm, const char *name, const void *sendbuf,
                        void *recvbuf, size_t count, hv_dtype_t dtype);
HV_API hv_result_t hv_alltoallv(hv_comm_t *comm, const char *name, const void *sendbuf, size_t sendcount,
                                const int64_t *sendsplits, hv_dtype_t dtype, void *recvbuf, size_t recvcount,
                                const int64_t *recvsplits);
HV_API hv_result_t hv_reduce(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf, size_t count,
                             hv_dtype_t dtype, hv_op_t op, int root);
HV_API hv_result_t hv_gather(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf, size_t count,
                             hv_dtype_t dtype, int root);
HV_API hv_result_t hv_gatherv(hv_comm_t *comm, const char *name, const void *sendbuf, size_t sendcount,
                              hv_dtype_t dtype, void *recvbuf, const int64_t *recvcounts, int root);
HV_API hv_result_t hv_scatter(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf, size_t count,
                              hv_dtype_t dtype, int root);
HV_API hv_result_t hv_scatterv(hv_comm_t *comm, const char *name, const void *sendbuf, const int64_t *sendcounts,
                               hv_dtype_t dtype, void *recvbuf, size_t recvcount, int root);
HV_API hv_result_t hv_send(hv_comm_t *comm, const char *name, const void *buf, size_t count, hv_dtype_t dtype,
                           int dest);
HV_API hv_result_t hv_recv(hv_comm_t *comm, const char *name, void *buf, size_t count, hv_dtype_t dtype, int src);
HV_API hv_result_t hv_barrier(hv_comm_t *comm);

/* Join for uneven inputs (Horovod's join, DDP's Join): a rank that has run out of
 * data calls hv_join, which returns once every rank of the communicator has called
 * it. Meanwhile the others' collectives complete without it: it contributes zeros to
 * sum and average allreduces (an average divides by the ranks that contributed),
 * receives broadcasts from ranks that have not joined, and passes barriers; any
 * other collective (or a broadcast from a joined root, a grouped allreduce, min, max
 * or product) fails on every rank naming the joined ranks. Call it with none of the
 * rank's own requests pending, from one thread at a time (a second concurrent call
 * fails); it may be called again for the next round of joins (next epoch). */
HV_API hv_result_t hv_join(hv_comm_t *comm);

/* ---- float16 / bfloat16 conversion (round to nearest even) ---------------- */

HV_API uint16_t hv_float_to_half(float value);
HV_API float hv_half_to_float(uint16_t value);
HV_API uint16_t hv_float_to_bfloat16(float value);
HV_API float hv_bfloat16_to_float(uint16_t value);

#ifdef __cplusplus
}
#endif
#endif /* HV_H */
