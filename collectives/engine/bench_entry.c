/* bench_entry.c: hv_bench_allreduce_algorithm (hv_internal_bench.h): one algorithm run
 * directly, for measuring the engine's overhead against the algorithm alone. */
#include "hv_internal.h"
#include "hv_internal_bench.h"

hv_result_t hv_bench_allreduce_algorithm(hv_comm_t *comm, const char *algo, void *buf,
                                         size_t count, hv_dtype_t dtype, hv_op_t op) {
  if (!comm || !algo || (count && !buf) || (unsigned)dtype >= HV_NUM_DTYPES || (unsigned)op >= HV_NUM_OPS)
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_bench_allreduce_algorithm: bad argument");
  const int a = hv__algo_from_name(algo);
  if (a >= 0) {
    hv__algo_ctx_t *ctx;
    HV_CHECK(hv__comm_bench_ctx(comm, &ctx));
    return hv__allreduce_run(ctx, (hv__algo_t)a, buf, count, dtype, op == HV_AVERAGE ? HV_SUM : op, NULL);
  }
  return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "unknown algorithm '%s' (auto, ring, rd, rab, 2d, mpi, hier, shm)", algo);
}
