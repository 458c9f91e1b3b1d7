/* cuda_comm.c: the collectives of hv_cuda.h on device buffers: NCCL within the node,
 * MPI across nodes (directly when the MPI library is CUDA-aware, else through the
 * pipelined host staging of staged_allreduce.c), hierarchical allreduce on several
 * nodes; reduce-scatter and all-to-all through NCCL on one node, and on several
 * through the allreduce and a host-staged MPI_Alltoall. Built when the CUDA toolkit
 * has NCCL (HV_ENABLE_NCCL).
 *
 * State per communicator (struct hv__cuda): duplicates of the node and cross-node MPI
 * communicators, made at hv_init so that these calls (on the caller's thread) never
 * share a communicator with the background engine; the node's NCCL communicator, a
 * copy stream, events and the pinned staging slots, made at the first call (every
 * rank makes its first call together: NCCL's ordering rule). */
#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include "cuda_internal.h"
#include "fusion_kernels.h"
#include "hv_cuda.h"
#include "flight_recorder.h"
#include "hv_internal.h"
#include "reduce.h"
#include "staged_allreduce.h"

struct hv__cuda {
  MPI_Comm all, local, cross; /* duplicates of the communicator's: this thread's own */
  int ready;      /* NCCL and the staging are set up */
  hv_result_t broken; /* an earlier failure (aborted communicator): every call fails with it */
  int device;
  ncclComm_t nccl;
  cudaStream_t copy_stream;
  cudaStream_t comm_stream; /* grouped allreduce: pack, reduce, unpack, ordered by events */
  cudaEvent_t phase, to_host[HV__STAGE_SLOTS], to_buffer[HV__STAGE_SLOTS];
  cudaEvent_t group_in, group_out, entries_copied;
  void *fused, *entries_dev, *entries_host; /* grouped allreduce: grow-only */
  size_t fused_bytes, entries_dev_bytes, entries_host_bytes;
  char *staging; /* HV__STAGE_SLOTS pinned slots of slot_bytes */
  size_t slot_bytes;
  void *scratch; /* device scratch (padding for the reduce-scatter), grow-only */
  size_t scratch_bytes;
  void *gather_host; /* pinned, grow-only: the staged allgather and all-to-all */
  size_t gather_bytes;
  void *reduced; /* device, grow-only: the whole reduction of a reduce-scatter across nodes */
  size_t reduced_bytes;
  int cuda_aware_mpi;
};

