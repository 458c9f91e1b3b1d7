/* staged_allreduce.h: allreduce of a buffer that MPI cannot read directly (device
 * memory, when the MPI library is not CUDA-aware), through a ring of host staging
 * slots, pipelined: while chunk k is reduced across ranks by MPI, chunk k+1 is copied
 * to the host and chunk k-1 back to the buffer. The copies are the copier's (CUDA
 * async copies and events for device memory; plain memcpy in the CPU tests), so the
 * chunking, slot reuse and ordering are tested without a GPU. */
#ifndef HV_STAGED_ALLREDUCE_H
#define HV_STAGED_ALLREDUCE_H

#include <mpi.h>
#include <stddef.h>

#include "host.h"
#include "hv.h"

/* How many chunks can be in flight: one coming in, one on the network, one going out. */
#define HV__STAGE_SLOTS 3

typedef struct hv__stage_copier {
  void *ctx;
  /* Starts copying bytes of the buffer at src into staging slot `slot` (host). */
  hv_result_t (*to_host)(void *ctx, int slot, void *host, const void *src, size_t bytes);
  /* Returns once that copy has landed. */
  hv_result_t (*to_host_wait)(void *ctx, int slot);
  /* Starts copying slot `slot` back into the buffer at dst. */
  hv_result_t (*to_buffer)(void *ctx, int slot, void *dst, const void *host, size_t bytes);
  /* Returns once that copy no longer needs the slot. */
  hv_result_t (*to_buffer_wait)(void *ctx, int slot);
} hv__stage_copier_t;

/* In-place allreduce of count elements at buf over mpi, in chunks of at most
 * slot_bytes through HV__STAGE_SLOTS host slots of slot_bytes each at staging. With
 * divisor > 0 each reduced chunk is divided by it on the host (AVERAGE). MPI waits are
 * bounded by HV_TIMEOUT. On return every copy back to the buffer has been waited for. */
hv_result_t hv__staged_allreduce(const hv__algo_host_t *host, MPI_Comm mpi, const hv__stage_copier_t *copier, void *buf,
                                 size_t count, hv_dtype_t dtype, hv_op_t op, double divisor, char *staging,
                                 size_t slot_bytes);

#endif
