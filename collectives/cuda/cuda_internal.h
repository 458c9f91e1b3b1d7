/* cuda_internal.h: the communicator's GPU state (cuda_comm.c; cuda_stub.c in builds
 * without NCCL), created at hv_init and freed at hv_shutdown. */
#ifndef HV_CUDA_INTERNAL_H
#define HV_CUDA_INTERNAL_H

#include "hv.h"

typedef struct hv__cuda hv__cuda_t;
struct hv_comm;

/* Collective at init: duplicates the communicators the GPU collectives use, so that
 * they never share one with the background engine. Nothing CUDA is touched yet. */
hv_result_t hv__cuda_init(struct hv_comm *comm);
void hv__cuda_free(struct hv_comm *comm);

#endif