int hv_cuda_available(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

hv_result_t hv__cuda_init(hv_comm_t *comm) {
  hv__cuda_t *c = calloc(1, sizeof *c);
  if (!c) return hv__set_error(comm, HV_ERR_NO_MEMORY, "out of memory creating the CUDA state");
  c->all = c->local = c->cross = MPI_COMM_NULL;
  comm->cuda = c;
  HV_MPI_CHECK(&comm->host.errors, MPI_Comm_dup(comm->mpi, &c->all));
  HV_MPI_CHECK(&comm->host.errors, MPI_Comm_dup(comm->local, &c->local));
  HV_MPI_CHECK(&comm->host.errors, MPI_Comm_dup(comm->cross, &c->cross));
  MPI_Comm_set_errhandler(c->all, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(c->local, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(c->cross, MPI_ERRORS_RETURN);
  return HV_SUCCESS;
}

void hv__cuda_free(hv_comm_t *comm) {
  hv__cuda_t *c = comm->cuda;
  if (!c) return;
  if (c->ready) {
    if (c->broken == HV_SUCCESS) ncclCommDestroy(c->nccl);
    cudaEventDestroy(c->phase);
    cudaEventDestroy(c->group_in);
    cudaEventDestroy(c->group_out);
    cudaEventDestroy(c->entries_copied);
    cudaStreamDestroy(c->comm_stream);
    cudaFree(c->fused);
    cudaFree(c->entries_dev);
    cudaFreeHost(c->entries_host);
    for (int i = 0; i < HV__STAGE_SLOTS; i++) cudaEventDestroy(c->to_host[i]), cudaEventDestroy(c->to_buffer[i]);
    cudaStreamDestroy(c->copy_stream);
    cudaFreeHost(c->staging);
    cudaFreeHost(c->gather_host);
    cudaFree(c->scratch);
    cudaFree(c->reduced);
  }
  if (comm->async_error == HV_SUCCESS && c->broken == HV_SUCCESS) {
    if (c->all != MPI_COMM_NULL) MPI_Comm_free(&c->all);
    if (c->local != MPI_COMM_NULL) MPI_Comm_free(&c->local);
    if (c->cross != MPI_COMM_NULL) MPI_Comm_free(&c->cross);
  }
  free(c);
  comm->cuda = NULL;
}

#define CUDA_CHECK(comm, call)                                                                          \
  do {                                                                                                  \
    cudaError_t cuda_rc_ = (call);                                                                      \
    if (cuda_rc_ != cudaSuccess)                                                                        \
      return hv__set_error((comm), HV_ERR_CUDA, "rank %d: %s failed: %s", (comm)->rank, #call,           \
                           cudaGetErrorString(cuda_rc_));                                               \
  } while (0)

/* An NCCL failure leaves the node's communicator unusable: abort it, remember why. */
static hv_result_t nccl_failed(hv_comm_t *comm, ncclResult_t rc, const char *what) {
  hv__cuda_t *c = comm->cuda;
  if (c->ready && c->broken == HV_SUCCESS) ncclCommAbort(c->nccl);
  c->broken = hv__set_error(comm, HV_ERR_NCCL, "rank %d: %s failed: %s (%s); the node's NCCL communicator is aborted",
                            comm->rank, what, ncclGetErrorString(rc), ncclGetLastError(NULL));
  return c->broken;
}

#define NCCL_CHECK(comm, call)                                  \
  do {                                                          \
    ncclResult_t nccl_rc_ = (call);                             \
    if (nccl_rc_ != ncclSuccess) return nccl_failed((comm), nccl_rc_, #call); \
  } while (0)

/* Waits until query() stops saying "not ready", bounded by HV_TIMEOUT, and fails when
 * NCCL reports an asynchronous error (a peer's failure) meanwhile: then the
 * communicator is aborted, which also ends its kernels that wait for the peer. */
static hv_result_t wait_gpu(hv_comm_t *comm, cudaError_t (*query)(void *), void *what_obj, const char *what) {
  hv__cuda_t *c = comm->cuda;
  const double start = hv__now_us(), timeout_us = comm->config.timeout_s * 1e6;
  for (unsigned iter = 0;; iter++) {
    cudaError_t rc = query(what_obj);
    if (rc == cudaSuccess) return HV_SUCCESS;
    if (rc != cudaErrorNotReady)
      return hv__set_error(comm, HV_ERR_CUDA, "rank %d: %s: %s", comm->rank, what, cudaGetErrorString(rc));
    if ((iter & 255) != 255) continue;
    if (c->ready) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(c->nccl, &async);
      if (async != ncclSuccess && async != ncclInProgress) return nccl_failed(comm, async, what);
    }
    const double waited = hv__now_us() - start;
    if (timeout_us > 0 && waited > timeout_us) {
      if (c->ready && c->broken == HV_SUCCESS) ncclCommAbort(c->nccl);
      c->broken = hv__set_error(comm, HV_ERR_TIMEOUT,
                                "rank %d: %s did not complete within HV_TIMEOUT=%g s: a peer stopped answering; the "
                                "node's NCCL communicator is aborted", comm->rank, what, comm->config.timeout_s);
      return c->broken;
    }
    if (waited > 50) sched_yield();
  }
}

static cudaError_t query_event(void *e) { return cudaEventQuery((cudaEvent_t)e); }
static cudaError_t query_stream(void *s) { return cudaStreamQuery((cudaStream_t)s); }

static hv_result_t set_up(hv_comm_t *comm) {
  hv__cuda_t *c = comm->cuda;
  if (c->ready) return HV_SUCCESS;
  CUDA_CHECK(comm, cudaGetDevice(&c->device));
  ncclUniqueId id;
  if (comm->local_rank == 0) NCCL_CHECK(comm, ncclGetUniqueId(&id));
  MPI_Request req;
  HV_MPI_CHECK(&comm->host.errors, MPI_Ibcast(&id, sizeof id, MPI_BYTE, 0, c->local, &req));
  HV_CHECK(hv__wait_mpi(&comm->host, 1, &req, "the broadcast of the node's NCCL id", 1));
  ncclResult_t rc = ncclCommInitRank(&c->nccl, comm->local_size, id, comm->local_rank);
  if (rc != ncclSuccess)
    return hv__set_error(comm, HV_ERR_NCCL,
                         "rank %d: ncclCommInitRank over the %d ranks of this node failed: %s (%s). NCCL needs one GPU "
                         "per rank within a node: give each rank its own device (hvrun sets CUDA_VISIBLE_DEVICES), "
                         "or emulate nodes with HV_RANKS_PER_NODE=1",
                         comm->rank, comm->local_size, ncclGetErrorString(rc), ncclGetLastError(NULL));
  c->ready = 1;
  CUDA_CHECK(comm, cudaStreamCreateWithFlags(&c->copy_stream, cudaStreamNonBlocking));
  CUDA_CHECK(comm, cudaStreamCreateWithFlags(&c->comm_stream, cudaStreamNonBlocking));
  CUDA_CHECK(comm, cudaEventCreateWithFlags(&c->phase, cudaEventDisableTiming));
  CUDA_CHECK(comm, cudaEventCreateWithFlags(&c->group_in, cudaEventDisableTiming));
  CUDA_CHECK(comm, cudaEventCreateWithFlags(&c->group_out, cudaEventDisableTiming));
  CUDA_CHECK(comm, cudaEventCreateWithFlags(&c->entries_copied, cudaEventDisableTiming));
  for (int i = 0; i < HV__STAGE_SLOTS; i++) {
    CUDA_CHECK(comm, cudaEventCreateWithFlags(&c->to_host[i], cudaEventDisableTiming));
    CUDA_CHECK(comm, cudaEventCreateWithFlags(&c->to_buffer[i], cudaEventDisableTiming));
  }
  c->slot_bytes = comm->config.cuda_staging_bytes;
  void *staging = NULL;
  CUDA_CHECK(comm, cudaMallocHost(&staging, HV__STAGE_SLOTS * c->slot_bytes));
  c->staging = staging;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  c->cuda_aware_mpi = MPIX_Query_cuda_support();
#endif
  return HV_SUCCESS;
}

static ncclDataType_t nccl_type(hv_dtype_t t) {
  static const ncclDataType_t map[HV_NUM_DTYPES] = {ncclUint8,    ncclInt8,    ncclInt32,   ncclInt64,
                                                    ncclFloat16,  ncclBfloat16, ncclFloat32, ncclFloat64};
  return map[t];
}

static ncclRedOp_t nccl_op(hv_op_t op) {
  static const ncclRedOp_t map[HV_NUM_OPS] = {ncclSum, ncclAvg, ncclMin, ncclMax, ncclProd};
  return map[op];
}

/* The staging copier over CUDA: copies to the host on the copy stream (which waits
 * for the phase before), copies back on the caller's stream (so what follows there is
 * ordered after them). */
typedef struct copier_ctx {
  hv_comm_t *comm;
  cudaStream_t stream;
} copier_ctx_t;

/* One staging copy: to the host on the copy stream, back on the caller's stream, each
 * followed by its slot's event. */
static hv_result_t cp_copy(copier_ctx_t *x, int slot, void *dst, const void *src, size_t bytes, int to_host) {
  hv__cuda_t *c = x->comm->cuda;
  cudaStream_t stream = to_host ? c->copy_stream : x->stream;
  CUDA_CHECK(x->comm, cudaMemcpyAsync(dst, src, bytes, to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
                                      stream));
  CUDA_CHECK(x->comm, cudaEventRecord(to_host ? c->to_host[slot] : c->to_buffer[slot], stream));
  return HV_SUCCESS;
}

static hv_result_t cp_wait(copier_ctx_t *x, int slot, int to_host) {
  hv__cuda_t *c = x->comm->cuda;
  return wait_gpu(x->comm, query_event, to_host ? c->to_host[slot] : c->to_buffer[slot],
                  to_host ? "a device-to-host staging copy" : "a host-to-device staging copy");
}

static hv_result_t cp_to_host(void *ctx, int slot, void *host, const void *src, size_t bytes) {
  return cp_copy(ctx, slot, host, src, bytes, 1);
}
static hv_result_t cp_to_host_wait(void *ctx, int slot) { return cp_wait(ctx, slot, 1); }
static hv_result_t cp_to_buffer(void *ctx, int slot, void *dst, const void *host, size_t bytes) {
  return cp_copy(ctx, slot, dst, host, bytes, 0);
}
static hv_result_t cp_to_buffer_wait(void *ctx, int slot) { return cp_wait(ctx, slot, 0); }

/* Allreduce of buf (device) among the ranks of c->cross: MPI on the device pointer when
 * MPI is CUDA-aware (AVERAGE excepted: its division is done on the host), else staged. */
static hv_result_t cross_allreduce(hv_comm_t *comm, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op,
                                   cudaStream_t stream) {
  hv__cuda_t *c = comm->cuda;
  if (comm->cross_size == 1 || count == 0) return HV_SUCCESS;
  const hv_op_t wire_op = op == HV_AVERAGE ? HV_SUM : op;
  if (c->cuda_aware_mpi && op != HV_AVERAGE && count <= (size_t)1 << 30) {
    CUDA_CHECK(comm, cudaEventRecord(c->phase, stream));
    HV_CHECK(wait_gpu(comm, query_event, c->phase, "the node phase before a cross-node allreduce"));
    MPI_Request req;
    HV_MPI_CHECK(&comm->host.errors, MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, hv__mpi_datatype(dtype),
                                      hv__mpi_op(dtype, wire_op), c->cross, &req));
    return hv__wait_mpi(&comm->host, 1, &req, "the cross-node allreduce of a device buffer", 0);
  }
  /* The copies to the host wait for the node phase already on the caller's stream. */
  CUDA_CHECK(comm, cudaEventRecord(c->phase, stream));
  CUDA_CHECK(comm, cudaStreamWaitEvent(c->copy_stream, c->phase, 0));
  copier_ctx_t x = {comm, stream};
  hv__stage_copier_t cp = {&x, cp_to_host, cp_to_host_wait, cp_to_buffer, cp_to_buffer_wait};
  return hv__staged_allreduce(&comm->host, c->cross, &cp, buf, count, dtype, wire_op,
                              op == HV_AVERAGE ? (double)comm->size : 0, c->staging, c->slot_bytes);
}

/* Grow-only buffers: device scratch (the padded reduce-scatter) or pinned host memory
 * (the staged allgather). */
static hv_result_t reserve(hv_comm_t *comm, void **buf, size_t *have, size_t bytes, int pinned) {
  if (bytes <= *have) return HV_SUCCESS;
  if (pinned) cudaFreeHost(*buf);
  else cudaFree(*buf);
  *buf = NULL;
  *have = 0;
  CUDA_CHECK(comm, pinned ? cudaMallocHost(buf, bytes) : cudaMalloc(buf, bytes));
  *have = bytes;
  return HV_SUCCESS;
}

/* Checks common to every call, then the agreement of every rank on the call
 * (engine/ordered_check.c: the same collective, count, dtype, op or root, and for a
 * group the same list of counts), which also records it in the flight recorder; the
 * public functions below record its end (ordered_end). */
enum { COLL_ALLREDUCE = HV__ORDERED_ALLREDUCE, COLL_ALLGATHER = HV__ORDERED_ALLGATHER,
       COLL_BROADCAST = HV__ORDERED_BROADCAST, COLL_GROUP = HV__ORDERED_GROUP,
       COLL_REDUCESCATTER = HV__ORDERED_REDUCESCATTER, COLL_ALLTOALL = HV__ORDERED_ALLTOALL,
       COLL_ALLTOALLV = HV__ORDERED_ALLTOALLV, COLL_REDUCE = HV__ORDERED_REDUCE, COLL_GATHER = HV__ORDERED_GATHER,
       COLL_GATHERV = HV__ORDERED_GATHERV, COLL_SCATTER = HV__ORDERED_SCATTER, COLL_SCATTERV = HV__ORDERED_SCATTERV };

/* The flight recorder's event of this thread's call in progress, and its stream. */
static _Thread_local uint64_t ordered_pos;
static _Thread_local void *ordered_stream;

static hv_result_t begin_group(hv_comm_t *comm, int coll, size_t count, hv_dtype_t dtype, int op_or_root,
                               long long ntensors, uint64_t layout) {
  const char *name = hv__ordered_name(coll);
  if (!comm) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "%s: communicator is NULL (call hv_init first)", name);
  hv__cuda_t *c = comm->cuda;
  if (!c) return hv__set_error(comm, HV_ERR_UNSUPPORTED, "%s: the communicator has no GPU state", name);
  if (c->broken != HV_SUCCESS)
    return hv__set_error(comm, c->broken, "%s: an earlier failure ended this communicator's GPU collectives",
                         name);
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) device = -1;
  HV_CHECK(hv__ordered_agree(comm, c->all, coll, count, dtype, op_or_root, ntensors, layout, device,
                             (uint64_t)(uintptr_t)ordered_stream, &ordered_pos));
  return set_up(comm);
}

