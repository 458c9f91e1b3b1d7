/* ddp_hook_powersgd_internal.h: what the PowerSGD hook's CPU file
 * (ddp_hook_powersgd.c: the plan, the host path, checkpoints) shares with its GPU
 * path (gpu/ddp_hook_powersgd_gpu.c: cuBLAS and cuSOLVER on device memory; in builds
 * without the GPU trainer gpu/ddp_hook_powersgd_gpu_stub.c, whose calls fail with a
 * message). One plan per bucket (which tensors are compressed and where each matrix's
 * P and Q lie) serves both, so a bucket compresses the same tensors on either. */
#ifndef HV_TRAINER_DDP_HOOK_POWERSGD_INTERNAL_H
#define HV_TRAINER_DDP_HOOK_POWERSGD_INTERNAL_H

#include <stddef.h>

#include "ddp_hooks.h"

typedef struct psgd_matrix {
  size_t off, rows, cols, rank; /* off: in the bucket */
  size_t p_off, q_off;          /* in the bucket's P region and Q array */
} psgd_matrix_t;

typedef struct psgd_gpu psgd_gpu_t; /* a bucket's device arrays and library handles */

typedef struct psgd_bucket {
  int planned;
  psgd_matrix_t *mats;
  int n_mats;
  size_t *plain_off, *plain_len; /* the uncompressed tensors */
  int n_plain;
  size_t n, n_plain_elems, p_elems, q_elems;
  real_t *error; /* (n): x - P Q^T of the matrices; 0 elsewhere (host path) */
  real_t *q;     /* (q_elems): every matrix's Q (cols x rank, row-major), warm start */
  int q_ready;
  real_t *wire;  /* (n_plain_elems + p_elems): the plain values, then the P's (host path) */
  int compressed; /* this step */
  psgd_gpu_t *gpu; /* the device state of a GPU model's bucket, else NULL */
} psgd_bucket_t;

/* Modified Gram-Schmidt on the r columns of a (rows x r, row-major) on the host, as
 * torch's _orthogonalize_gram_schmidt; the first Q of both paths. */
void psgd_orthogonalize(real_t *a, size_t rows, size_t r);

/* The GPU path, for a bucket whose gradients are in device memory. prepare allocates
 * the device arrays once (ddp_register_comm_hook); start and finish do what the host
 * path's do, on the default stream the layers run on, and fail the bucket with a
 * message (ddp_bucket_fail) on error. pb->q holds the first Q (host, row-major) when
 * start is told to upload it (upload_q). state_copy moves error and Q between the
 * device and the host layout of the checkpoint (the CPU path's: Q row-major), so a
 * checkpoint is read by either path. 0, or -1. */
int psgd_gpu_prepare(psgd_bucket_t *pb, ddp_bucket_t *b);
int psgd_gpu_start(const ddp_powersgd_config_t *cfg, psgd_bucket_t *pb, ddp_bucket_t *b, int upload_q);
int psgd_gpu_finish(const ddp_powersgd_config_t *cfg, psgd_bucket_t *pb, ddp_bucket_t *b);
int psgd_gpu_state_copy(psgd_bucket_t *pb, real_t *error, real_t *q, int load);
void psgd_gpu_free(psgd_bucket_t *pb);

#endif /* HV_TRAINER_DDP_HOOK_POWERSGD_INTERNAL_H */
