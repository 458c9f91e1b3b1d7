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

#ifdef __cplusplus
}
#endif
#endif
