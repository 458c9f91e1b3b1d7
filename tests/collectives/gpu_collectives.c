/* gpu_collectives.c: hv_cuda.h on device buffers under mpirun, with exact values
 * (small integers, so every reduction order gives the same result): allreduce of
 * every dtype with sum, max and average (float dtypes), in and out of place, for counts
 * that do and do not divide by the ranks of a node; allgather; broadcast from the
 * first and the last rank; a count that differs on one rank fails on every rank with
 * HV_ERR_MISMATCH and leaves the communicator usable, and so does a group of the same
 * total split into other tensor sizes on one rank; a fused group of tensors with
 * compression and scaling (hv_allreduce_cuda_group); reduce-scatter (sum, max,
 * average) and all-to-all of several dtypes and counts; alltoallv, reduce, gatherv and
 * scatter (issue #24). Device buffers are poisoned
 * before each call, so elements left unwritten show. Rank i uses device i mod the
 * device count; with more ranks on a node than devices (NCCL needs one each), or no
 * GPU or driver at all (gpu_present.h), the test reports itself skipped (exit 77); a
 * CUDA error once a GPU was found, or hv_cuda_available() saying no then, fails it.
 * Run one node (NCCL alone), and emulated nodes (HV_RANKS_PER_NODE: staged MPI
 * between them, hierarchical with several ranks per node). */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "hv_cuda.h"
#include "hv_mpi.h"
#include "gpu_present.h"
#include "test_util.h"

#define SKIP 77

static int R, N;

static int cuda_ok(cudaError_t rc, const char *what) {
  CHECK(rc == cudaSuccess, "%s: %s", what, cudaGetErrorString(rc));
  return rc == cudaSuccess;
}

static void test_allreduce(hv_comm_t *comm, cudaStream_t stream, size_t count, hv_dtype_t dt, hv_op_t op, int inplace) {
  const size_t es = hv_dtype_size(dt), bytes = count * es + es;
  char *host = malloc(bytes), *dsend = NULL, *drecv = NULL;
  for (size_t i = 0; i < count; i++) elem_set(host, dt, i, test_input(op, R, i, N));
  if (!cuda_ok(cudaMalloc((void **)&dsend, bytes), "cudaMalloc") || !cuda_ok(cudaMalloc((void **)&drecv, bytes), "cudaMalloc"))
    return;
  cuda_ok(cudaMemcpy(dsend, host, count * es, cudaMemcpyHostToDevice), "copy in");
  cuda_ok(cudaMemset(drecv, 0x7b, bytes), "poison");
  if (inplace) cuda_ok(cudaMemcpy(drecv, dsend, count * es, cudaMemcpyDeviceToDevice), "copy in place");
  CHECK_RC(hv_allreduce_cuda(comm, inplace ? drecv : dsend, drecv, count, dt, op, stream));
  CHECK_RC(hv_cuda_wait(comm, stream));
  cuda_ok(cudaMemcpy(host, drecv, count * es, cudaMemcpyDeviceToHost), "copy out");
  CHECK_ELEMENTS(host, dt, count, test_expected(op, i, N), "allreduce %s %s count %zu %s rank %d", hv_dtype_name(dt),
                 hv_op_name(op), count, inplace ? "in place" : "out of place", R);
  cudaFree(dsend);
  cudaFree(drecv);
  free(host);
}

