/* cuda_stub.c: hv_cuda.h in a build without CUDA or NCCL: every call fails with
 * HV_ERR_UNSUPPORTED, saying so. */
#include "cuda_internal.h"
#include "hv_cuda.h"
#include "hv_internal.h"

hv_result_t hv__cuda_init(hv_comm_t *comm) {
  (void)comm;
  return HV_SUCCESS;
}

void hv__cuda_free(hv_comm_t *comm) { (void)comm; }

int hv_cuda_available(void) { return 0; }

static hv_result_t unsupported(hv_comm_t *comm, const char *what) {
  return hv__set_error(comm, HV_ERR_UNSUPPORTED, "%s: this build of hv has no GPU path (configure with the CUDA "
                       "toolkit and NCCL installed, HV_ENABLE_CUDA=ON)", what);
}

hv_result_t hv_allreduce_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                              hv_op_t op, void *stream) {
  (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)stream;
  return unsupported(comm, "hv_allreduce_cuda");
}

hv_result_t hv_allreduce_cuda_group(hv_comm_t *comm, const hv_cuda_tensor_t *tensors, int n, hv_dtype_t dtype,
                                    hv_op_t op, const hv_allreduce_opts_t *opts, void *stream) {
  (void)tensors, (void)n, (void)dtype, (void)op, (void)opts, (void)stream;
  return unsupported(comm, "hv_allreduce_cuda_group");
}

hv_result_t hv_allgather_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                              void *stream) {
  (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)stream;
  return unsupported(comm, "hv_allgather_cuda");
}

hv_result_t hv_broadcast_cuda(hv_comm_t *comm, void *buf, size_t count, hv_dtype_t dtype, int root, void *stream) {
  (void)buf, (void)count, (void)dtype, (void)root, (void)stream;
  return unsupported(comm, "hv_broadcast_cuda");
}

hv_result_t hv_reducescatter_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                                  hv_dtype_t dtype, hv_op_t op, void *stream) {
  (void)sendbuf, (void)recvbuf, (void)recvcount, (void)dtype, (void)op, (void)stream;
  return unsupported(comm, "hv_reducescatter_cuda");
}

hv_result_t hv_alltoall_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                             void *stream) {
  (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)stream;
  return unsupported(comm, "hv_alltoall_cuda");
}

hv_result_t hv_alltoallv_cuda(hv_comm_t *comm, const void *sendbuf, size_t sendcount, const int64_t *sendsplits,
                              hv_dtype_t dtype, void *recvbuf, size_t recvcount, const int64_t *recvsplits,
                              void *stream) {
  (void)sendbuf, (void)sendcount, (void)sendsplits, (void)dtype, (void)recvbuf, (void)recvcount, (void)recvsplits,
      (void)stream;
  return unsupported(comm, "hv_alltoallv_cuda");
}

hv_result_t hv_reduce_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                           hv_op_t op, int root, void *stream) {
  (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)root, (void)stream;
  return unsupported(comm, "hv_reduce_cuda");
}

hv_result_t hv_gather_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                           int root, void *stream) {
  (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)root, (void)stream;
  return unsupported(comm, "hv_gather_cuda");
}

hv_result_t hv_gatherv_cuda(hv_comm_t *comm, const void *sendbuf, size_t sendcount, hv_dtype_t dtype, void *recvbuf,
                            const int64_t *recvcounts, int root, void *stream) {
  (void)sendbuf, (void)sendcount, (void)dtype, (void)recvbuf, (void)recvcounts, (void)root, (void)stream;
  return unsupported(comm, "hv_gatherv_cuda");
}

hv_result_t hv_scatter_cuda(hv_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                            int root, void *stream) {
  (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)root, (void)stream;
  return unsupported(comm, "hv_scatter_cuda");
}

hv_result_t hv_scatterv_cuda(hv_comm_t *comm, const void *sendbuf, const int64_t *sendcounts, hv_dtype_t dtype,
                             void *recvbuf, size_t recvcount, int root, void *stream) {
  (void)sendbuf, (void)sendcounts, (void)dtype, (void)recvbuf, (void)recvcount, (void)root, (void)stream;
  return unsupported(comm, "hv_scatterv_cuda");
}

hv_result_t hv_cuda_wait(hv_comm_t *comm, void *stream) {
  (void)stream;
  return unsupported(comm, "hv_cuda_wait");
}
