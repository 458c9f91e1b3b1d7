/* hier_other.c: the hierarchical split of allgather(v) and broadcast, for jobs spanning
 * nodes (the allreduce's is allreduce_hier*.c), and the rule that picks them.
 *
 * Broadcast from root (node a, local rank i):
 *   1. the ranks of local rank i on every node: broadcast from root (cross);
 *   2. every node: broadcast from its rank of local rank i (local).
 *   Each node receives the buffer once over the network.
 * Allgather(v), rank g's block at off[g] of buf:
 *   1. the ranks of my local rank on every node gather their blocks (cross);
 *   2. every node: each local rank sends the blocks it now holds to the node's other
 *      ranks, one derived datatype (the blocks' positions in buf) per peer (local).
 *   Each node receives every other node's blocks once over the network; a flat ring
 *   also carries blocks back into the node they came from (a 2 x 2 ring brings 3
 *   blocks into each node, this 2).
 * Both use the MPI library's own collectives and point-to-point on the local and cross
 * communicators (it moves bytes within a node and across nodes well; what it does not
 * know is the node structure). Every wait is bounded by HV_TIMEOUT (mpi_wait.c).
 * Displacements are ints in MPI, so buffers of 2 GiB and more take the flat path. */
#include <limits.h>
#include <stdlib.h>

#include "algo.h"

int hv__hier_other_wanted(const hv__algo_ctx_t *ctx, size_t total_bytes) {
  /* They call MPI's collectives: not over an in-process transport. */
  if (!ctx->local || !ctx->cross || !ctx->uniform_nodes || total_bytes >= INT_MAX || ctx->mpi == MPI_COMM_NULL)
    return 0;
  if (ctx->host->hierarchical == 0) return 0;
  const int several = ctx->cross->transport.size > 1 && ctx->local->transport.size > 1;
  return ctx->host->hierarchical == 1 ? ctx->cross->transport.size > 1 : several;
}

/* A non-blocking MPI call's request, waited for within HV_TIMEOUT. */
static hv_result_t wait_one(const hv__algo_host_t *host, MPI_Request *req, const char *what) {
  return hv__wait_mpi(host, 1, req, what, 0);
}

/* The global ranks of every local rank's cross group (ctx->local->groups), found once
 * per communicator: the node layout does not change. Collective over the job. */
static hv_result_t node_groups(hv__algo_ctx_t *ctx, const int **out) {
  hv__algo_ctx_t *local = ctx->local, *cross = ctx->cross;
  const int l = local->transport.size, nodes = cross->transport.size;
  if (!local->groups) {
    int *groups = malloc(sizeof(int) * (size_t)nodes * (size_t)(l + 1));
    if (!groups) return hv__fail(&ctx->host->errors, HV_ERR_NO_MEMORY, "hierarchical collectives: rank tables");
    int *mine = groups + (size_t)nodes * (size_t)l; /* my group, then scratch */
    MPI_Group all = MPI_GROUP_NULL, part = MPI_GROUP_NULL;
    int rc = MPI_Comm_group(ctx->mpi, &all);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_group(cross->mpi, &part);
    for (int i = 0; i < nodes; i++) groups[i] = i;
    if (rc == MPI_SUCCESS) rc = MPI_Group_translate_ranks(part, nodes, groups, all, mine);
    if (part != MPI_GROUP_NULL) MPI_Group_free(&part);
    if (all != MPI_GROUP_NULL) MPI_Group_free(&all);
    MPI_Request req;
    if (rc == MPI_SUCCESS)
      rc = MPI_Iallgather(mine, nodes, MPI_INT, groups, nodes, MPI_INT, local->mpi, &req);
    if (rc != MPI_SUCCESS) free(groups);
    HV_MPI_CHECK(&ctx->host->errors, rc);
    const hv_result_t waited = wait_one(ctx->host, &req, "hierarchical collectives (the node's groups)");
    if (waited != HV_SUCCESS) return waited; /* groups stays with MPI's request */
    local->groups = groups;
  }
  *out = local->groups;
  return HV_SUCCESS;
}

hv_result_t hv__broadcast_hier(hv__algo_ctx_t *ctx, void *buf, size_t bytes, int root) {
  const hv__errors_t *errors = &ctx->host->errors;
  hv__algo_ctx_t *local = ctx->local, *cross = ctx->cross;
  const int l = local->transport.size, nodes = cross->transport.size;
  /* Where root sits: its local rank, and its rank in its cross communicator. */
  const int *groups = NULL;
  HV_CHECK(node_groups(ctx, &groups));
  int where[2] = {-1, -1};
  for (int i = 0; i < l * nodes; i++)
    if (groups[i] == root) where[0] = i / nodes, where[1] = i % nodes;
  if (where[0] < 0) return hv__fail(errors, HV_ERR_INTERNAL, "hierarchical broadcast: root %d not in the node table", root);
  MPI_Request req;
  if (local->transport.rank == where[0] && cross->transport.size > 1) {
    HV_MPI_CHECK(errors, MPI_Ibcast(buf, (int)bytes, MPI_BYTE, where[1], cross->mpi, &req));
    HV_CHECK(wait_one(ctx->host, &req, "hierarchical broadcast (across nodes)"));
  }
  if (local->transport.size > 1) {
    HV_MPI_CHECK(errors, MPI_Ibcast(buf, (int)bytes, MPI_BYTE, where[0], local->mpi, &req));
    HV_CHECK(wait_one(ctx->host, &req, "hierarchical broadcast (within the node)"));
  }
  return HV_SUCCESS;
}