static void test_allgather_broadcast(hv_comm_t *comm, cudaStream_t stream, size_t count) {
  const size_t bytes = count * sizeof(float) + 4;
  float *host = malloc(bytes * (size_t)N), *dsend = NULL, *drecv = NULL;
  for (size_t i = 0; i < count; i++) host[i] = (float)(R * 1000 + (int)(i % 997));
  if (!cuda_ok(cudaMalloc((void **)&dsend, bytes), "cudaMalloc") ||
      !cuda_ok(cudaMalloc((void **)&drecv, bytes * (size_t)N), "cudaMalloc"))
    return;
  cuda_ok(cudaMemcpy(dsend, host, count * sizeof(float), cudaMemcpyHostToDevice), "copy in");
  cuda_ok(cudaMemset(drecv, 0x7b, bytes * (size_t)N), "poison");
  CHECK_RC(hv_allgather_cuda(comm, dsend, drecv, count, HV_FLOAT32, stream));
  CHECK_RC(hv_cuda_wait(comm, stream));
  cuda_ok(cudaMemcpy(host, drecv, count * sizeof(float) * (size_t)N, cudaMemcpyDeviceToHost), "copy out");
  CHECK_ELEMENTS(host, HV_FLOAT32, count * (size_t)N, (double)((int)(i / count) * 1000 + (int)(i % count % 997)),
                 "allgather count %zu rank %d", count, R);
  const int roots[2] = {0, N - 1};
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < count; i++) host[i] = R == roots[k] ? (float)(i % 1013) + 0.5f : -1.0f;
    cuda_ok(cudaMemcpy(dsend, host, count * sizeof(float), cudaMemcpyHostToDevice), "copy in");
    CHECK_RC(hv_broadcast_cuda(comm, dsend, count, HV_FLOAT32, roots[k], stream));
    CHECK_RC(hv_cuda_wait(comm, stream));
    cuda_ok(cudaMemcpy(host, dsend, count * sizeof(float), cudaMemcpyDeviceToHost), "copy out");
    CHECK_ELEMENTS(host, HV_FLOAT32, count, (double)(i % 1013) + 0.5, "broadcast root %d count %zu rank %d",
                   roots[k], count, R);
  }
  cudaFree(dsend);
  cudaFree(drecv);
  free(host);
}

/* Rank R's send block j element i is input(R, j * count + i): rank R then holds the
 * reduction of elements R * count .. R * count + count - 1. */
static void test_reducescatter(hv_comm_t *comm, cudaStream_t stream, size_t count, hv_dtype_t dt, hv_op_t op) {
  const size_t es = hv_dtype_size(dt), total = count * (size_t)N;
  char *host = malloc(total * es + es), *dsend = NULL, *drecv = NULL;
  for (size_t i = 0; i < total; i++) elem_set(host, dt, i, test_input(op, R, i, N));
  if (!cuda_ok(cudaMalloc((void **)&dsend, total * es + es), "cudaMalloc") ||
      !cuda_ok(cudaMalloc((void **)&drecv, count * es + es), "cudaMalloc"))
    return;
  cuda_ok(cudaMemcpy(dsend, host, total * es, cudaMemcpyHostToDevice), "copy in");
  cuda_ok(cudaMemset(drecv, 0x7b, count * es + es), "poison");
  CHECK_RC(hv_reducescatter_cuda(comm, dsend, drecv, count, dt, op, stream));
  CHECK_RC(hv_cuda_wait(comm, stream));
  cuda_ok(cudaMemcpy(host, drecv, count * es + es, cudaMemcpyDeviceToHost), "copy out");
  CHECK_ELEMENTS(host, dt, count, test_expected(op, (size_t)R * count + i, N), "reducescatter %s %s count %zu rank %d",
                 hv_dtype_name(dt), hv_op_name(op), count, R);
  unsigned char guard[16];
  memset(guard, 0x7b, sizeof guard);
  CHECK(memcmp(host + count * es, guard, es) == 0, "reducescatter wrote past its %zu elements", count);
  cudaFree(dsend);
  cudaFree(drecv);
  free(host);
}

/* Block j of rank R's send buffer holds R * 1000 + j * 10 + i % 7 at element i: block j
 * of rank R's receive buffer must hold j * 1000 + R * 10 + i % 7. */
