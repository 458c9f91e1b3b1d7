/* bench_cuda.c: hvbench's --device cuda: the GPU each rank uses, device copies of the
 * buffers, the two backends (hv through hv_cuda.h, and the peer: raw NCCL calls on a
 * communicator of all ranks, as nccl-tests makes them) and the GPU timed loop.
 * Compiled when the build has NCCL; bench_cuda_stub.c stands in otherwise.
 *
 * Both backends enqueue on one stream, made here, on the same device buffers, so the
 * two tables measure the same thing. Inputs are written and results checked on the
 * host by bench_data.c; upload and download copy everything, guard zones included,
 * so a device-side write past the end is counted like one on the CPU.
 * Timing follows nccl-tests on GPUs: after the caller's barrier the iterations are
 * enqueued back to back and waited for once (NCCL: stream polled with
 * ncclCommGetAsyncError, as nccl-tests does; hv: hv_cuda_wait). An event recorded
 * between iterations gives each one's GPU time for p50/p99. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv_cuda.h"
#include "hv_mpi.h"
#include "hvbench.h"

/* Events per chunk of the timed loop: a longer run waits once per chunk. */
enum { EVENT_CHUNK = 1024 };

static struct {
  int device;
  cudaStream_t stream;
  cudaEvent_t events[EVENT_CHUNK + 1];
  int nevents; /* created so far */
} g = {-1, NULL, {0}, 0};

