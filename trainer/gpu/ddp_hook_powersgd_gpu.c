/* ddp_hook_powersgd_gpu.c: the PowerSGD hook's GPU path (ddp_hook_powersgd_internal.h)
 * for a model on the GPU: the same plan, steps and wire as the host path
 * (ddp_hook_powersgd.c, the reference), on device memory, queued on the default
 * stream the layers run on, so nothing here waits for the GPU:
 *  - error feedback: x = g + e and e := x (cublasSaxpy, device copies), and after the
 *    step e -= P Q^T (cublasSaxpy with -1: fl(e - out), the host path's rounding);
 *  - P = M Q and Q = M^T P and M = P Q^T: cublasSgemm. A matrix M (rows x cols) is
 *    row-major in the gradients, i.e. column-major M^T, so each product reads it
 *    transposed or not instead of copying it. P (rows x r) and Q (cols x r) are kept
 *    column-major on the device, the layout cuSOLVER wants;
 *  - orthogonalisation of the averaged P: cuSOLVER's Householder QR (geqrf, then orgqr
 *    for the explicit Q factor), not a Gram-Schmidt of cuBLAS level-1 calls: each
 *    Gram-Schmidt step needs a norm or a dot product on the host before the next call
 *    (r (r + 1) / 2 host waits per matrix and step, or a hand-written kernel), while
 *    QR is two library calls and is what torch's _orthogonalize uses for float32 at
 *    rank > 1. Householder is also stable where Gram-Schmidt loses orthogonality. Its
 *    basis spans the same columns as Gram-Schmidt's but a column may have the opposite
 *    sign; the result P (M^T P)^T = P P^T M and the error do not depend on the signs
 *    (and the next P = M M^T P keeps the span), only the stored Q does;
 *  - the averages through hv_cuda.h (hv_allreduce_cuda, HV_AVERAGE): the plain tensors
 *    and the P's in one call from start (it overlaps the rest of backward), the Q's
 *    from finish. Device calls are matched by order: every rank runs the same buckets
 *    in the same order.
 * Workspaces, handles and device arrays are made once, by prepare. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_hook_powersgd_internal.h"
#include "hv_cuda.h"

_Static_assert(sizeof(real_t) == sizeof(float), "the GPU path is built into the float32 library only");

struct psgd_gpu {
  cublasHandle_t blas;
  cusolverDnHandle_t solver;
  float *error; /* (n) */
  float *q;     /* (q_elems): each matrix's Q column-major (cols x rank) at its q_off */
  float *wire;  /* (n_plain_elems + p_elems): plain values, then each P column-major */
  float *tau;   /* (largest rank): the Householder scalars */
  float *work;  /* (lwork) */
  int lwork;
  int *info;
  real_t *stage; /* (q_elems) host: Q between the two layouts */
};

