/* hv_cuda.h: collectives on CUDA device buffers, with the semantics of NCCL's calls:
 * every rank calls the same collectives in the same order on the communicator; the
 * caller's CUDA stream (a cudaStream_t, passed as void * so that this header needs no
 * CUDA headers) orders the work, and a call returns once the work is ordered after
 * what the stream already holds. Buffers are device pointers of the current device
 * (cudaSetDevice before hv_init, or CUDA_VISIBLE_DEVICES as hvrun sets it).
 *
 * Within a node the ranks talk through NCCL (one communicator per node, created at the
 * first call from a unique id broadcast over MPI). Across nodes MPI carries the data:
 * directly from device memory when the MPI library is CUDA-aware (asked at run time),
 * else through pinned host staging slots, pipelined in chunks (HV_CUDA_STAGING_BYTES,
 * default 4 MiB a slot). Allreduce on several nodes is hierarchical: NCCL
 * reduce-scatter within the node, MPI allreduce of each rank's segment among the ranks
 * with the same local rank on every node, NCCL allgather; one node: one NCCL allreduce.
 * A call that must wait for the GPU before MPI can start (several nodes) returns after
 * the cross-node phase, with the last NCCL phase enqueued.
 *
 * Errors: arguments are checked, and count, dtype and op are compared across ranks
 * before anything is enqueued (HV_ERR_MISMATCH names both values). hv_cuda_wait()
 * waits for a stream with the communicator's HV_TIMEOUT and checks NCCL's asynchronous
 * errors (ncclCommGetAsyncError): a failed or stuck NCCL communicator is aborted and
 * the call fails instead of hanging; every later call on it fails too.
 *
 * Built without CUDA or NCCL, every call fails with HV_ERR_UNSUPPORTED; so does a
 * machine without a GPU (hv_cuda_available() says which). */
#ifndef HV_CUDA_H
#define HV_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "hv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this build has the GPU path and a CUDA device is visible, else 0. */
HV_API int hv_cuda_available(void);

/* recvbuf = op over ranks of sendbuf (count elements each); sendbuf == recvbuf is in
 * place. HV_AVERAGE for float dtypes. */
HV_API hv_result_t hv_allreduce_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                              hv_op_t op, void *stream);
/* One tensor of a group (hv.h's hv_tensor_t, here device pointers): sendbuf may be
 * NULL or equal recvbuf (in place). */
typedef hv_tensor_t hv_cuda_tensor_t;

/* Allreduce of n tensors of one dtype as one fused buffer (a DDP bucket): one kernel
 * packs them all (prescale and, for float32, fp16/bf16 compression fused in), one
 * allreduce as hv_allreduce_cuda, one kernel unpacks (postscale, and 1/size for
 * AVERAGE), on a communication stream of the communicator ordered after the caller's
 * stream by an event, with the caller's stream ordered after it. opts as for
 * hv_allreduce (NULL: none; compression DEFAULT follows HV_COMPRESSION). Float dtypes;
 * integers with no scaling; float64 without averaging or scaling. */
HV_API hv_result_t hv_allreduce_cuda_group(hv_comm_t *comm, const hv_cuda_tensor_t *tensors, int n, hv_dtype_t dtype,
                                    hv_op_t op, const hv_allreduce_opts_t *opts, void *stream);

/* recvbuf (count * size elements) = every rank's sendbuf (count elements) in rank order. */
HV_API hv_result_t hv_allgather_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                              void *stream);
/* buf (count elements) = root's buf on every rank. */
HV_API hv_result_t hv_broadcast_cuda(hv_comm_t *comm, void *buf, size_t count, hv_dtype_t dtype, int root, void *stream);
/* sendbuf holds size * recvcount elements; rank r receives block r of their reduction
 * over ranks (HV_AVERAGE for float dtypes). Out of place: the buffers must not overlap. */
HV_API hv_result_t hv_reducescatter_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                                  hv_dtype_t dtype, hv_op_t op, void *stream);
/* Block j (count elements) of my sendbuf goes to rank j, arriving as block (my rank)
 * of its recvbuf; both hold size * count elements and must not overlap. */
HV_API hv_result_t hv_alltoall_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                             void *stream);

/* The collectives of issue #24 on device buffers, within one node (NCCL): across
 * nodes they fail with HV_ERR_UNSUPPORTED for now, on every rank alike. Counts, roots
 * and splits as in hv.h's forms (the split and count arrays are host memory); every
 * rank checks them together before anything is enqueued, so a negative count,
 * splits that do not sum, or splits that disagree between two ranks fail every rank
 * with the same message naming both (HV_ERR_INVALID_ARGUMENT / HV_ERR_MISMATCH), as
 * does a root out of range. hv_reduce_cuda is ncclReduce (HV_AVERAGE: ncclAvg, float
 * dtypes); the others are one group of ncclSend/ncclRecv, empty blocks skipped. */
HV_API hv_result_t hv_alltoallv_cuda(hv_comm_t *comm, const void *sendbuf, size_t sendcount, const int64_t *sendsplits,
                                     hv_dtype_t dtype, void *recvbuf, size_t recvcount, const int64_t *recvsplits,
                                     void *stream);
HV_API hv_result_t hv_reduce_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                                  hv_op_t op, int root, void *stream);
HV_API hv_result_t hv_gather_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                                  int root, void *stream);
HV_API hv_result_t hv_gatherv_cuda(hv_comm_t *comm, const void *sendbuf, size_t sendcount, hv_dtype_t dtype,
                                   void *recvbuf, const int64_t *recvcounts, int root, void *stream);
HV_API hv_result_t hv_scatter_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                                   int root, void *stream);
HV_API hv_result_t hv_scatterv_cuda(hv_comm_t *comm, const void *sendbuf, const int64_t *sendcounts, hv_dtype_t dtype,
                                    void *recvbuf, size_t recvcount, int root, void *stream);

/* Waits until stream has drained, bounded by HV_TIMEOUT, checking the communicator's
 * NCCL state meanwhile (see above). */
HV_API hv_result_t hv_cuda_wait(hv_comm_t *comm, void *stream);

#ifdef __cplusplus
}
#endif
#endif