static void test_alltoall(hv_comm_t *comm, cudaStream_t stream, size_t count, hv_dtype_t dt) {
  const size_t es = hv_dtype_size(dt), total = count * (size_t)N;
  char *host = malloc(total * es + es), *dsend = NULL, *drecv = NULL;
  const int small = dt == HV_UINT8 || dt == HV_INT8; /* keep values inside 0..127 */
  for (size_t j = 0; j < (size_t)N; j++)
    for (size_t i = 0; i < count; i++)
      elem_set(host, dt, j * count + i, small ? (double)(R * 16 + (int)j * 4 + (int)(i % 3))
                                              : (double)(R * 1000 + (int)j * 10 + (int)(i % 7)));
  if (!cuda_ok(cudaMalloc((void **)&dsend, total * es + es), "cudaMalloc") ||
      !cuda_ok(cudaMalloc((void **)&drecv, total * es + es), "cudaMalloc"))
    return;
  cuda_ok(cudaMemcpy(dsend, host, total * es, cudaMemcpyHostToDevice), "copy in");
  cuda_ok(cudaMemset(drecv, 0x7b, total * es + es), "poison");
  CHECK_RC(hv_alltoall_cuda(comm, dsend, drecv, count, dt, stream));
  CHECK_RC(hv_cuda_wait(comm, stream));
  cuda_ok(cudaMemcpy(host, drecv, total * es, cudaMemcpyDeviceToHost), "copy out");
  CHECK_ELEMENTS(host, dt, total,
                 small ? (double)((int)(i / count) * 16 + R * 4 + (int)(i % count % 3))
                       : (double)((int)(i / count) * 1000 + R * 10 + (int)(i % count % 7)),
                 "alltoall %s count %zu rank %d", hv_dtype_name(dt), count, R);
  cudaFree(dsend);
  cudaFree(drecv);
  free(host);
}

/* Issue #24 on device buffers, one node (across nodes: HV_ERR_UNSUPPORTED on every
 * rank): alltoallv with uneven splits (zeros among them), reduce and gatherv/scatter
 * to and from every root, and splits that disagree failing every rank alike. */
