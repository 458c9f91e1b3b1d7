/* broadcast.c: broadcast of a byte buffer from a root: hierarchical across nodes
 * when wanted (hier_other.c), else MPI's own broadcast, in pieces an int can count. */
#include "algo.h"

hv_result_t hv__broadcast(hv__algo_ctx_t *ctx, void *buf, size_t bytes, int root) {
  if (hv__hier_other_wanted(ctx, bytes)) return hv__broadcast_hier(ctx, buf, bytes, root);
  if (ctx->mpi == MPI_COMM_NULL)
    return hv__fail(&ctx->host->errors, HV_ERR_UNSUPPORTED, "broadcast needs an MPI communicator");
  const size_t piece = HV__TRANSPORT_MAX_MESSAGE;
  for (size_t done = 0; done < bytes; done += piece) {
    size_t len = bytes - done < piece ? bytes - done : piece;
    MPI_Request req;
    HV_MPI_CHECK(&ctx->host->errors, MPI_Ibcast((char *)buf + done, (int)len, MPI_BYTE, root, ctx->mpi, &req));
    HV_CHECK(hv__wait_mpi(ctx->host, 1, &req, "broadcast", 0));
  }
  return HV_SUCCESS;
}
