/* reduce_root.c: reduce to one root rank with the MPI library's own MPI_Ireduce (its
 * binomial and pipelined trees are tuned per message size and topology; hv's value
 * here is the naming and negotiation, not another tree). float16 and bfloat16 use
 * the user-defined operations of allreduce_mpi.c. Large buffers go in pieces so no
 * int count overflows. AVERAGE reduces as SUM: the caller divides on root. */
#include <limits.h>

#include "algo.h"

hv_result_t hv__reduce_root(hv__algo_ctx_t *ctx, const void *sendbuf, void *recvbuf, size_t count, hv_dtype_t dtype,
                            hv_op_t op, int root) {
  MPI_Datatype type = hv__mpi_datatype(dtype);
  MPI_Op mop = hv__mpi_op(dtype, op);
  size_t es = hv_dtype_size(dtype);
  const int is_root = ctx->transport.rank == root;
  const int in_place = is_root && (sendbuf == NULL || sendbuf == recvbuf);
  const size_t piece = (size_t)INT_MAX / 2;
  for (size_t done = 0; done < count; done += piece) {
    size_t len = count - done < piece ? count - done : piece;
    const void *in = in_place ? MPI_IN_PLACE : (const char *)sendbuf + done * es;
    void *out = is_root ? (char *)recvbuf + done * es : NULL;
#if HV_SIMULATED
    HV_MPI_CHECK(&ctx->host->errors, MPI_Reduce(in, out, (int)len, type, mop, root, ctx->mpi));
#else
    MPI_Request req;
    HV_MPI_CHECK(&ctx->host->errors, MPI_Ireduce(in, out, (int)len, type, mop, root, ctx->mpi, &req));
    HV_CHECK(hv__wait_mpi(ctx->host, 1, &req, "MPI_Ireduce", 0));
#endif
  }
  return HV_SUCCESS;
}
