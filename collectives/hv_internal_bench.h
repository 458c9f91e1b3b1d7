/* hv_internal_bench.h: entry points for benchmarks (hvbench --no-engine) that run one
 * allreduce algorithm directly on the calling thread, without the queue, negotiation
 * or fusion, over the communicator's own private MPI duplicate. Not part of the
 * stable API. */
#ifndef HV_INTERNAL_BENCH_H
#define HV_INTERNAL_BENCH_H

#include "hv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* algo: "ring", "rd", "mpi" or "auto". In-place on buf; collective over the
 * communicator; one thread at a time per communicator. AVERAGE is reduced as SUM. */
HV_API hv_result_t hv_bench_allreduce_algorithm(hv_comm_t *comm, const char *algo, void *buf,
                                         size_t count, hv_dtype_t dtype, hv_op_t op);

/* The argument agreement of one GPU-style ordered call (hv_cuda.h's collectives are
 * unnamed: every rank must call the same ones in the same order), on the host and
 * without a GPU, recorded in the flight recorder as the GPU call would be (ordered,
 * named by its function, numbered by the communicator's ordered calls). coll:
 * "allreduce", "allgather", "broadcast", "group", "reducescatter" or "alltoall";
 * op_or_root: the op (reducing calls) or the root (broadcast). Collective; fails with
 * HV_ERR_MISMATCH on every rank when the ranks' calls differ. For tests. */
HV_API hv_result_t hv_bench_ordered_call(hv_comm_t *comm, const char *coll, size_t count, hv_dtype_t dtype,
                                         int op_or_root);

#ifdef __cplusplus
}
#endif
#endif