#define CUDA_TRY(call)                                                                     \
  do {                                                                                     \
    cudaError_t cuda_rc_ = (call);                                                         \
    if (cuda_rc_ != cudaSuccess) {                                                         \
      snprintf(err, err_len, "%s failed: %s", #call, cudaGetErrorString(cuda_rc_));        \
      return -1;                                                                           \
    }                                                                                      \
  } while (0)

#define NCCL_TRY(call)                                                                     \
  do {                                                                                     \
    ncclResult_t nccl_rc_ = (call);                                                        \
    if (nccl_rc_ != ncclSuccess) {                                                         \
      snprintf(err, err_len, "%s failed: %s (%s)", #call, ncclGetErrorString(nccl_rc_),    \
               ncclGetLastError(NULL));                                                    \
      return -1;                                                                           \
    }                                                                                      \
  } while (0)

int cuda_built(void) { return 1; }

int cuda_setup(MPI_Comm world, int rank) {
  char why[384] = "";
  int count = 0, no_device = 0, local = 0;
  /* Ranks of a node share its GPUs round-robin by local rank. (Collective: before
   * anything that may differ between ranks.) */
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  cudaError_t rc = cudaGetDeviceCount(&count);
  const char *visible = getenv("CUDA_VISIBLE_DEVICES");
  if (rc != cudaSuccess || count == 0) {
    no_device = 1;
    snprintf(why, sizeof(why), "no CUDA device visible (cudaGetDeviceCount: %s; "
             "CUDA_VISIBLE_DEVICES=%s)",
             rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices", visible ? visible : "unset");
  } else {
    g.device = local % count;
    if ((rc = cudaSetDevice(g.device)) != cudaSuccess)
      snprintf(why, sizeof(why), "cudaSetDevice(%d) failed: %s", g.device,
               cudaGetErrorString(rc));
    else if ((rc = cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking)) != cudaSuccess)
      snprintf(why, sizeof(why), "cudaStreamCreateWithFlags on device %d failed: %s", g.device,
               cudaGetErrorString(rc));
  }
  /* Every rank learns whether all can go on, so none waits in a collective for one that
   * stopped here. */
  int local_flags[2] = {why[0] != '\0', no_device}, any[2] = {0, 0};
  MPI_Allreduce(local_flags, any, 2, MPI_INT, MPI_MAX, world);
  if (!any[0]) return 0;
  if (why[0]) fprintf(stderr, "hvbench: rank %d: --device cuda: %s\n", rank, why);
  else fprintf(stderr, "hvbench: rank %d: --device cuda: another rank has no usable CUDA device "
               "(see its line); stopping\n", rank);
  fflush(stderr);
  cuda_teardown();
  const char *skip = getenv("HVBENCH_SKIP_NO_GPU");
  return any[1] && skip && strcmp(skip, "1") == 0 ? 77 : BENCH_EXIT_RUNTIME;
}

void cuda_teardown(void) {
  for (int i = 0; i < g.nevents; i++) cudaEventDestroy(g.events[i]);
  g.nevents = 0;
  if (g.stream) cudaStreamDestroy(g.stream);
  g.stream = NULL;
}

void cuda_describe(char *out, size_t len) {
  struct cudaDeviceProp p;
  if (g.device < 0 || cudaGetDeviceProperties(&p, g.device) != cudaSuccess) {
    snprintf(out, len, "device %d (cudaGetDeviceProperties failed)", g.device);
    return;
  }
  snprintf(out, len, "device %2d [%04x:%02x:%02x] %.80s", g.device, (unsigned)p.pciDomainID,
           (unsigned)p.pciBusID, (unsigned)p.pciDeviceID, p.name);
}

int cuda_buffers_alloc(bench_buffers_t *b, char *err, size_t err_len) {
  b->dev_send = calloc((size_t)b->tensors, sizeof(void *));
  b->dev_recv = calloc((size_t)b->tensors, sizeof(void *));
  if (!b->dev_send || !b->dev_recv) {
    snprintf(err, err_len, "out of memory for %d device buffer pointers", b->tensors);
    cuda_buffers_free(b);
    return -1;
  }
  for (int t = 0; t < b->tensors; t++) {
    size_t sb = b->send_bytes + BENCH_GUARD_BYTES, rb = b->recv_bytes + BENCH_GUARD_BYTES;
    cudaError_t rc = cudaMalloc(&b->dev_send[t], sb);
    if (rc == cudaSuccess) rc = cudaMalloc(&b->dev_recv[t], rb);
    if (rc == cudaSuccess) rc = cudaMemset(b->dev_send[t], 0, sb);
    if (rc == cudaSuccess) rc = cudaMemset(b->dev_recv[t], 0, rb);
    if (rc != cudaSuccess) {
      snprintf(err, err_len, "device %d: cannot allocate %d x (%zu + %zu) bytes of GPU buffers "
               "(failed at tensor %d): %s",
               g.device, b->tensors, sb, rb, t, cudaGetErrorString(rc));
      cuda_buffers_free(b);
      return -1;
    }
  }
  return 0;
}

void cuda_buffers_free(bench_buffers_t *b) {
  for (int t = 0; t < b->tensors; t++) {
    if (b->dev_send && b->dev_send[t]) cudaFree(b->dev_send[t]);
    if (b->dev_recv && b->dev_recv[t]) cudaFree(b->dev_recv[t]);
  }
  free(b->dev_send);
  free(b->dev_recv);
  b->dev_send = b->dev_recv = NULL;
}

/* On the benchmark's stream, then waited for: the host buffers are pageable, and the
 * collectives that follow run on that stream (or after it, hv's grouped allreduce). */
static int copy_all(bench_buffers_t *b, int to_device, char *err, size_t err_len) {
  const enum cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  const size_t sb = b->send_bytes + BENCH_GUARD_BYTES, rb = b->recv_bytes + BENCH_GUARD_BYTES;
  for (int t = 0; t < b->tensors; t++) {
    if (to_device) {
      CUDA_TRY(cudaMemcpyAsync(b->dev_send[t], b->send[t], sb, kind, g.stream));
      CUDA_TRY(cudaMemcpyAsync(b->dev_recv[t], b->recv[t], rb, kind, g.stream));
    } else {
      CUDA_TRY(cudaMemcpyAsync(b->send[t], b->dev_send[t], sb, kind, g.stream));
      CUDA_TRY(cudaMemcpyAsync(b->recv[t], b->dev_recv[t], rb, kind, g.stream));
    }
  }
  CUDA_TRY(cudaStreamSynchronize(g.stream));
  return 0;
}

int cuda_upload(bench_buffers_t *b, char *err, size_t err_len) {
  return copy_all(b, 1, err, err_len);
}
int cuda_download(bench_buffers_t *b, char *err, size_t err_len) {
  return copy_all(b, 0, err, err_len);
}

/* b with the device pointers in place of the host ones, for data_input_ptr(). */
static bench_buffers_t device_view(const bench_buffers_t *b) {
  bench_buffers_t v = *b;
  v.send = b->dev_send;
  v.recv = b->dev_recv;
  return v;
}

/* Placements as on the CPU: broadcast is in place only, reduce-scatter and all-to-all
 * out of place only, the others both. */
static int placement_ok(const bench_case_t *c, int in_place) {
  switch (c->coll) {
  case BENCH_BROADCAST: return in_place;
  case BENCH_REDUCESCATTER:
  case BENCH_ALLTOALL: return !in_place;
  default: return 1;
  }
}

/* ---- hv through hv_cuda.h ---- */

typedef struct hv_state {
  hv_comm_t *comm;
  hv_cuda_tensor_t *group; /* [cap] */
  int cap;
} hv_state_t;

static int hv_fail(hv_state_t *st, hv_result_t rc, const char *what, char *err, size_t err_len) {
  return bench_hv_error(st->comm, rc, what, err, err_len);
}

/* One hv_allreduce_cuda_group of all K tensors: with --tensors K > 1 (the DDP bucket)
 * and for compression, which lives in the group's fusion kernels. */
static int hv_grouped(const bench_case_t *c) {
  return c->coll == BENCH_ALLREDUCE && (c->tensors > 1 || c->compression != HV_COMPRESSION_NONE);
}

static int hv_run(bench_backend_t *self, const bench_case_t *c, bench_buffers_t *b,
                  int in_place, char *err, size_t err_len) {
  hv_state_t *st = self->state;
  bench_buffers_t dv = device_view(b);
  hv_result_t rc = HV_SUCCESS;
  if (hv_grouped(c)) {
    if (c->tensors > st->cap) {
      free(st->group);
      st->group = calloc((size_t)c->tensors, sizeof(*st->group));
      st->cap = st->group ? c->tensors : 0;
      if (!st->group) {
        snprintf(err, err_len, "out of memory for %d tensors", c->tensors);
        return -1;
      }
    }
    for (int t = 0; t < c->tensors; t++)
      st->group[t] = (hv_cuda_tensor_t){data_input_ptr(c, &dv, t, in_place), dv.recv[t],
                                        c->param_count};
    hv_allreduce_opts_t opts = HV_ALLREDUCE_OPTS_INIT;
    opts.compression = c->compression;
    rc = hv_allreduce_cuda_group(st->comm, st->group, c->tensors, c->dtype, c->op, &opts,
                                 g.stream);
    return rc == HV_SUCCESS ? 0 : hv_fail(st, rc, "hv_allreduce_cuda_group", err, err_len);
  }
  for (int t = 0; t < c->tensors && rc == HV_SUCCESS; t++) {
    const void *send = data_input_ptr(c, &dv, t, in_place);
    switch (c->coll) {
    case BENCH_ALLREDUCE:
      rc = hv_allreduce_cuda(st->comm, send, dv.recv[t], c->param_count, c->dtype, c->op,
                             g.stream);
      break;
    case BENCH_ALLGATHER:
      rc = hv_allgather_cuda(st->comm, send, dv.recv[t], c->param_count, c->dtype, g.stream);
      break;
    case BENCH_BROADCAST:
      rc = hv_broadcast_cuda(st->comm, dv.recv[t], c->param_count, c->dtype, c->root, g.stream);
      break;
    case BENCH_REDUCESCATTER:
      rc = hv_reducescatter_cuda(st->comm, send, dv.recv[t], c->param_count, c->dtype, c->op,
                                 g.stream);
      break;
    case BENCH_ALLTOALL:
      rc = hv_alltoall_cuda(st->comm, send, dv.recv[t], c->param_count, c->dtype, g.stream);
      break;
    default: rc = HV_ERR_UNSUPPORTED; break;
    }
  }
  return rc == HV_SUCCESS ? 0 : hv_fail(st, rc, coll_name(c->coll), err, err_len);
}

static int hv_sync(bench_backend_t *self, char *err, size_t err_len) {
  hv_state_t *st = self->state;
  hv_result_t rc = hv_cuda_wait(st->comm, g.stream);
  return rc == HV_SUCCESS ? 0 : hv_fail(st, rc, "hv_cuda_wait", err, err_len);
}

/* The fusion kernels neither average nor scale float64 (hv_cuda.h): n/a when grouped. */
static int hv_supports(const bench_backend_t *self, const bench_case_t *c, int in_place) {
  (void)self;
  if (hv_grouped(c) && c->dtype == HV_FLOAT64 && c->op == HV_AVERAGE) return 0;
  return placement_ok(c, in_place);
}

static void hv_destroy(bench_backend_t *self) {
  hv_state_t *st = self->state;
  if (!st) return;
  hv_result_t rc = hv_shutdown(st->comm);
  if (rc != HV_SUCCESS)
    fprintf(stderr, "hvbench: hv_shutdown (%s): %s\n", self->name, hv_strerror(rc));
  free(st->group);
  free(st);
  self->state = NULL;
}

int cuda_hv_backend_create(bench_backend_t *be, MPI_Comm world, char *err, size_t err_len) {
  hv_state_t *st = calloc(1, sizeof(*st));
  if (!st) return bench_out_of_memory(err, err_len);
  if (bench_hv_open(world, &st->comm, err, err_len)) {
    free(st);
    return -1;
  }
  snprintf(be->name, sizeof(be->name), "hv:cuda");
  snprintf(be->detail, sizeof(be->detail),
           "hv_cuda.h (NCCL within a node, MPI between nodes; --tensors/compression: grouped)");
  be->is_peer = 0;
  be->algo = BENCH_ALGO_AUTO;
  be->state = st;
  be->run = hv_run;
  be->supports = hv_supports;
  be->destroy = hv_destroy;
  be->sync = hv_sync;
  return 0;
}

/* ---- the peer: raw NCCL ---- */

typedef struct nccl_state {
  ncclComm_t comm;
  int rank;
} nccl_state_t;

static ncclDataType_t nccl_type(hv_dtype_t t) {
  switch (t) {
  case HV_UINT8: return ncclUint8;
  case HV_INT8: return ncclInt8;
  case HV_INT32: return ncclInt32;
  case HV_INT64: return ncclInt64;
  case HV_FLOAT16: return ncclFloat16;
  case HV_BFLOAT16: return ncclBfloat16;
  case HV_FLOAT64: return ncclFloat64;
  default: return ncclFloat32;
  }
}

static ncclRedOp_t nccl_op(hv_op_t op) {
  switch (op) {
  case HV_AVERAGE: return ncclAvg;
  case HV_MIN: return ncclMin;
  case HV_MAX: return ncclMax;
  case HV_PRODUCT: return ncclProd;
  default: return ncclSum;
  }
}

/* With --tensors K, K separate calls: a trainer without fusion, as the MPI peer does. */
static int nccl_run(bench_backend_t *self, const bench_case_t *c, bench_buffers_t *b,
                    int in_place, char *err, size_t err_len) {
  nccl_state_t *st = self->state;
  bench_buffers_t dv = device_view(b);
  const ncclDataType_t type = nccl_type(c->dtype);
  for (int t = 0; t < c->tensors; t++) {
    const void *send = data_input_ptr(c, &dv, t, in_place);
    switch (c->coll) {
    case BENCH_ALLREDUCE:
      NCCL_TRY(ncclAllReduce(send, dv.recv[t], c->param_count, type, nccl_op(c->op), st->comm,
                             g.stream));
      break;
    case BENCH_ALLGATHER:
      NCCL_TRY(ncclAllGather(send, dv.recv[t], c->param_count, type, st->comm, g.stream));
      break;
    case BENCH_BROADCAST:
      NCCL_TRY(ncclBroadcast(dv.recv[t], dv.recv[t], c->param_count, type, c->root, st->comm,
                             g.stream));
      break;
    case BENCH_REDUCESCATTER:
      NCCL_TRY(ncclReduceScatter(send, dv.recv[t], c->param_count, type, nccl_op(c->op), st->comm,
                                 g.stream));
      break;
    case BENCH_ALLTOALL: { /* nccl-tests' alltoall: one group of sends and receives */
      const size_t block = c->param_count * hv_dtype_size(c->dtype);
      NCCL_TRY(ncclGroupStart());
      for (int j = 0; j < c->nranks; j++) {
        NCCL_TRY(ncclSend((const char *)send + (size_t)j * block, c->param_count, type, j, st->comm,
                          g.stream));
        NCCL_TRY(ncclRecv((char *)dv.recv[t] + (size_t)j * block, c->param_count, type, j, st->comm,
                          g.stream));
      }
      NCCL_TRY(ncclGroupEnd());
      break;
    }
    default:
      snprintf(err, err_len, "%s is not measured on the GPU", coll_name(c->coll));
      return -1;
    }
  }
  return 0;
}

/* nccl-tests' wait: poll the stream, and fail rather than hang when NCCL reports an
 * asynchronous error (a peer that died). */
static int nccl_sync(bench_backend_t *self, char *err, size_t err_len) {
  nccl_state_t *st = self->state;
  for (;;) {
    cudaError_t rc = cudaStreamQuery(g.stream);
    if (rc == cudaSuccess) return 0;
    if (rc != cudaErrorNotReady) {
      snprintf(err, err_len, "cudaStreamQuery failed: %s", cudaGetErrorString(rc));
      return -1;
    }
    ncclResult_t async = ncclSuccess;
    NCCL_TRY(ncclCommGetAsyncError(st->comm, &async));
    if (async != ncclSuccess && async != ncclInProgress) {
      snprintf(err, err_len, "NCCL reported an asynchronous error: %s (%s)",
               ncclGetErrorString(async), ncclGetLastError(st->comm));
      ncclCommAbort(st->comm);
      st->comm = NULL;
      return -1;
    }
  }
}

static int nccl_supports(const bench_backend_t *self, const bench_case_t *c, int in_place) {
  (void)self;
  return placement_ok(c, in_place);
}

static void nccl_destroy(bench_backend_t *self) {
  nccl_state_t *st = self->state;
  if (!st) return;
  if (st->comm) {
    ncclResult_t rc = ncclCommDestroy(st->comm);
    if (rc != ncclSuccess)
      fprintf(stderr, "hvbench: rank %d: ncclCommDestroy: %s\n", st->rank, ncclGetErrorString(rc));
  }
  free(st);
  self->state = NULL;
}

int cuda_nccl_backend_create(bench_backend_t *be, MPI_Comm world, char *err, size_t err_len) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &nranks);
  /* Rank 0's result travels with the id, so a failure there stops every rank rather
   * than leaving them in ncclCommInitRank. */
  struct {
    int rc;
    ncclUniqueId id;
  } root;
  memset(&root, 0, sizeof(root));
  if (rank == 0) root.rc = (int)ncclGetUniqueId(&root.id);
  MPI_Bcast(&root, (int)sizeof(root), MPI_BYTE, 0, world);
  if (root.rc != (int)ncclSuccess) {
    snprintf(err, err_len, "ncclGetUniqueId failed on rank 0: %s",
             ncclGetErrorString((ncclResult_t)root.rc));
    return -1;
  }
  nccl_state_t *st = calloc(1, sizeof(*st));
  if (!st) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  st->rank = rank;
  ncclResult_t rc = ncclCommInitRank(&st->comm, nranks, root.id, rank);
  if (rc != ncclSuccess) {
    snprintf(err, err_len, "ncclCommInitRank(%d ranks, rank %d, device %d) failed: %s (%s); NCCL "
             "needs a GPU of its own for each rank of a node",
             nranks, rank, g.device, ncclGetErrorString(rc), ncclGetLastError(NULL));
    free(st);
    return -1;
  }
  int version = 0;
  ncclGetVersion(&version);
  snprintf(be->name, sizeof(be->name), "nccl");
  snprintf(be->detail, sizeof(be->detail),
           "raw NCCL %d.%d.%d calls over all ranks (nccl-tests style), same buffers and stream",
           version / 10000, version / 100 % 100, version % 100);
  be->is_peer = 1;
  be->algo = BENCH_ALGO_NCCL;
  be->state = st;
  be->run = nccl_run;
  be->supports = nccl_supports;
  be->destroy = nccl_destroy;
  be->sync = nccl_sync;
  return 0;
}

