/* ddp.h: data-parallel training over hv (libhvcoll), in the manner of PyTorch's
 * DistributedDataParallel.
 *
 * - ddp_create broadcasts the parameters and buffers of rank 0, so every rank starts
 *   from the same model whatever its seed.
 * - Gradients are grouped into buckets in reverse layer order: a small first bucket
 *   (the last layers, whose gradients are ready first) and then buckets of up to
 *   bucket_bytes; a layer is never split. ddp_backward runs the model's backward and,
 *   the moment the last layer of a bucket has its gradient, hands that bucket to
 *   hv_allreduce_async(HV_AVERAGE) in place, so communication overlaps the rest of
 *   backward. ddp_wait (before the optimiser step) waits for every bucket.
 * - Gradient accumulation: ddp_backward(d, 0) accumulates locally without any
 *   communication; the following ddp_backward(d, 1) reduces the accumulated sum.
 *   Scale the loss gradient by 1/(k * local batch) for a mean over k micro-batches.
 * - Batch norm: statistics are local to each rank (as PyTorch DDP without
 *   SyncBatchNorm): each rank normalises with its own micro-batch statistics and keeps
 *   its own running statistics; only gamma/beta gradients are averaged. N ranks with
 *   batch B/N therefore equal one process accumulating the gradients of the same N
 *   micro-batches (tests/trainer/test_ddp.c checks this to rounding), not one process
 *   with batch B. Call ddp_broadcast_buffers before evaluation for identical running
 *   statistics on every rank.
 * - A model on the GPU (model_gpu.h): the same buckets, reduced in place on the device
 *   through hv_cuda.h (NCCL within a node, MPI between nodes) on the default stream
 *   the layers run on; the broadcasts too. ddp_wait then waits for that stream. With
 *   HV_COMPRESSION=fp16|bf16 a bucket travels compressed (hv_allreduce_cuda_group).
 * - Each ddp_backward that syncs marks a step for hv's straggler report
 *   (hv_straggler_step): its first bucket is the request timed.
 * Errors are returned as -1 with a message (rank, bucket, hv's detail). */
#ifndef HV_TRAINER_DDP_H
#define HV_TRAINER_DDP_H

#include <stddef.h>

#include "hv.h"
#include "model.h"

typedef struct ddp_config {
  size_t first_bucket_bytes;  /* 0: 1 MiB (PyTorch's first bucket) */
  size_t bucket_bytes;        /* 0: 25 MiB (PyTorch's bucket_cap_mb) */
} ddp_config_t;

typedef struct ddp ddp_t;

/* Builds the buckets and broadcasts parameters and buffers from rank 0 (collective:
 * every rank calls it with the same architecture). cfg may be NULL. */
ddp_t *ddp_create(hv_comm_t *comm, model_t *m, const ddp_config_t *cfg, char *err,
                  size_t errlen);
void ddp_free(ddp_t *d);

/* Backward of the last forward/loss with bucketed allreduce when sync (else local
 * accumulation only). Returns 0, or -1 with ddp_error() set. */
int ddp_backward(ddp_t *d, int sync);
/* Waits for every bucket submitted by ddp_backward; grads then hold the average. */
int ddp_wait(ddp_t *d);
/* Broadcasts buffers (batch-norm running statistics) from rank 0. */
int ddp_broadcast_buffers(ddp_t *d);
/* Broadcasts n values of the model's kind of memory (host, or device for a GPU model)
 * from rank 0: optimiser state after a resume. */
int ddp_broadcast_array(ddp_t *d, const char *name, real_t *buf, size_t n);
/* Sums v[0..n) over ranks (metrics: loss sums, correct counts, sample counts). */
int ddp_allreduce_sum(ddp_t *d, const char *name, double *v, size_t n);

const char *ddp_error(const ddp_t *d);
int ddp_num_buckets(const ddp_t *d);
/* Layer index whose backward completed bucket b in the last ddp_backward (the
 * bucket was submitted right then); -1 when that backward did not sync. */
int ddp_bucket_launch_layer(const ddp_t *d, int b);
/* Parameter range [*lo, *hi) of bucket b in the flat array. */
void ddp_bucket_range(const ddp_t *d, int b, size_t *lo, size_t *hi);

#endif /* HV_TRAINER_DDP_H */