/* The blocks of global ranks g[0..nodes) as one MPI datatype over buf (byte offsets). */
static hv_result_t blocks_type(const hv__errors_t *errors, const int *g, int nodes, const size_t *off, size_t es,
                               int *lens, int *displs, MPI_Datatype *type) {
  for (int j = 0; j < nodes; j++) {
    lens[j] = (int)((off[g[j] + 1] - off[g[j]]) * es);
    displs[j] = (int)(off[g[j]] * es);
  }
  HV_MPI_CHECK(errors, MPI_Type_indexed(nodes, lens, displs, MPI_BYTE, type));
  const int rc = MPI_Type_commit(type);
  if (rc != MPI_SUCCESS) MPI_Type_free(type);
  HV_MPI_CHECK(errors, rc);
  return HV_SUCCESS;
}

hv_result_t hv__allgather_hier(hv__algo_ctx_t *ctx, void *buf, const size_t *off, size_t es) {
  const hv__errors_t *errors = &ctx->host->errors;
  hv__algo_ctx_t *local = ctx->local, *cross = ctx->cross;
  const int l = local->transport.size, nodes = cross->transport.size, me = local->transport.rank;
  const int *groups = NULL;
  HV_CHECK(node_groups(ctx, &groups));
  const int *mine = groups + (size_t)me * (size_t)nodes;
  /* Working space from the local context (ctx's scratch may hold the caller's buffer). */
  int *ints;
  HV_CHECK(hv__algo_scratch(local, sizeof(int) * 2 * (size_t)nodes + sizeof(MPI_Datatype) * (size_t)l,
                            (void **)&ints));
  int *lens = ints, *displs = lens + nodes;
  MPI_Datatype *types = (MPI_Datatype *)(ints + 2 * nodes);
  MPI_Request req;
  /* Phase 1: the blocks of my cross group, in place at their global positions. */
  if (nodes > 1) {
    for (int j = 0; j < nodes; j++) {
      lens[j] = (int)((off[mine[j] + 1] - off[mine[j]]) * es);
      displs[j] = (int)(off[mine[j]] * es);
    }
    HV_MPI_CHECK(errors, MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, buf, lens, displs, MPI_BYTE,
                                       cross->mpi, &req));
    HV_CHECK(wait_one(ctx->host, &req, "hierarchical allgather (across nodes)"));
  }
  if (l == 1) return HV_SUCCESS;
  /* Phase 2: the blocks each local rank now holds, to and from every peer. */
  hv__request_t *reqs;
  HV_CHECK(hv__algo_reqs(local, (size_t)(2 * l), &reqs));
  MPI_Request *r = (MPI_Request *)reqs;
  int nreq = 0, ntype = 0;
  hv_result_t rc = HV_SUCCESS;
  for (int q = 0; q < l && rc == HV_SUCCESS; q++) {
    if (q == me) continue;
    rc = blocks_type(errors, groups + (size_t)q * nodes, nodes, off, es, lens, displs, &types[ntype]);
    if (rc != HV_SUCCESS) break;
    ntype++;
    if (MPI_Irecv(buf, 1, types[ntype - 1], q, HV__TAG_ALLGATHER_HIER, local->mpi, &r[nreq]) != MPI_SUCCESS) {
      rc = hv__fail(errors, HV_ERR_MPI, "hierarchical allgather: MPI_Irecv from local rank %d failed", q);
      break;
    }
    nreq++;
  }
  if (rc == HV_SUCCESS) rc = blocks_type(errors, mine, nodes, off, es, lens, displs, &types[ntype]);
  if (rc == HV_SUCCESS) {
    ntype++;
    for (int q = 0; q < l && rc == HV_SUCCESS; q++) {
      if (q == me) continue;
      if (MPI_Isend(buf, 1, types[ntype - 1], q, HV__TAG_ALLGATHER_HIER, local->mpi, &r[nreq]) != MPI_SUCCESS)
        rc = hv__fail(errors, HV_ERR_MPI, "hierarchical allgather: MPI_Isend to local rank %d failed", q);
      else nreq++;
    }
  }
  /* Posted requests are completed even after a failure: their datatypes are freed next. */
  const hv_result_t waited = hv__wait_mpi(ctx->host, nreq, r, "hierarchical allgather (within the node)", 0);
  for (int i = 0; i < ntype; i++) MPI_Type_free(&types[i]);
  return rc != HV_SUCCESS ? rc : waited;
}