/* ---- the timed loop ---- */

int cuda_timed_loop(bench_backend_t *be, const bench_case_t *c, bench_buffers_t *b, int in_place,
                    int iters, double *times, double *total, char *err, size_t err_len) {
  *total = 0.0;
  const int need = (iters < EVENT_CHUNK ? iters : EVENT_CHUNK) + 1;
  for (; g.nevents < need; g.nevents++) CUDA_TRY(cudaEventCreate(&g.events[g.nevents]));
  for (int at = 0; at < iters; at += EVENT_CHUNK) {
    const int k = iters - at < EVENT_CHUNK ? iters - at : EVENT_CHUNK;
    const double t0 = MPI_Wtime();
    CUDA_TRY(cudaEventRecord(g.events[0], g.stream));
    for (int i = 0; i < k; i++) {
      if (be->run(be, c, b, in_place, err, err_len) != 0) return -1;
      CUDA_TRY(cudaEventRecord(g.events[i + 1], g.stream));
    }
    if (be->sync(be, err, err_len) != 0) return -1;
    *total += MPI_Wtime() - t0;
    /* Read outside the clock: only a run longer than one chunk has a second one. */
    for (int i = 0; i < k; i++) {
      float ms = 0.0f;
      CUDA_TRY(cudaEventElapsedTime(&ms, g.events[i], g.events[i + 1]));
      times[at + i] = (double)ms * 1e-3;
    }
  }
  return 0;
}
