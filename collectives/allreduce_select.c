/* allreduce_select.c: the table of allreduce algorithms and the choice among them.
 *
 * Decision table for HV_ALLREDUCE_ALGO=auto (measured with hvbench on one node,
 * see the README): recursive doubling at or below HV_SMALL_ALLREDUCE_BYTES (default
 * 64 KiB), where its log2(p) latency steps beat the ring's 2(p-1); the ring above,
 * where bandwidth dominates. A single rank needs no communication at all. */
#include "algo.h"
#include "hv_internal.h"

static const hv__allreduce_algo_t algorithms[] = {
    {HV__ALGO_RING, "ring", hv__allreduce_ring},
    {HV__ALGO_RD, "rd", hv__allreduce_rd},
    {HV__ALGO_MPI, "mpi", hv__allreduce_mpi},
};

const hv__allreduce_algo_t *hv__allreduce_select(const hv__algo_ctx_t *ctx, hv__algo_t forced,
                                                 size_t bytes) {
  hv__algo_t want = forced;
  if (want == HV__ALGO_AUTO)
    want = bytes <= ctx->config->small_allreduce_bytes ? HV__ALGO_RD : HV__ALGO_RING;
  for (size_t i = 0; i < sizeof algorithms / sizeof algorithms[0]; i++)
    if (algorithms[i].id == want) return &algorithms[i];
  return &algorithms[0];
}

hv_result_t hv__allreduce_run(hv__algo_ctx_t *ctx, hv__algo_t forced, void *buf, size_t count,
                              hv_dtype_t dtype, hv_op_t op, const char **algo_name) {
  const hv__allreduce_algo_t *algo = hv__allreduce_select(ctx, forced, count * hv_dtype_size(dtype));
  if (algo_name) *algo_name = algo->name;
  if (ctx->transport.size == 1) return HV_SUCCESS;
  return algo->run(ctx, buf, count, dtype, op);
}