/* The end of a public call: its flight recorder event done or failed. */
static hv_result_t ordered_end(hv_comm_t *comm, hv_result_t rc) {
  if (comm && ordered_pos)
    hv__fr_ordered_finish(comm, ordered_pos, rc, comm->size == 1 ? "local" : comm->cross_size == 1 ? "nccl" : "hier");
  ordered_pos = 0;
  ordered_stream = NULL;
  return rc;
}

static hv_result_t begin(hv_comm_t *comm, int coll, size_t count, hv_dtype_t dtype, int op_or_root) {
  return begin_group(comm, coll, count, dtype, op_or_root, 0, 0);
}

/* count x times elements of dtype must fit in size_t: a wrapped product would make a
 * huge call look small to the copies and staging below. Before begin(), like the
 * other argument checks. */
static hv_result_t check_size(hv_comm_t *comm, const char *name, size_t count, size_t times, hv_dtype_t dtype) {
  size_t elements;
  if (!comm || (unsigned)dtype >= HV_NUM_DTYPES ||
      (!__builtin_mul_overflow(count, times, &elements) && elements <= SIZE_MAX / hv_dtype_size(dtype)))
    return HV_SUCCESS;
  return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: %zu elements x %zu x %zu bytes (%s) overflows size_t", name,
                       count, times, hv_dtype_size(dtype), hv_dtype_name(dtype));
}

static hv_result_t allreduce_device(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                    hv_dtype_t dtype, hv_op_t op, cudaStream_t stream);

/* The reducing calls' shared rule: HV_AVERAGE divides, so it needs a float dtype. */
static hv_result_t check_average(hv_comm_t *comm, const char *name, hv_dtype_t dtype, hv_op_t op) {
  if (comm && op == HV_AVERAGE && !hv__dtype_is_float(dtype))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: HV_AVERAGE needs a float dtype, not %s", name,
                         hv_dtype_name(dtype));
  return HV_SUCCESS;
}

static hv_result_t allreduce_cuda_call(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                              hv_op_t op, void *stream_arg) {
  if (comm && ((unsigned)dtype >= HV_NUM_DTYPES || (unsigned)op >= HV_NUM_OPS || (count && !recvbuf)))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_allreduce_cuda: bad dtype, op or NULL recvbuf");
  HV_CHECK(check_average(comm, "hv_allreduce_cuda", dtype, op));
  HV_CHECK(check_size(comm, "hv_allreduce_cuda", count, 1, dtype));
  HV_CHECK(begin(comm, COLL_ALLREDUCE, count, dtype, op));
  return allreduce_device(comm, sendbuf ? sendbuf : recvbuf, recvbuf, count, dtype, op, (cudaStream_t)stream_arg);
}

