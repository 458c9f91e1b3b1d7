/* ordered_check.c: the argument agreement of ordered calls (hv_cuda.h: no names, so
 * every rank must make the same calls in the same order): one small MPI allreduce of
 * the call's values and their negations gives every rank the range of each, so every
 * rank fails alike on a mismatch instead of hanging inside NCCL. Each call is an
 * ordered event of the flight recorder (named by the function, numbered by the
 * communicator's ordered calls), which is how a dump shows ranks that called
 * different collectives at the same sequence number. Used by cuda/cuda_comm.c, and
 * on host buffers by hv_bench_ordered_call (hv_internal_bench.h), so the path runs
 * in tests without a GPU. */
#include <string.h>

#include "flight_recorder.h"
#include "hv_internal.h"
#include "hv_internal_bench.h"

static const char *const ordered_names[HV__ORDERED_KINDS] = {"",
                                                              "hv_allreduce_cuda",
                                                              "hv_allgather_cuda",
                                                              "hv_broadcast_cuda",
                                                              "hv_allreduce_cuda_group",
                                                              "hv_reducescatter_cuda",
                                                              "hv_alltoall_cuda",
                                                              "hv_alltoallv_cuda",
                                                              "hv_reduce_cuda",
                                                              "hv_gather_cuda",
                                                              "hv_gatherv_cuda",
                                                              "hv_scatter_cuda",
                                                              "hv_scatterv_cuda"};
static const hv__coll_t ordered_colls[HV__ORDERED_KINDS] = {HV__COLL_ALLREDUCE, HV__COLL_ALLREDUCE,
                                                            HV__COLL_ALLGATHER, HV__COLL_BROADCAST,
                                                            HV__COLL_ALLREDUCE, HV__COLL_REDUCESCATTER,
                                                            HV__COLL_ALLTOALL, HV__COLL_ALLTOALLV,
                                                            HV__COLL_REDUCE, HV__COLL_GATHER, HV__COLL_GATHERV,
                                                            HV__COLL_SCATTER, HV__COLL_SCATTERV};

const char *hv__ordered_name(int coll) { return coll > 0 && coll < HV__ORDERED_KINDS ? ordered_names[coll] : "?"; }

hv_result_t hv__ordered_agree(hv_comm_t *comm, MPI_Comm mpi, int coll, size_t count, hv_dtype_t dtype, int op_or_root,
                              long long ntensors, uint64_t layout, int device, uint64_t stream, uint64_t *pos) {
  const char *name = hv__ordered_name(coll);
  *pos = hv__fr_ordered_begin(comm, name, ordered_colls[coll > 0 && coll < HV__ORDERED_KINDS ? coll : 0], count, dtype,
                              device, stream);
  /* The hash is halved so that it and its negation are both long longs. */
  enum { NV = 6 };
  long long v[2 * NV] = {coll, (long long)count, (long long)dtype, op_or_root, ntensors, (long long)(layout >> 1)};
  for (int i = 0; i < NV; i++) v[NV + i] = -v[i];
  MPI_Request req;
  hv_result_t rc = HV_SUCCESS;
  if (MPI_Iallreduce(MPI_IN_PLACE, v, 2 * NV, MPI_LONG_LONG, MPI_MAX, mpi, &req) != MPI_SUCCESS)
    rc = hv__set_error(comm, HV_ERR_MPI, "rank %d: %s: MPI_Iallreduce of the argument check failed", comm->rank, name);
  else
    rc = hv__wait_mpi(&comm->host, 1, &req, "the argument check of a GPU collective", 1);
  static const char *const what[NV] = {"collective", "count", "dtype", "op or root", "number of tensors",
                                       "list of tensor counts (hash)"};
  for (int i = 0; i < NV && rc == HV_SUCCESS; i++)
    if (v[i] != -v[NV + i]) {
      if (i == 0) /* the ranks' calls at this point of the order differ */
        rc = hv__set_error(comm, HV_ERR_MISMATCH,
                           "rank %d: %s (ordered call %llu of the communicator) does not match the other ranks' "
                           "call: they called a different collective (%s to %s); every rank must make the same "
                           "GPU calls in the same order",
                           comm->rank, name, comm->flight ? (unsigned long long)comm->flight->ordered_calls : 0ull,
                           hv__ordered_name((int)-v[NV]), hv__ordered_name((int)v[0]));
      else if (i == 5) /* same total, same number of tensors, other sizes */
        rc = hv__set_error(comm, HV_ERR_MISMATCH,
                           "rank %d: %s of %lld tensors (%zu elements in all, dtype %s) does not match the other "
                           "ranks' call: the same total split into tensors of other sizes (the hash of the list "
                           "of counts differs); every rank must give the same count for each tensor, in order",
                           comm->rank, name, ntensors, count,
                           (unsigned)dtype < HV_NUM_DTYPES ? hv_dtype_name(dtype) : "?");
      else
        rc = hv__set_error(comm, HV_ERR_MISMATCH,
                           "rank %d: %s (count %zu, dtype %s, %s %d) does not match the other ranks' call: their "
                           "%s ranges from %lld to %lld",
                           comm->rank, name, count, (unsigned)dtype < HV_NUM_DTYPES ? hv_dtype_name(dtype) : "?",
                           coll == HV__ORDERED_ALLREDUCE || coll == HV__ORDERED_GROUP ||
                                   coll == HV__ORDERED_REDUCESCATTER ? "op" : coll == HV__ORDERED_REDUCE ? "op + 5 x root" : "root",
                           op_or_root, what[i], -v[NV + i], v[i]);
    }
  if (rc != HV_SUCCESS) {
    hv__fr_ordered_finish(comm, *pos, rc, NULL);
    *pos = 0;
  }
  return rc;
}

hv_result_t hv_bench_ordered_call(hv_comm_t *comm, const char *coll, size_t count, hv_dtype_t dtype, int op_or_root) {
  static const char *const short_names[HV__ORDERED_KINDS] = {"",          "allreduce",     "allgather", "broadcast",
                                                             "group",     "reducescatter", "alltoall",  "alltoallv",
                                                             "reduce",    "gather",        "gatherv",   "scatter",
                                                             "scatterv"};
  if (!comm || !coll) return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_bench_ordered_call: NULL argument");
  int kind = 0;
  for (int k = 1; k < HV__ORDERED_KINDS; k++)
    if (strcmp(coll, short_names[k]) == 0 || strcmp(coll, ordered_names[k]) == 0) kind = k;
  if (!kind)
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT,
                         "hv_bench_ordered_call: unknown collective '%s' (allreduce, allgather, broadcast, group, "
                         "reducescatter, alltoall)", coll);
  if ((unsigned)dtype >= HV_NUM_DTYPES)
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_bench_ordered_call: unknown dtype");
  hv__algo_ctx_t *ctx;
  HV_CHECK(hv__comm_bench_ctx(comm, &ctx)); /* its communicator is this thread's: comm->bench_mpi */
  uint64_t pos;
  HV_CHECK(hv__ordered_agree(comm, comm->bench_mpi, kind, count, dtype, op_or_root, 0, 0, -1, 0, &pos));
  hv__fr_ordered_finish(comm, pos, HV_SUCCESS, "check");
  return HV_SUCCESS;
}