#define CUDA_OK(b, call)                                                                     \
  do {                                                                                       \
    const cudaError_t rc_ = (call);                                                          \
    if (rc_ != cudaSuccess)                                                                  \
      return ddp_bucket_fail(b, "powersgd on the GPU: %s: %s", #call, cudaGetErrorString(rc_)); \
  } while (0)
#define BLAS_OK(b, call)                                                                            \
  do {                                                                                              \
    const cublasStatus_t st_ = (call);                                                              \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                               \
      return ddp_bucket_fail(b, "powersgd on the GPU: %s: %s", #call, cublasGetStatusString(st_)); \
  } while (0)
#define SOLVER_OK(b, call)                                                                \
  do {                                                                                    \
    const cusolverStatus_t st_ = (call);                                                  \
    if (st_ != CUSOLVER_STATUS_SUCCESS)                                                   \
      return ddp_bucket_fail(b, "powersgd on the GPU: %s: cuSOLVER status %d", #call, (int)st_); \
  } while (0)
#define HV_OK(b, comm, call)                                                      \
  do {                                                                            \
    if ((call) != HV_SUCCESS) return ddp_bucket_fail(b, "%s", hv_comm_last_error(comm)); \
  } while (0)

static float *p_of(psgd_bucket_t *pb, const psgd_matrix_t *x) { return pb->gpu->wire + pb->n_plain_elems + x->p_off; }

int psgd_gpu_prepare(psgd_bucket_t *pb, ddp_bucket_t *b) {
  psgd_gpu_t *g = calloc(1, sizeof *g);
  if (!g) return ddp_bucket_fail(b, "out of memory");
  pb->gpu = g; /* psgd_gpu_free releases what is made below, also after a failure */
  if (!(g->stage = malloc((pb->q_elems + 1) * sizeof *g->stage))) return ddp_bucket_fail(b, "out of memory");
  BLAS_OK(b, cublasCreate(&g->blas));
  BLAS_OK(b, cublasSetStream(g->blas, NULL)); /* the layers' (default) stream */
  SOLVER_OK(b, cusolverDnCreate(&g->solver));
  SOLVER_OK(b, cusolverDnSetStream(g->solver, NULL));
  size_t most_rank = 1;
  for (int m = 0; m < pb->n_mats; m++)
    if (pb->mats[m].rank > most_rank) most_rank = pb->mats[m].rank;
  CUDA_OK(b, cudaMalloc((void **)&g->error, (pb->n + 1) * sizeof(float)));
  CUDA_OK(b, cudaMalloc((void **)&g->q, (pb->q_elems + 1) * sizeof(float)));
  CUDA_OK(b, cudaMalloc((void **)&g->wire, (pb->n_plain_elems + pb->p_elems + 1) * sizeof(float)));
  CUDA_OK(b, cudaMalloc((void **)&g->tau, most_rank * sizeof(float)));
  CUDA_OK(b, cudaMalloc((void **)&g->info, sizeof(int)));
  CUDA_OK(b, cudaMemset(g->error, 0, (pb->n + 1) * sizeof(float)));
  for (int m = 0; m < pb->n_mats; m++) { /* one workspace, the largest any matrix asks for */
    const psgd_matrix_t *x = &pb->mats[m];
    int a = 0, o = 0;
    SOLVER_OK(b, cusolverDnSgeqrf_bufferSize(g->solver, (int)x->rows, (int)x->rank, p_of(pb, x), (int)x->rows, &a));
    SOLVER_OK(b, cusolverDnSorgqr_bufferSize(g->solver, (int)x->rows, (int)x->rank, (int)x->rank, p_of(pb, x),
                                             (int)x->rows, g->tau, &o));
    if (a > g->lwork) g->lwork = a;
    if (o > g->lwork) g->lwork = o;
  }
  CUDA_OK(b, cudaMalloc((void **)&g->work, ((size_t)g->lwork + 1) * sizeof(float)));
  return 0;
}

/* Q between the host layout (row-major cols x rank per matrix, pb->q and checkpoints)
 * and the device's (column-major). */
static void transpose_q(const psgd_bucket_t *pb, const real_t *from, real_t *to, int to_device) {
  for (int m = 0; m < pb->n_mats; m++) {
    const psgd_matrix_t *x = &pb->mats[m];
    for (size_t i = 0; i < x->cols; i++)
      for (size_t j = 0; j < x->rank; j++) {
        const size_t row_major = x->q_off + i * x->rank + j, col_major = x->q_off + j * x->cols + i;
        if (to_device) to[col_major] = from[row_major];
        else to[row_major] = from[col_major];
      }
  }
}

int psgd_gpu_start(const ddp_powersgd_config_t *cfg, psgd_bucket_t *pb, ddp_bucket_t *b, int upload_q) {
  psgd_gpu_t *g = pb->gpu;
  size_t n;
  float *grad = ddp_bucket_grads(b, &n);
  hv_comm_t *comm = ddp_bucket_comm(b);
  if (!pb->compressed) {
    HV_OK(b, comm, hv_allreduce_cuda(comm, grad, grad, n, HV_FLOAT32, HV_AVERAGE, NULL));
    return 0;
  }
  if (cfg->use_error_feedback) {
    const float one = 1;
    BLAS_OK(b, cublasSaxpy(g->blas, (int)n, &one, g->error, 1, grad, 1));
    for (int m = 0; m < pb->n_mats; m++) /* error := x, until finish subtracts P Q^T */
      CUDA_OK(b, cudaMemcpyAsync(g->error + pb->mats[m].off, grad + pb->mats[m].off,
                                 pb->mats[m].rows * pb->mats[m].cols * sizeof(float), cudaMemcpyDeviceToDevice, NULL));
  }
  if (upload_q) { /* the first Q (the host path's, from the seed): rare, so a plain copy */
    transpose_q(pb, pb->q, g->stage, 1);
    CUDA_OK(b, cudaMemcpy(g->q, g->stage, pb->q_elems * sizeof(float), cudaMemcpyHostToDevice));
  }
  size_t k = 0;
  for (int i = 0; i < pb->n_plain; i++) {
    CUDA_OK(b, cudaMemcpyAsync(g->wire + k, grad + pb->plain_off[i], pb->plain_len[i] * sizeof(float),
                               cudaMemcpyDeviceToDevice, NULL));
    k += pb->plain_len[i];
  }
  const float one = 1, zero = 0;
  for (int m = 0; m < pb->n_mats; m++) { /* P (rows x r) = M Q; M is the column-major M^T */
    const psgd_matrix_t *x = &pb->mats[m];
    BLAS_OK(b, cublasSgemm(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)x->rows, (int)x->rank, (int)x->cols, &one,
                           grad + x->off, (int)x->cols, g->q + x->q_off, (int)x->cols, &zero, p_of(pb, x),
                           (int)x->rows));
  }
  HV_OK(b, comm, hv_allreduce_cuda(comm, g->wire, g->wire, pb->n_plain_elems + pb->p_elems, HV_FLOAT32, HV_AVERAGE,
                                   NULL));
  return 0;
}

int psgd_gpu_finish(const ddp_powersgd_config_t *cfg, psgd_bucket_t *pb, ddp_bucket_t *b) {
  psgd_gpu_t *g = pb->gpu;
  size_t n;
  float *grad = ddp_bucket_grads(b, &n);
  hv_comm_t *comm = ddp_bucket_comm(b);
  if (!pb->compressed) return ddp_bucket_complete(b, n * sizeof(float)); /* ddp_wait waits for the stream */
  size_t k = 0;
  for (int i = 0; i < pb->n_plain; i++) {
    CUDA_OK(b, cudaMemcpyAsync(grad + pb->plain_off[i], g->wire + k, pb->plain_len[i] * sizeof(float),
                               cudaMemcpyDeviceToDevice, NULL));
    k += pb->plain_len[i];
  }
  const float one = 1, zero = 0, minus_one = -1;
  for (int m = 0; m < pb->n_mats; m++) {
    const psgd_matrix_t *x = &pb->mats[m];
    float *p = p_of(pb, x);
    /* P := the Q factor of P's QR (orthonormal columns); the mats' ranks never exceed
     * their rows (the plan clamps them). */
    SOLVER_OK(b, cusolverDnSgeqrf(g->solver, (int)x->rows, (int)x->rank, p, (int)x->rows, g->tau, g->work,
                                  g->lwork, g->info));
    SOLVER_OK(b, cusolverDnSorgqr(g->solver, (int)x->rows, (int)x->rank, (int)x->rank, p, (int)x->rows, g->tau,
                                  g->work, g->lwork, g->info));
    /* Q (cols x r) = M^T P: M^T is the column-major matrix as it lies */
    BLAS_OK(b, cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)x->cols, (int)x->rank, (int)x->rows, &one,
                           grad + x->off, (int)x->cols, p, (int)x->rows, &zero, g->q + x->q_off, (int)x->cols));
  }
  if (pb->q_elems) HV_OK(b, comm, hv_allreduce_cuda(comm, g->q, g->q, pb->q_elems, HV_FLOAT32, HV_AVERAGE, NULL));
  for (int m = 0; m < pb->n_mats; m++) {
    const psgd_matrix_t *x = &pb->mats[m];
    /* M = P Q^T, written as its column-major transpose Q P^T (cols x rows) */
    BLAS_OK(b, cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)x->cols, (int)x->rows, (int)x->rank, &one,
                           g->q + x->q_off, (int)x->cols, p_of(pb, x), (int)x->rows, &zero, grad + x->off,
                           (int)x->cols));
    if (cfg->use_error_feedback)
      BLAS_OK(b, cublasSaxpy(g->blas, (int)(x->rows * x->cols), &minus_one, grad + x->off, 1, g->error + x->off, 1));
  }
  return ddp_bucket_complete(b, (pb->n_plain_elems + pb->p_elems + pb->q_elems) * sizeof(float));
}

int psgd_gpu_state_copy(psgd_bucket_t *pb, real_t *error, real_t *q, int load) {
  psgd_gpu_t *g = pb->gpu;
  if (cudaDeviceSynchronize() != cudaSuccess) return -1; /* between steps: nothing may still write them */
  if (load) {
    transpose_q(pb, q, g->stage, 1);
    return cudaMemcpy(g->error, error, pb->n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess &&
                   cudaMemcpy(g->q, g->stage, pb->q_elems * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess
               ? 0
               : -1;
  }
  if (cudaMemcpy(error, g->error, pb->n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(g->stage, g->q, pb->q_elems * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
    return -1;
  transpose_q(pb, g->stage, q, 0);
  return 0;
}

void psgd_gpu_free(psgd_bucket_t *pb) {
  psgd_gpu_t *g = pb->gpu;
  if (!g) return;
  cudaFree(g->error);
  cudaFree(g->q);
  cudaFree(g->wire);
  cudaFree(g->tau);
  cudaFree(g->work);
  cudaFree(g->info);
  if (g->solver) cusolverDnDestroy(g->solver);
  if (g->blas) cublasDestroy(g->blas);
  free(g->stage);
  free(g);
  pb->gpu = NULL;
}