/* The allreduce itself, once the call is checked and agreed on (see hv_cuda.h). */
static hv_result_t allreduce_device(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                    hv_dtype_t dtype, hv_op_t op, cudaStream_t stream) {
  hv__cuda_t *c = comm->cuda;
  if (count == 0) return HV_SUCCESS;
  const size_t es = hv_dtype_size(dtype);
  const int l = comm->local_size, r = comm->local_rank;
  if (comm->size == 1) {
    /* One rank: the result is the input. Not NCCL: its one-rank ncclAvg left the last
     * elements of a 2^20 + 3 float out-of-place allreduce unwritten (NCCL 2.28, H100). */
    if (sendbuf != recvbuf)
      CUDA_CHECK(comm, cudaMemcpyAsync(recvbuf, sendbuf, count * es, cudaMemcpyDeviceToDevice, stream));
    return HV_SUCCESS;
  }
  if (comm->cross_size == 1) { /* one node: NCCL alone */
    NCCL_CHECK(comm, ncclAllReduce(sendbuf, recvbuf, count, nccl_type(dtype), nccl_op(op), c->nccl, stream));
    return HV_SUCCESS;
  }
  if (l == 1 || !comm->algo.uniform_nodes) {
    /* One rank per node, or nodes of different sizes: NCCL reduces the node (a copy for
     * one rank), local rank 0 of every node reduces across nodes, NCCL broadcasts. */
    const hv_op_t node_op = op == HV_AVERAGE ? HV_SUM : op;
    NCCL_CHECK(comm, ncclAllReduce(sendbuf, recvbuf, count, nccl_type(dtype), nccl_op(node_op), c->nccl, stream));
    if (r == 0) HV_CHECK(cross_allreduce(comm, recvbuf, count, dtype, op, stream));
    if (l > 1) NCCL_CHECK(comm, ncclBroadcast(recvbuf, recvbuf, count, nccl_type(dtype), 0, c->nccl, stream));
    return HV_SUCCESS;
  }
  /* Hierarchical: reduce-scatter in the node, allreduce of my segment across nodes,
   * allgather in the node. Segments are count / l rounded up; a count that does not
   * divide goes through padded device scratch. */
  const size_t seg = (count + (size_t)l - 1) / (size_t)l, padded = seg * (size_t)l;
  char *work = recvbuf;
  const hv_op_t node_op = op == HV_AVERAGE ? HV_SUM : op;
  if (padded != count) {
    HV_CHECK(reserve(comm, &c->scratch, &c->scratch_bytes, padded * es, 0));
    work = c->scratch;
    CUDA_CHECK(comm, cudaMemcpyAsync(work, sendbuf, count * es, cudaMemcpyDeviceToDevice, stream));
    CUDA_CHECK(comm, cudaMemsetAsync(work + count * es, 0, (padded - count) * es, stream));
    sendbuf = work;
  }
  char *mine = work + (size_t)r * seg * es;
  NCCL_CHECK(comm, ncclReduceScatter(sendbuf, mine, seg, nccl_type(dtype), nccl_op(node_op), c->nccl, stream));
  HV_CHECK(cross_allreduce(comm, mine, seg, dtype, op, stream));
  NCCL_CHECK(comm, ncclAllGather(mine, work, seg, nccl_type(dtype), c->nccl, stream));
  if (work != (char *)recvbuf)
    CUDA_CHECK(comm, cudaMemcpyAsync(recvbuf, work, count * es, cudaMemcpyDeviceToDevice, stream));
  return HV_SUCCESS;
}

static hv_result_t allgather_cuda_call(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                              void *stream_arg) {
  if (comm && ((unsigned)dtype >= HV_NUM_DTYPES || (count && (!sendbuf || !recvbuf))))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_allgather_cuda: bad dtype or NULL buffer");
  HV_CHECK(check_size(comm, "hv_allgather_cuda", count, comm ? (size_t)comm->size : 1, dtype));
  HV_CHECK(begin(comm, COLL_ALLGATHER, count, dtype, 0));
  hv__cuda_t *c = comm->cuda;
  cudaStream_t stream = (cudaStream_t)stream_arg;
  const size_t es = hv_dtype_size(dtype), bytes = count * es;
  if (count == 0) return HV_SUCCESS;
  if (comm->cross_size == 1) {
    NCCL_CHECK(comm, ncclAllGather(sendbuf, recvbuf, count, nccl_type(dtype), c->nccl, stream));
    return HV_SUCCESS;
  }
  /* Several nodes: through the host (or device memory, CUDA-aware), in rank order over
   * every rank of the job. */
  if (bytes > (size_t)1 << 30)
    return hv__set_error(comm, HV_ERR_UNSUPPORTED, "hv_allgather_cuda: %zu bytes per rank across nodes; at most 1 GiB",
                         bytes);
  char *dst = recvbuf;
  if (c->cuda_aware_mpi) {
    CUDA_CHECK(comm, cudaMemcpyAsync(dst + (size_t)comm->rank * bytes, sendbuf, bytes, cudaMemcpyDeviceToDevice,
                                     stream));
  } else {
    HV_CHECK(reserve(comm, &c->gather_host, &c->gather_bytes, bytes * (size_t)comm->size, 1));
    dst = c->gather_host;
    CUDA_CHECK(comm, cudaMemcpyAsync(dst + (size_t)comm->rank * bytes, sendbuf, bytes, cudaMemcpyDeviceToHost,
                                     stream));
  }
  CUDA_CHECK(comm, cudaEventRecord(c->phase, stream));
  HV_CHECK(wait_gpu(comm, query_event, c->phase, "the copy before a cross-node allgather"));
  MPI_Request req;
  HV_MPI_CHECK(&comm->host.errors, MPI_Iallgather(MPI_IN_PLACE, 0, MPI_BYTE, dst, (int)bytes, MPI_BYTE, c->all, &req));
  HV_CHECK(hv__wait_mpi(&comm->host, 1, &req, "the cross-node allgather of a device buffer", 0));
  if (!c->cuda_aware_mpi) {
    CUDA_CHECK(comm, cudaMemcpyAsync(recvbuf, dst, bytes * (size_t)comm->size, cudaMemcpyHostToDevice, stream));
    /* The pinned buffer is the next call's: the copy must have read it first. */
    CUDA_CHECK(comm, cudaEventRecord(c->phase, stream));
    HV_CHECK(wait_gpu(comm, query_event, c->phase, "the copy after a cross-node allgather"));
  }
  return HV_SUCCESS;
}