static void test_issue24(hv_comm_t *comm, cudaStream_t stream) {
  int cross = 1;
  hv_comm_cross_size(comm, &cross);
  enum { C = 64 };
  int64_t ssp[64], rsp[64];
  size_t scount = 0, rcount = 0;
  if (N > 64) return;
  for (int j = 0; j < N; j++) {
    ssp[j] = (R + 2 * j) % 4, rsp[j] = (j + 2 * R) % 4;
    scount += (size_t)ssp[j], rcount += (size_t)rsp[j];
  }
  int32_t *dsend = NULL, *drecv = NULL, host[64 * C];
  if (!cuda_ok(cudaMalloc((void **)&dsend, sizeof host), "cudaMalloc") ||
      !cuda_ok(cudaMalloc((void **)&drecv, sizeof host), "cudaMalloc"))
    return;
  size_t at = 0;
  for (int j = 0; j < N; j++)
    for (int64_t k = 0; k < ssp[j]; k++) host[at++] = R * 1000 + j * 100 + (int32_t)k;
  cuda_ok(cudaMemcpy(dsend, host, sizeof host, cudaMemcpyHostToDevice), "copy in");
  cuda_ok(cudaMemset(drecv, 0x7b, sizeof host), "poison");
  hv_result_t rc = hv_alltoallv_cuda(comm, dsend, scount, ssp, HV_INT32, drecv, rcount, rsp, stream);
  if (cross > 1) {
    CHECK(rc == HV_ERR_UNSUPPORTED, "alltoallv across nodes: %s", hv_strerror(rc));
  } else {
    CHECK_RC(rc);
    CHECK_RC(hv_cuda_wait(comm, stream));
    cuda_ok(cudaMemcpy(host, drecv, sizeof host, cudaMemcpyDeviceToHost), "copy out");
    at = 0;
    for (int j = 0; j < N; j++)
      for (int64_t k = 0; k < rsp[j]; k++, at++)
        CHECK(host[at] == j * 1000 + R * 100 + k, "alltoallv_cuda from %d [%lld]: %d", j, (long long)k, host[at]);
    for (int root = 0; root < N; root++) {
      for (int k = 0; k < C; k++) host[k] = R * C + k;
      cuda_ok(cudaMemcpy(dsend, host, C * sizeof(int32_t), cudaMemcpyHostToDevice), "copy in");
      CHECK_RC(hv_reduce_cuda(comm, dsend, drecv, C, HV_INT32, HV_SUM, root, stream));
      CHECK_RC(hv_cuda_wait(comm, stream));
      if (R == root) {
        cuda_ok(cudaMemcpy(host, drecv, C * sizeof(int32_t), cudaMemcpyDeviceToHost), "copy out");
        for (int k = 0; k < C; k++)
          CHECK(host[k] == C * N * (N - 1) / 2 + N * k, "reduce_cuda root %d [%d]: %d", root, k, host[k]);
      }
      /* gatherv: rank q sends q % 3 elements q * 10 + k. */
      int64_t counts[64];
      for (int q = 0; q < N; q++) counts[q] = q % 3;
      for (int k = 0; k < 3; k++) host[k] = R * 10 + k;
      cuda_ok(cudaMemcpy(dsend, host, 3 * sizeof(int32_t), cudaMemcpyHostToDevice), "copy in");
      CHECK_RC(hv_gatherv_cuda(comm, dsend, (size_t)(R % 3), HV_INT32, drecv, counts, root, stream));
      CHECK_RC(hv_cuda_wait(comm, stream));
      if (R == root) {
        cuda_ok(cudaMemcpy(host, drecv, sizeof host, cudaMemcpyDeviceToHost), "copy out");
        at = 0;
        for (int q = 0; q < N; q++)
          for (int k = 0; k < q % 3; k++, at++) CHECK(host[at] == q * 10 + k, "gatherv_cuda root %d", root);
      }
      /* scatter: block q of the root's buffer (4 elements) to rank q. */
      for (int k = 0; k < 4 * N; k++) host[k] = root * 1000 + k;
      cuda_ok(cudaMemcpy(dsend, host, 4 * (size_t)N * sizeof(int32_t), cudaMemcpyHostToDevice), "copy in");
      CHECK_RC(hv_scatter_cuda(comm, dsend, drecv, 4, HV_INT32, root, stream));
      CHECK_RC(hv_cuda_wait(comm, stream));
      cuda_ok(cudaMemcpy(host, drecv, 4 * sizeof(int32_t), cudaMemcpyDeviceToHost), "copy out");
      for (int k = 0; k < 4; k++) CHECK(host[k] == root * 1000 + R * 4 + k, "scatter_cuda root %d [%d]", root, k);
    }
  }
  /* Splits that disagree (the last rank expects one more from rank 0): every rank fails. */
  if (N > 1) {
    if (R == N - 1) rsp[0]++, rcount++;
    rc = hv_alltoallv_cuda(comm, dsend, scount, ssp, HV_INT32, drecv, rcount, rsp, stream);
    CHECK(rc == HV_ERR_MISMATCH && strstr(hv_comm_last_error(comm), "disagree"), "disagreeing splits: %s (%s)",
          hv_strerror(rc), hv_comm_last_error(comm));
  }
  cudaFree(dsend);
  cudaFree(drecv);
}

/* A group of tensors of several sizes (one empty), half in place, fused into one
 * allreduce: float32 with fp16 and bf16 compression (small integers are exact in
 * both), prescale 2 and postscale 0.25; float16 average; int32 sum. */
