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
 *   statistics on every rank. ddp_set_sync_bn(d, 1) makes batch norm SyncBatchNorm
 *   instead: statistics of the global batch (hv allreduces of per-channel sums named
 *   "syncbn/<layer>/stats|var|grad"), the same running statistics on every rank, and
 *   the gradient of the global batch: N ranks with B/N images each then equal one
 *   process with B (tests/trainer/test_sync_bn.c).
 * - A model on the GPU (model_gpu.h): the same buckets, reduced in place on the device
 *   through hv_cuda.h (NCCL within a node, MPI between nodes) on the default stream
 *   the layers run on; the broadcasts too. ddp_wait then waits for that stream. With
 *   HV_COMPRESSION=fp16|bf16 a bucket travels compressed (hv_allreduce_cuda_group).
 * - Communication hooks (as DDP's register_comm_hook): what happens to a ready
 *   bucket is a hook's start (during backward) and finish (in ddp_wait), which must
 *   leave the bucket's average in its gradients and call ddp_bucket_complete exactly
 *   once. The default hook is the allreduce above; ddp_hooks.h has fp16, bf16,
 *   PowerSGD and int8. A hook's error, and a hook that completes a bucket twice or
 *   never, fail ddp_wait with the hook's and the bucket's names.
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
/* Hands every bucket of the gradients already in the model (computed without
 * ddp_backward) to the hook, in bucket order; ddp_wait then as after ddp_backward. */
int ddp_reduce_grads(ddp_t *d);
/* Sets the count of synchronised steps (ddp_bucket_step) after a resume, so a hook's
 * warm-up (PowerSGD's start) is not taken again. */
void ddp_set_step(ddp_t *d, long long steps);
/* Waits for every bucket submitted by ddp_backward; grads then hold the average. */
int ddp_wait(ddp_t *d);
/* SyncBatchNorm on (1) or off (0) for the model's batch-norm layers in training
 * (model_set_bn_sync with this communicator's allreduce). Every rank the same, between
 * steps. A rank with a batch of one image then fails the forward on every rank. */
void ddp_set_sync_bn(ddp_t *d, int on);
/* Broadcasts buffers (batch-norm running statistics) from rank 0. */
int ddp_broadcast_buffers(ddp_t *d);
/* Broadcasts n values of the model's kind of memory (host, or device for a GPU model)
 * from rank 0: optimiser state after a resume. */
int ddp_broadcast_array(ddp_t *d, const char *name, real_t *buf, size_t n);
/* Uneven inputs (DDP's Join, hv_join): a rank out of data calls ddp_join, which
 * returns once every rank has. Until then the others' steps average over the ranks
 * still running (the joined ones contribute nothing). Then every rank takes the
 * parameters and buffers of the rank that ran the most steps (the last to join; *last
 * its rank, may be NULL) and its step count; its optimiser state is the caller's to
 * broadcast (ddp_broadcast_array_from). CPU models, with the allreduce, fp16 or bf16
 * hook. 0, or -1 with ddp_error(). */
int ddp_join(ddp_t *d, int *last);
/* Broadcasts n values from rank root (ddp_join's last joiner, for optimiser state). */
int ddp_broadcast_array_from(ddp_t *d, const char *name, real_t *buf, size_t n, int root);
/* Sums v[0..n) over ranks (metrics: loss sums, correct counts, sample counts). */
int ddp_allreduce_sum(ddp_t *d, const char *name, double *v, size_t n);

/* ---- Communication hooks ---- */

/* What a hook sees of one bucket: its gradients (host memory, in place), its layers'
 * tensors, a name prefix for its collectives and a handle slot. */
typedef struct ddp_bucket ddp_bucket_t;

/* One parameter tensor of a bucket: elements [off, off + rows * cols) of the bucket's
 * gradients, a rows x cols row-major matrix (PyTorch's tensor.view(shape[0], -1):
 * rows = output channels or features); rows = 1 for vectors (biases, batch norm). */
typedef struct ddp_tensor {
  size_t off, rows, cols;
  const char *layer; /* the layer's name, for messages */
} ddp_tensor_t;

typedef struct ddp_comm_hook {
  const char *name;
  void *state;
  /* The bucket's gradients are complete (called from backward, buckets in the order
   * they fill). Start communicating; a hook may also finish here. 0, or -1 after
   * ddp_bucket_fail. */
  int (*start)(void *state, ddp_bucket_t *b);
  /* Called by ddp_wait for every bucket started this step, in bucket order: leave the
   * average over the ranks in the gradients and call ddp_bucket_complete (unless start
   * did). NULL: start completes. */
  int (*finish)(void *state, ddp_bucket_t *b);
  /* Called once per bucket by ddp_register_comm_hook (optional): allocate the
   * bucket's state now, so that its size is known before the first step (a resume
   * loads it then). 0, or -1 after ddp_bucket_fail. */
  int (*prepare)(void *state, ddp_bucket_t *b);
  /* Checkpoints (optional): the state that must survive a resume (error buffers, Q),
   * as `count` real_t values that this rank saves and loads back; ddp_hook_state_*. */
  size_t (*state_count)(void *state);
  void (*state_copy)(void *state, real_t *out, int load); /* load: from out into the state */
  void (*free_state)(void *state);
} ddp_comm_hook_t;

/* Installs hook for every later step (collective: the same hook on every rank),
 * replacing and freeing the current one; NULL (or a hook without start) restores the
 * default allreduce. Only
 * between steps. 0, or -1 with ddp_error(). */
int ddp_register_comm_hook(ddp_t *d, const ddp_comm_hook_t *hook);
const char *ddp_comm_hook_name(const ddp_t *d);

real_t *ddp_bucket_grads(ddp_bucket_t *b, size_t *n);
int ddp_bucket_index(const ddp_bucket_t *b);
/* A name unique to this DDP instance and bucket ("ddp0.grad.bucket3"), under 24
 * characters: a prefix for the hook's hv calls. */
const char *ddp_bucket_name(const ddp_bucket_t *b);
hv_comm_t *ddp_bucket_comm(const ddp_bucket_t *b);
const ddp_tensor_t *ddp_bucket_tensors(const ddp_bucket_t *b, int *n);
/* A handle slot that stays with the bucket from start to finish. */
hv_handle_t *ddp_bucket_handle(ddp_bucket_t *b);
/* Steps synchronised before this one (PyTorch's state.iter). */
long long ddp_bucket_step(const ddp_bucket_t *b);
/* The gradients hold the average; wire_bytes is what this rank contributed to the
 * collectives for this bucket (its message size, not counting what a ring forwards).
 * A second completion of the same bucket in one step fails the step. */
int ddp_bucket_complete(ddp_bucket_t *b, size_t wire_bytes);
/* Records the hook's failure for ddp_wait (the first one wins); returns -1. */
int ddp_bucket_fail(ddp_bucket_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether the bucket's gradients are in host memory (a CPU model). */
int ddp_bucket_on_host(const ddp_bucket_t *b);

/* Bytes the hooks reported as sent, and the float32 bytes the buckets held (the
 * uncompressed size), summed over the synchronised steps so far: their ratio is the
 * compression ratio. */
void ddp_comm_bytes(const ddp_t *d, unsigned long long *sent, unsigned long long *dense);

/* The hook's state for checkpoints: how many values, and a copy out (load = 0) or in
 * (load = 1). 0 values when the hook keeps none. Each rank has its own (PowerSGD's and
 * int8's error buffers differ between ranks): save and load it per rank, with
 * ddp_set_step, for a resume equivalent to the uninterrupted run. */
size_t ddp_hook_state_count(const ddp_t *d);
void ddp_hook_state_copy(ddp_t *d, real_t *buf, int load);

const char *ddp_error(const ddp_t *d);
int ddp_num_buckets(const ddp_t *d);
/* Layer index whose backward completed bucket b in the last ddp_backward (the
 * bucket was submitted right then); -1 when that backward did not sync. */
int ddp_bucket_launch_layer(const ddp_t *d, int b);
/* Parameter range [*lo, *hi) of bucket b in the flat array. */
void ddp_bucket_range(const ddp_t *d, int b, size_t *lo, size_t *hi);

#endif /* HV_TRAINER_DDP_H */