static hv_result_t broadcast_cuda_call(hv_comm_t *comm, void *buf, size_t count, hv_dtype_t dtype, int root,
                              void *stream_arg) {
  if (comm && ((unsigned)dtype >= HV_NUM_DTYPES || (count && !buf) || root < 0 || root >= comm->size))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_broadcast_cuda: bad dtype, NULL buffer or root %d "
                         "outside 0..%d", root, comm->size - 1);
  HV_CHECK(check_size(comm, "hv_broadcast_cuda", count, 1, dtype));
  HV_CHECK(begin(comm, COLL_BROADCAST, count, dtype, root));
  hv__cuda_t *c = comm->cuda;
  cudaStream_t stream = (cudaStream_t)stream_arg;
  if (count == 0) return HV_SUCCESS;
  if (comm->cross_size == 1) {
    NCCL_CHECK(comm, ncclBroadcast(buf, buf, count, nccl_type(dtype), root, c->nccl, stream));
    return HV_SUCCESS;
  }
  /* Several nodes: staged through the pinned slots, slot by slot, over every rank. */
  const size_t bytes = count * hv_dtype_size(dtype);
  for (size_t done = 0; done < bytes; done += c->slot_bytes) {
    const size_t len = bytes - done < c->slot_bytes ? bytes - done : c->slot_bytes;
    char *host = c->staging;
    if (comm->rank == root)
      CUDA_CHECK(comm, cudaMemcpyAsync(host, (char *)buf + done, len, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(comm, cudaEventRecord(c->phase, stream));
    HV_CHECK(wait_gpu(comm, query_event, c->phase, "a staging copy of a cross-node broadcast"));
    MPI_Request req;
    HV_MPI_CHECK(&comm->host.errors, MPI_Ibcast(host, (int)len, MPI_BYTE, root, c->all, &req));
    HV_CHECK(hv__wait_mpi(&comm->host, 1, &req, "the cross-node broadcast of a device buffer", 0));
    if (comm->rank != root)
      CUDA_CHECK(comm, cudaMemcpyAsync((char *)buf + done, host, len, cudaMemcpyHostToDevice, stream));
  }
  CUDA_CHECK(comm, cudaEventRecord(c->phase, stream));
  return wait_gpu(comm, query_event, c->phase, "the last staging copy of a cross-node broadcast");
}

static hv_result_t reducescatter_cuda_call(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                                  hv_dtype_t dtype, hv_op_t op, void *stream_arg) {
  if (comm && ((unsigned)dtype >= HV_NUM_DTYPES || (unsigned)op >= HV_NUM_OPS || (recvcount && (!sendbuf || !recvbuf))))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_reducescatter_cuda: bad dtype, op or NULL buffer");
  HV_CHECK(check_average(comm, "hv_reducescatter_cuda", dtype, op));
  HV_CHECK(check_size(comm, "hv_reducescatter_cuda", recvcount, comm ? (size_t)comm->size : 1, dtype));
  HV_CHECK(begin(comm, COLL_REDUCESCATTER, recvcount, dtype, op));
  hv__cuda_t *c = comm->cuda;
  cudaStream_t stream = (cudaStream_t)stream_arg;
  const size_t es = hv_dtype_size(dtype), block = recvcount * es;
  if (recvcount == 0) return HV_SUCCESS;
  if (comm->size > 1 && comm->cross_size == 1) { /* one node: NCCL's own (the 1-rank case is a copy, below) */
    NCCL_CHECK(comm, ncclReduceScatter(sendbuf, recvbuf, recvcount, nccl_type(dtype), nccl_op(op), c->nccl, stream));
    return HV_SUCCESS;
  }
  /* Several nodes: the whole buffer reduced as hv_allreduce_cuda does (hierarchical),
   * then my block kept: twice the traffic of a dedicated algorithm, the same values. */
  const char *mine = (const char *)sendbuf + (size_t)comm->rank * block;
  if (comm->size > 1) {
    HV_CHECK(reserve(comm, &c->reduced, &c->reduced_bytes, block * (size_t)comm->size, 0));
    HV_CHECK(allreduce_device(comm, sendbuf, c->reduced, recvcount * (size_t)comm->size, dtype, op, stream));
    mine = (const char *)c->reduced + (size_t)comm->rank * block;
  }
  if (mine != recvbuf) CUDA_CHECK(comm, cudaMemcpyAsync(recvbuf, mine, block, cudaMemcpyDeviceToDevice, stream));
  return HV_SUCCESS;
}

static hv_result_t alltoall_cuda_call(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                             void *stream_arg) {
  if (comm && ((unsigned)dtype >= HV_NUM_DTYPES || (count && (!sendbuf || !recvbuf))))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_alltoall_cuda: bad dtype or NULL buffer");
  HV_CHECK(check_size(comm, "hv_alltoall_cuda", count, comm ? (size_t)comm->size : 1, dtype));
  HV_CHECK(begin(comm, COLL_ALLTOALL, count, dtype, 0));
  hv__cuda_t *c = comm->cuda;
  cudaStream_t stream = (cudaStream_t)stream_arg;
  const size_t es = hv_dtype_size(dtype), block = count * es, total = block * (size_t)comm->size;
  if (count == 0) return HV_SUCCESS;
  if (comm->size == 1) {
    if (sendbuf != recvbuf)
      CUDA_CHECK(comm, cudaMemcpyAsync(recvbuf, sendbuf, block, cudaMemcpyDeviceToDevice, stream));
    return HV_SUCCESS;
  }
  if (comm->cross_size == 1) {
    /* One node: the NCCL communicator's ranks are the job's (node ranks follow rank
     * order), so block j goes to NCCL rank j; the pairs run as one group. */
    NCCL_CHECK(comm, ncclGroupStart());
    for (int j = 0; j < comm->size; j++) {
      const ncclDataType_t t = nccl_type(dtype);
      NCCL_CHECK(comm, ncclSend((const char *)sendbuf + (size_t)j * block, count, t, j, c->nccl, stream));
      NCCL_CHECK(comm, ncclRecv((char *)recvbuf + (size_t)j * block, count, t, j, c->nccl, stream));
    }
    NCCL_CHECK(comm, ncclGroupEnd());
    return HV_SUCCESS;
  }
  /* Several nodes: MPI_Alltoall over every rank, on the device buffers when MPI is
   * CUDA-aware, else through pinned host memory. */
  if (block > (size_t)1 << 30)
    return hv__set_error(comm, HV_ERR_UNSUPPORTED, "hv_alltoall_cuda: %zu bytes per block across nodes; at most 1 GiB",
                         block);
  const void *src = sendbuf;
  void *dst = recvbuf;
  char *host = NULL;
  if (!c->cuda_aware_mpi) {
    HV_CHECK(reserve(comm, &c->gather_host, &c->gather_bytes, 2 * total, 1));
    host = c->gather_host;
    CUDA_CHECK(comm, cudaMemcpyAsync(host, sendbuf, total, cudaMemcpyDeviceToHost, stream));
    src = host;
    dst = host + total;
  }
  CUDA_CHECK(comm, cudaEventRecord(c->phase, stream));
  HV_CHECK(wait_gpu(comm, query_event, c->phase, "the work before a cross-node all-to-all"));
  MPI_Request req;
  HV_MPI_CHECK(&comm->host.errors, MPI_Ialltoall(src, (int)block, MPI_BYTE, dst, (int)block, MPI_BYTE, c->all, &req));
  HV_CHECK(hv__wait_mpi(&comm->host, 1, &req, "the cross-node all-to-all of device buffers", 0));
  if (host) {
    CUDA_CHECK(comm, cudaMemcpyAsync(recvbuf, host + total, total, cudaMemcpyHostToDevice, stream));
    /* The pinned buffer is the next call's: the copy must have read it first. */
    CUDA_CHECK(comm, cudaEventRecord(c->phase, stream));
    HV_CHECK(wait_gpu(comm, query_event, c->phase, "the copy after a cross-node all-to-all"));
  }
  return HV_SUCCESS;
}

/* ---- issue #24: alltoallv, reduce, gather(v), scatter(v), one node ---- */

/* After begin(): what every rank agreed on is checked for range here, where every rank
 * fails alike (a rank failing before begin() would leave the others in its agreement). */
static hv_result_t agreed_root(hv_comm_t *comm, const char *name, int root) {
  if (root >= 0 && root < comm->size) return HV_SUCCESS;
  return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: root %d is out of range (ranks are 0..%d)", name, root,
                       comm->size - 1);
}