static void test_group(hv_comm_t *comm, cudaStream_t stream, hv_dtype_t dt, hv_op_t op, hv_compression_t comp,
                       double pre, double post) {
  enum { T = 5 };
  const size_t counts[T] = {1000, 0, 1, 70001, 7};
  const size_t es = hv_dtype_size(dt);
  hv_cuda_tensor_t t[T];
  char *host[T];
  for (int k = 0; k < T; k++) {
    const size_t bytes = counts[k] * es + es;
    host[k] = malloc(bytes);
    for (size_t i = 0; i < counts[k]; i++) elem_set(host[k], dt, i, test_input(op, R, i + (size_t)k, N));
    void *send = NULL, *recv = NULL;
    cuda_ok(cudaMalloc(&send, bytes), "cudaMalloc");
    cuda_ok(cudaMalloc(&recv, bytes), "cudaMalloc");
    cuda_ok(cudaMemcpy(send, host[k], counts[k] * es, cudaMemcpyHostToDevice), "copy in");
    cuda_ok(cudaMemset(recv, 0x7b, bytes), "poison");
    if (k % 2) cuda_ok(cudaMemcpy(recv, send, counts[k] * es, cudaMemcpyDeviceToDevice), "copy in place");
    t[k] = (hv_cuda_tensor_t){k % 2 ? NULL : send, recv, counts[k]};
    if (k % 2) cudaFree(send);
  }
  hv_allreduce_opts_t opts = {pre, post, comp};
  CHECK_RC(hv_allreduce_cuda_group(comm, t, T, dt, op, &opts, stream));
  CHECK_RC(hv_cuda_wait(comm, stream));
  for (int k = 0; k < T; k++) {
    cuda_ok(cudaMemcpy(host[k], t[k].recvbuf, counts[k] * es, cudaMemcpyDeviceToHost), "copy out");
    CHECK_ELEMENTS(host[k], dt, counts[k], test_expected(op, i + (size_t)k, N) * pre * post,
                   "group %s %s compression %d tensor %d rank %d", hv_dtype_name(dt), hv_op_name(op), (int)comp, k, R);
    if (t[k].sendbuf) cudaFree((void *)t[k].sendbuf);
    cudaFree(t[k].recvbuf);
    free(host[k]);
  }
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  MPI_Comm_size(MPI_COMM_WORLD, &N);
  /* Skip alike on every rank: no GPU, or fewer devices than node ranks; fail alike
   * when any rank found a driver whose CUDA fails, or a GPU that hv cannot use (this
   * test is built only with the GPU path, so hv_cuda_available() must agree). */
  char why[256];
  int devices = 0, present = test_gpu_present(why, sizeof why);
  if (present > 0 && !hv_cuda_available()) {
    snprintf(why, sizeof why, "a GPU is present but hv_cuda_available() says no");
    present = -1;
  }
  if (present > 0 && !cuda_ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount")) present = -1;
  int broken = present < 0, any_broken = 0;
  MPI_Allreduce(&broken, &any_broken, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_broken) {
    if (broken) fprintf(stderr, "gpu_collectives: rank %d: FAILED: %s\n", R, why);
    MPI_Finalize();
    return 1;
  }
  hv_comm_t *comm = NULL;
  int local = 1;
  if (devices > 0) {
    MPI_Comm node;
    const char *per = getenv("HV_RANKS_PER_NODE");
    if (per && atoi(per) > 0) MPI_Comm_split(MPI_COMM_WORLD, R / atoi(per), R, &node);
    else MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, R, MPI_INFO_NULL, &node);
    int lrank;
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    cuda_ok(cudaSetDevice(lrank % devices), "cudaSetDevice");
  }
  int skip = devices == 0 || local > devices, any_skip = 0;
  MPI_Allreduce(&skip, &any_skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_skip) {
    if (R == 0)
      printf("gpu_collectives: skipped (%s)\n", devices == 0 ? why : "fewer GPUs than ranks on a node");
    MPI_Finalize();
    return check_failures ? 1 : SKIP;
  }
  CHECK_RC(hv_init_from_mpi(MPI_COMM_WORLD, &comm));
  test_comm = comm;
  cudaStream_t stream;
  cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
  const size_t counts[] = {0, 1, 7, 1000, (1u << 20) + 3};
  const hv_dtype_t dtypes[] = {HV_FLOAT32, HV_FLOAT16, HV_BFLOAT16, HV_FLOAT64, HV_INT32, HV_INT64, HV_UINT8};
  const hv_op_t ops[] = {HV_SUM, HV_MAX, HV_AVERAGE};
  for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
      for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        if (ops[o] == HV_AVERAGE && (dtypes[d] == HV_INT32 || dtypes[d] == HV_INT64 || dtypes[d] == HV_UINT8)) continue;
        for (int inplace = 0; inplace < 2; inplace++) test_allreduce(comm, stream, counts[c], dtypes[d], ops[o], inplace);
      }
  test_group(comm, stream, HV_FLOAT32, HV_SUM, HV_COMPRESSION_NONE, 2.0, 0.25);
  test_group(comm, stream, HV_FLOAT32, HV_SUM, HV_COMPRESSION_FP16, 2.0, 0.25);
  test_group(comm, stream, HV_FLOAT32, HV_MAX, HV_COMPRESSION_BF16, 1.0, 1.0);
  test_group(comm, stream, HV_FLOAT16, HV_AVERAGE, HV_COMPRESSION_NONE, 1.0, 1.0);
  test_group(comm, stream, HV_INT32, HV_SUM, HV_COMPRESSION_NONE, 1.0, 1.0);
  {
    const size_t rs_counts[] = {0, 1, 1000, (1u << 18) + 3};
    const hv_dtype_t rs_dtypes[] = {HV_FLOAT32, HV_FLOAT16, HV_INT32};
    const hv_op_t rs_ops[] = {HV_SUM, HV_MAX, HV_AVERAGE};
    for (size_t k = 0; k < sizeof rs_counts / sizeof *rs_counts; k++)
      for (size_t d = 0; d < sizeof rs_dtypes / sizeof *rs_dtypes; d++)
        for (size_t o = 0; o < sizeof rs_ops / sizeof *rs_ops; o++)
          if (!(rs_ops[o] == HV_AVERAGE && rs_dtypes[d] == HV_INT32))
            test_reducescatter(comm, stream, rs_counts[k], rs_dtypes[d], rs_ops[o]);
    const hv_dtype_t a2a_dtypes[] = {HV_FLOAT32, HV_INT64, HV_UINT8};
    for (size_t k = 0; k < sizeof rs_counts / sizeof *rs_counts; k++)
      for (size_t d = 0; d < sizeof a2a_dtypes / sizeof *a2a_dtypes; d++)
        test_alltoall(comm, stream, rs_counts[k], a2a_dtypes[d]);
  }
  test_issue24(comm, stream);
  test_allgather_broadcast(comm, stream, 1000);
  test_allgather_broadcast(comm, stream, (3u << 20) + 1); /* several staging slots */
  /* A mismatch fails everywhere, before anything reaches NCCL; the next call works. */
  float *d = NULL;
  cuda_ok(cudaMalloc((void **)&d, 64 * sizeof(float)), "cudaMalloc");
  hv_result_t rc = hv_allreduce_cuda(comm, d, d, R == N - 1 ? 32 : 64, HV_FLOAT32, HV_SUM, stream);
  CHECK(N == 1 || rc == HV_ERR_MISMATCH, "mismatched counts gave %s", hv_strerror(rc));
  /* A group of the same total (64) and number of tensors, split differently on the last
   * rank ({48, 16} against {16, 48}): without the hash of the list of counts every
   * rank would reduce misaligned elements and succeed; it must fail on every rank
   * (issue 27), as hv_grouped_allreduce does on the CPU. */
  {
    const int last = R == N - 1;
    hv_cuda_tensor_t split[2] = {{d, d, last ? 48 : 16}, {d + (last ? 48 : 16), d + (last ? 48 : 16), last ? 16 : 48}};
    rc = hv_allreduce_cuda_group(comm, split, 2, HV_FLOAT32, HV_SUM, NULL, stream);
    CHECK(N == 1 || (rc == HV_ERR_MISMATCH && strstr(hv_comm_last_error(comm), "list of counts")),
          "a group of the same total split differently gave %s: %s", hv_strerror(rc), hv_comm_last_error(comm));
    hv_cuda_tensor_t same[2] = {{d, d, 16}, {d + 16, d + 16, 48}};
    CHECK_RC(hv_allreduce_cuda_group(comm, same, 2, HV_FLOAT32, HV_SUM, NULL, stream));
    cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize after the group");
  }
  cudaFree(d);
  test_allreduce(comm, stream, 1000, HV_FLOAT32, HV_SUM, 0);
  cudaStreamDestroy(stream);
  CHECK_RC(hv_shutdown(comm));
  int total = 0;
  MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (R == 0) printf("gpu_collectives on %d ranks: %d checks on rank 0, %d failures on all ranks\n", N, check_count, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