static hv_result_t one_node(hv_comm_t *comm, const char *name) {
  if (comm->cross_size == 1) return HV_SUCCESS;
  return hv__set_error(comm, HV_ERR_UNSUPPORTED, "%s: device buffers on %d nodes; it runs within one node (NCCL) "
                       "so far: stage through host buffers and hv.h's call", name, comm->cross_size);
}

/* Block q of send (send[q] elements, in rank order) to rank q, block q of recv from
 * rank q, as one NCCL group: the NCCL communicator's ranks are the job's on one node.
 * Empty blocks are skipped on both sides (the splits agree, so both skip alike). */
static hv_result_t pairwise(hv_comm_t *comm, const void *sendbuf, const int64_t *send, void *recvbuf,
                            const int64_t *recv, hv_dtype_t dtype, cudaStream_t stream) {
  hv__cuda_t *c = comm->cuda;
  const ncclDataType_t t = nccl_type(dtype);
  const size_t es = hv_dtype_size(dtype);
  size_t soff = 0, roff = 0;
  NCCL_CHECK(comm, ncclGroupStart());
  for (int q = 0; q < comm->size; q++) {
    if (send[q]) {
      ncclResult_t rc = ncclSend((const char *)sendbuf + soff * es, (size_t)send[q], t, q, c->nccl, stream);
      if (rc != ncclSuccess) {
        ncclGroupEnd();
        return nccl_failed(comm, rc, "ncclSend");
      }
    }
    if (recv[q]) {
      ncclResult_t rc = ncclRecv((char *)recvbuf + roff * es, (size_t)recv[q], t, q, c->nccl, stream);
      if (rc != ncclSuccess) {
        ncclGroupEnd();
        return nccl_failed(comm, rc, "ncclRecv");
      }
    }
    soff += (size_t)send[q];
    roff += (size_t)recv[q];
  }
  NCCL_CHECK(comm, ncclGroupEnd());
  return HV_SUCCESS;
}

/* The v-forms: the splits agreed on by every rank (hv__splits_agree), then pairwise. */
static hv_result_t pairwise_v(hv_comm_t *comm, int kind, const char *name, const void *sendbuf, const int64_t *send,
                              int64_t total_send, void *recvbuf, const int64_t *recv, int64_t total_recv,
                              hv_dtype_t dtype, cudaStream_t stream) {
  hv__splits_t s = {kind == COLL_ALLTOALLV ? HV__COLL_ALLTOALLV : kind == COLL_GATHERV ? HV__COLL_GATHERV
                                                                                        : HV__COLL_SCATTERV,
                    name, send, recv, total_send, total_recv};
  hv_result_t code = HV_SUCCESS;
  char *detail = NULL;
  HV_CHECK(hv__splits_agree(comm, comm->cuda->all, &s, &code, &detail));
  if (detail) {
    hv_result_t rc = hv__set_error(comm, code, "%s", detail);
    free(detail);
    return rc;
  }
  HV_CHECK(one_node(comm, name));
  return pairwise(comm, sendbuf, send, recvbuf, recv, dtype, stream);
}

/* Splits for the calls that have none (gather, scatter), or whose root's list stands
 * for the others' (gatherv, scatterv): 2 x size entries, zeros. */
static int64_t *zero_splits(hv_comm_t *comm, const char *name) {
  int64_t *s = calloc(2 * (size_t)comm->size, sizeof(int64_t));
  if (!s) hv__set_error(comm, HV_ERR_NO_MEMORY, "%s: splits", name);
  return s;
}

static hv_result_t alltoallv_cuda_call(hv_comm_t *comm, const void *sendbuf, size_t sendcount,
                                       const int64_t *sendsplits, hv_dtype_t dtype, void *recvbuf, size_t recvcount,
                                       const int64_t *recvsplits, void *stream) {
  static const char name[] = "hv_alltoallv_cuda";
  if (comm && ((unsigned)dtype >= HV_NUM_DTYPES || !sendsplits || !recvsplits || (sendcount && !sendbuf) ||
               (recvcount && !recvbuf) || sendcount > (size_t)INT64_MAX || recvcount > (size_t)INT64_MAX))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: bad dtype, NULL splits or buffer, or a count past INT64_MAX",
                         name);
  HV_CHECK(check_size(comm, name, sendcount, 1, dtype));
  HV_CHECK(check_size(comm, name, recvcount, 1, dtype));
  HV_CHECK(begin(comm, COLL_ALLTOALLV, 0, dtype, 0));
  return pairwise_v(comm, COLL_ALLTOALLV, name, sendbuf, sendsplits, (int64_t)sendcount, recvbuf, recvsplits,
                    (int64_t)recvcount, dtype, (cudaStream_t)stream);
}

static hv_result_t reduce_cuda_call(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                                    hv_op_t op, int root, void *stream) {
  static const char name[] = "hv_reduce_cuda";
  if (comm && ((unsigned)dtype >= HV_NUM_DTYPES || (unsigned)op >= HV_NUM_OPS || (count && !sendbuf) ||
               (count && root == comm->rank && !recvbuf)))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: bad dtype, op or NULL buffer", name);
  HV_CHECK(check_average(comm, name, dtype, op));
  HV_CHECK(check_size(comm, name, count, 1, dtype));
  /* Op and root agreed in one value. */
  HV_CHECK(begin(comm, COLL_REDUCE, count, dtype, (int)op + HV_NUM_OPS * root));
  HV_CHECK(agreed_root(comm, name, root));
  HV_CHECK(one_node(comm, name));
  if (count == 0) return HV_SUCCESS;
  NCCL_CHECK(comm, ncclReduce(sendbuf, recvbuf, count, nccl_type(dtype), nccl_op(op), root, comm->cuda->nccl,
                              (cudaStream_t)stream));
  return HV_SUCCESS;
}

/* Gather and scatter, plain (count for every rank) or v (the root's list). */
static hv_result_t gather_scatter_call(hv_comm_t *comm, int kind, const char *name, const void *sendbuf, void *recvbuf,
                                       size_t count, const int64_t *list, hv_dtype_t dtype, int root, void *stream) {
  const int gather = kind == COLL_GATHER || kind == COLL_GATHERV, v = kind == COLL_GATHERV || kind == COLL_SCATTERV;
  if (comm && ((unsigned)dtype >= HV_NUM_DTYPES || count > (size_t)INT64_MAX || (count && !(gather ? sendbuf : recvbuf))))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: bad dtype, NULL buffer or a count past INT64_MAX", name);
  if (comm && v && root == comm->rank && !list)
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: the root's %s is NULL", name,
                         gather ? "recvcounts" : "sendcounts");
  HV_CHECK(check_size(comm, name, count, v ? 1 : (size_t)(comm ? comm->size : 1), dtype));
  HV_CHECK(begin(comm, kind, v ? 0 : count, dtype, root));
  HV_CHECK(agreed_root(comm, name, root));
  int64_t *s = zero_splits(comm, name);
  if (!s) return HV_ERR_NO_MEMORY;
  int n = comm->size;
  int64_t *send = s, *recv = s + n;
  const int is_root = comm->rank == root;
  if (gather) send[root] = (int64_t)count;
  else recv[root] = (int64_t)count;
  for (int q = 0; is_root && q < n; q++) {
    if (gather) recv[q] = v ? list[q] : (int64_t)count;
    else send[q] = v ? list[q] : (int64_t)count;
  }
  hv_result_t rc;
  if (v) {
    rc = pairwise_v(comm, kind, name, sendbuf, send, -1, recvbuf, recv, -1, dtype, (cudaStream_t)stream);
  } else {
    rc = one_node(comm, name);
    if (rc == HV_SUCCESS) rc = pairwise(comm, sendbuf, send, recvbuf, recv, dtype, (cudaStream_t)stream);
  }
  free(s);
  return rc;
}

/* The grid of one fusion kernel launch covers at most this many tensors. */
#define GROUP_LAUNCH_MAX 65535

static hv_result_t allreduce_cuda_group_call(hv_comm_t *comm, const hv_cuda_tensor_t *tensors, int n, hv_dtype_t dtype,
                                    hv_op_t op, const hv_allreduce_opts_t *opts, void *stream_arg) {
  static const char *const name = "hv_allreduce_cuda_group";
  if (comm && (n < 0 || (n && !tensors) || (unsigned)dtype >= HV_NUM_DTYPES || (unsigned)op >= HV_NUM_OPS))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: bad tensor list, dtype or op", name);
  HV_CHECK(check_average(comm, name, dtype, op));
  const int is_float = dtype == HV_FLOAT32 || dtype == HV_FLOAT16 || dtype == HV_BFLOAT16;
  if (comm && !is_float && dtype != HV_FLOAT64 && opts && (opts->prescale != 1.0 || opts->postscale != 1.0))
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: scaling needs a float dtype, not %s", name,
                         hv_dtype_name(dtype));
  if (comm && dtype == HV_FLOAT64 && (op == HV_AVERAGE || (opts && (opts->prescale != 1.0 || opts->postscale != 1.0))))
    return hv__set_error(comm, HV_ERR_UNSUPPORTED, "%s: averaging and scaling of float64 are not in the fusion "
                         "kernels; call hv_allreduce_cuda per tensor and scale yourself", name);
  size_t total = 0, max_count = 0;
  for (int i = 0; i < n; i++) {
    if (comm && tensors[i].count && !tensors[i].recvbuf)
      return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: tensor %d has a NULL recvbuf", name, i);
    if (comm && tensors[i].count > SIZE_MAX / sizeof(double) - total)
      return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT,
                           "%s: the group's total count overflows: %zu elements, then tensor %d of %zu", name, total, i,
                           tensors[i].count);
    total += tensors[i].count;
    if (tensors[i].count > max_count) max_count = tensors[i].count;
  }
  /* The wire dtype: float32 may travel as float16 or bfloat16. */
  hv_compression_t comp = opts ? opts->compression : HV_COMPRESSION_DEFAULT;
  if (comp == HV_COMPRESSION_DEFAULT && comm) comp = comm->config.compression;
  const hv_dtype_t wire = dtype != HV_FLOAT32 ? dtype
                          : comp == HV_COMPRESSION_FP16 ? HV_FLOAT16
                          : comp == HV_COMPRESSION_BF16 ? HV_BFLOAT16 : dtype;
  HV_CHECK(begin_group(comm, COLL_GROUP, total, dtype, (int)op | (int)wire << 4, n,
                       n > 0 ? hv__layout_hash(tensors, (size_t)n) : 0));
  hv__cuda_t *c = comm->cuda;
  cudaStream_t stream = (cudaStream_t)stream_arg;
  if (total == 0) return HV_SUCCESS;
  const double pre = opts ? opts->prescale : 1.0;
  const double post = (opts ? opts->postscale : 1.0) / (op == HV_AVERAGE ? comm->size : 1);
  /* Entries for packing (send buffers) then unpacking (receive buffers). The pinned
   * copy is the previous call's until its upload has run. */
  const size_t entries_bytes = 2 * (size_t)n * sizeof(hv__fusion_entry_t);
  HV_CHECK(wait_gpu(comm, query_event, c->entries_copied, "the previous group's entry upload"));
  HV_CHECK(reserve(comm, &c->entries_host, &c->entries_host_bytes, entries_bytes, 1));
  HV_CHECK(reserve(comm, &c->entries_dev, &c->entries_dev_bytes, entries_bytes, 0));
  HV_CHECK(reserve(comm, &c->fused, &c->fused_bytes, total * hv_dtype_size(wire), 0));
  hv__fusion_entry_t *host = c->entries_host;
  size_t offset = 0;
  for (int i = 0; i < n; i++) {
    const void *send = tensors[i].sendbuf ? tensors[i].sendbuf : tensors[i].recvbuf;
    host[i] = (hv__fusion_entry_t){(void *)send, tensors[i].count, offset, (float)pre};
    host[n + i] = (hv__fusion_entry_t){tensors[i].recvbuf, tensors[i].count, offset, (float)post};
    offset += tensors[i].count;
  }
  /* Everything happens on the communication stream, after what the caller's stream
   * holds; the caller's stream then waits for it. */
  CUDA_CHECK(comm, cudaEventRecord(c->group_in, stream));
  CUDA_CHECK(comm, cudaStreamWaitEvent(c->comm_stream, c->group_in, 0));
  CUDA_CHECK(comm, cudaMemcpyAsync(c->entries_dev, host, entries_bytes, cudaMemcpyHostToDevice, c->comm_stream));
  CUDA_CHECK(comm, cudaEventRecord(c->entries_copied, c->comm_stream));
  const hv__fusion_entry_t *dev = c->entries_dev;
  for (int at = 0; at < n; at += GROUP_LAUNCH_MAX) {
    const int k = n - at < GROUP_LAUNCH_MAX ? n - at : GROUP_LAUNCH_MAX;
    const int rc = hv__cuda_fusion_pack(dev + at, k, c->fused, dtype, wire, max_count, c->comm_stream);
    if (rc) return hv__set_error(comm, HV_ERR_CUDA, "rank %d: %s: packing failed: %s", comm->rank, name,
                                 cudaGetErrorString((cudaError_t)rc));
  }
  HV_CHECK(allreduce_device(comm, c->fused, c->fused, total, wire, op == HV_AVERAGE ? HV_SUM : op, c->comm_stream));
  for (int at = 0; at < n; at += GROUP_LAUNCH_MAX) {
    const int k = n - at < GROUP_LAUNCH_MAX ? n - at : GROUP_LAUNCH_MAX;
    const int rc = hv__cuda_fusion_unpack(dev + n + at, k, c->fused, wire, dtype, max_count, c->comm_stream);
    if (rc) return hv__set_error(comm, HV_ERR_CUDA, "rank %d: %s: unpacking failed: %s", comm->rank, name,
                                 cudaGetErrorString((cudaError_t)rc));
  }
  CUDA_CHECK(comm, cudaEventRecord(c->group_out, c->comm_stream));
  CUDA_CHECK(comm, cudaStreamWaitEvent(stream, c->group_out, 0));
  return HV_SUCCESS;
}

/* The public calls: each records its end in the flight recorder. */
hv_result_t hv_allreduce_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                              hv_op_t op, void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, allreduce_cuda_call(comm, sendbuf, recvbuf, count, dtype, op, stream_arg));
}

hv_result_t hv_allgather_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                              void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, allgather_cuda_call(comm, sendbuf, recvbuf, count, dtype, stream_arg));
}

hv_result_t hv_broadcast_cuda(hv_comm_t *comm, void *buf, size_t count, hv_dtype_t dtype, int root,
                              void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, broadcast_cuda_call(comm, buf, count, dtype, root, stream_arg));
}

hv_result_t hv_reducescatter_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                                  hv_dtype_t dtype, hv_op_t op, void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, reducescatter_cuda_call(comm, sendbuf, recvbuf, recvcount, dtype, op, stream_arg));
}

hv_result_t hv_alltoall_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                             void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, alltoall_cuda_call(comm, sendbuf, recvbuf, count, dtype, stream_arg));
}

hv_result_t hv_alltoallv_cuda(hv_comm_t *comm, const void *sendbuf, size_t sendcount, const int64_t *sendsplits,
                              hv_dtype_t dtype, void *recvbuf, size_t recvcount, const int64_t *recvsplits,
                              void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, alltoallv_cuda_call(comm, sendbuf, sendcount, sendsplits, dtype, recvbuf, recvcount,
                                               recvsplits, stream_arg));
}

hv_result_t hv_reduce_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                           hv_op_t op, int root, void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, reduce_cuda_call(comm, sendbuf, recvbuf, count, dtype, op, root, stream_arg));
}

hv_result_t hv_gather_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                           int root, void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, gather_scatter_call(comm, COLL_GATHER, "hv_gather_cuda", sendbuf, recvbuf, count, NULL,
                                               dtype, root, stream_arg));
}

hv_result_t hv_gatherv_cuda(hv_comm_t *comm, const void *sendbuf, size_t sendcount, hv_dtype_t dtype, void *recvbuf,
                            const int64_t *recvcounts, int root, void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, gather_scatter_call(comm, COLL_GATHERV, "hv_gatherv_cuda", sendbuf, recvbuf, sendcount,
                                               recvcounts, dtype, root, stream_arg));
}

hv_result_t hv_scatter_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                            int root, void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, gather_scatter_call(comm, COLL_SCATTER, "hv_scatter_cuda", sendbuf, recvbuf, count, NULL,
                                               dtype, root, stream_arg));
}

hv_result_t hv_scatterv_cuda(hv_comm_t *comm, const void *sendbuf, const int64_t *sendcounts, hv_dtype_t dtype,
                             void *recvbuf, size_t recvcount, int root, void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, gather_scatter_call(comm, COLL_SCATTERV, "hv_scatterv_cuda", sendbuf, recvbuf, recvcount,
                                               sendcounts, dtype, root, stream_arg));
}

hv_result_t hv_allreduce_cuda_group(hv_comm_t *comm, const hv_cuda_tensor_t *tensors, int n, hv_dtype_t dtype,
                                    hv_op_t op, const hv_allreduce_opts_t *opts, void *stream_arg) {
  ordered_pos = 0;
  ordered_stream = stream_arg;
  return ordered_end(comm, allreduce_cuda_group_call(comm, tensors, n, dtype, op, opts, stream_arg));
}

hv_result_t hv_cuda_wait(hv_comm_t *comm, void *stream) {
  if (!comm) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_cuda_wait: communicator is NULL");
  if (!comm->cuda) return hv__set_error(comm, HV_ERR_UNSUPPORTED, "hv_cuda_wait: the communicator has no GPU state");
  if (comm->cuda->broken != HV_SUCCESS) return comm->cuda->broken;
  return wait_gpu(comm, query_stream, stream, "a stream with GPU collectives");
}
