/* gpu_ddp_step.c (under mpirun, N ranks): DDP of a model on the GPU against DDP of
 * the same model on the CPU. Every rank builds WRN-10-1 twice from one seed, moves one
 * to its GPU, and wraps each in DDP; both train 3 steps (SGD, momentum, weight decay)
 * on this rank's own images of a global batch. After each step the GPU model's
 * averaged gradients and parameters equal the CPU model's within 1e-3 of the largest
 * value (cuDNN's algorithms sum in other orders; TF32 off), 1e-2 when HV_COMPRESSION
 * sends the GPU's buckets as fp16 or bf16 (the CPU engine's too). Ranks see different
 * images, so a GPU DDP that did not average (or averaged the wrong range) fails by
 * O(1). Then: the GPU parameters are bit-identical on every rank; the running
 * statistics broadcast from rank 0 on the device; a checkpoint written from the GPU
 * model loads into a CPU model with the same bits, and back into the GPU model;
 * model_evaluate on the GPU gives the CPU's loss and accuracy.
 * `gpu_ddp_step --sync-bn`: both DDPs with SyncBatchNorm (ddp_set_sync_bn): the GPU's
 * kernels and device allreduces (batchnorm_sync_gpu.cu) against the CPU's, which
 * test_sync_bn.c holds to the single-process batch; and the running statistics agree
 * between the ranks before any broadcast.
 * Ranks share a GPU when there are fewer GPUs than ranks: run them as separate nodes
 * (HV_RANKS_PER_NODE=1), as NCCL needs one GPU per rank of a node. Without a GPU or
 * driver on some rank (gpu_present.h) every rank reports skipped (exit 77); a GPU that
 * cannot be selected or a model that fails to move to it fails every rank (exit 1). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "checkpoint.h"
#include "ddp.h"
#include "evaluate.h"
#include "gpu_present.h"
#include "gpu_test_start.h"
#include "gpu_test_util.h"
#include "model_gpu.h"
#include "models.h"
#include "optim.h"

enum { B = 4, SIDE = 16, STEPS = 3 };

int main(int argc, char **argv) {
  setenv("HV_CUDNN_TF32", "0", 1);
  hv_comm_t *comm = NULL;
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "hv_init failed: %s\n", hv_comm_last_error(NULL));
    return 2;
  }
  int sync_bn = 0;
  for (int i = 1; i < argc; i++) sync_bn |= !strcmp(argv[i], "--sync-bn");
  int rank, size, local;
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  hv_comm_local_rank(comm, &local);
  char err[512];
  model_t *cpu = model_wrn_create(10, 1, 10, 0.0, 3, SIDE, SIDE, B, 5, err, sizeof err);
  model_t *gpu = model_wrn_create(10, 1, 10, 0.0, 3, SIDE, SIDE, B, 5, err, sizeof err);
  if (!cpu || !gpu) {
    fprintf(stderr, "rank %d: %s\n", rank, err);
    return 2;
  }
  const int start_rc = gpu_test_start("gpu_ddp_step", rank, local, gpu);
  if (start_rc) {
    model_free(cpu), model_free(gpu);
    hv_shutdown(comm);
    return start_rc;
  }
  /* This rank's images: a smooth pattern that differs per rank and step. */
  const size_t nx = (size_t)B * 3 * SIDE * SIDE;
  real_t *x = malloc(nx * sizeof *x), *dx = NULL;
  uint8_t y[B];
  CHECK(model_gpu_alloc((void **)&dx, nx * sizeof *dx) == 0);
  ddp_t *dc = ddp_create(comm, cpu, NULL, err, sizeof err);
  ddp_t *dg = dc ? ddp_create(comm, gpu, NULL, err, sizeof err) : NULL;
  if (!dc || !dg) fprintf(stderr, "rank %d: %s\n", rank, err);
  CHECK(dc && dg);
  if (dc && dg) ddp_set_sync_bn(dc, sync_bn), ddp_set_sync_bn(dg, sync_bn);
  sgd_t oc, og;
  CHECK(sgd_init(&oc, cpu, 0.01, 0.9, 5e-4, 0, err, sizeof err) == 0);
  CHECK(sgd_init(&og, gpu, 0.01, 0.9, 5e-4, 0, err, sizeof err) == 0);
  const char *wire = getenv("HV_COMPRESSION");
  const double tol = wire && strcmp(wire, "none") != 0 ? 1e-2 : 1e-3;
  for (int step = 0; dc && dg && step < STEPS; step++) {
    for (size_t i = 0; i < nx; i++) x[i] = (real_t)sin((double)i * 0.37 + 1.3 * rank + 0.7 * step);
    for (int i = 0; i < B; i++) y[i] = (uint8_t)((i * 7 + rank * 3 + step) % 10);
    CHECK(model_gpu_upload(dx, x, nx * sizeof *x) == 0);
    model_zero_grad(cpu), model_zero_grad(gpu);
    CHECK(model_forward(cpu, x, B, 1) != NULL);
    CHECK(model_forward(gpu, dx, B, 1) != NULL);
    const double lc = model_loss(cpu, y, (real_t)1.0 / B, NULL), lg = model_loss(gpu, y, (real_t)1.0 / B, NULL);
    CHECK_NEAR(lg, lc, 1e-4);
    CHECK(ddp_backward(dc, 1) == 0 && ddp_wait(dc) == 0);
    CHECK(ddp_backward(dg, 1) == 0 && ddp_wait(dg) == 0);
    real_t *grads = host_copy(gpu->grads, gpu->n_params);
    const double gd = maxrel(grads, cpu->grads, cpu->n_params);
    if (gd > tol) fprintf(stderr, "rank %d step %d: gradients differ by %g of the largest\n", rank, step, gd);
    CHECK(gd <= tol);
    sgd_step(&oc, cpu);
    sgd_step(&og, gpu);
    real_t *params = host_copy(gpu->params, gpu->n_params);
    CHECK(maxrel(params, cpu->params, cpu->n_params) <= tol);
    CHECK(!gpu->failed);
    free(grads), free(params);
  }
  /* The same parameters, to the bit, on every rank. */
  real_t *p = host_copy(gpu->params, gpu->n_params);
  real_t *lo = malloc(gpu->n_params * sizeof *lo), *hi = malloc(gpu->n_params * sizeof *hi);
  const MPI_Datatype mt = sizeof(real_t) == 8 ? MPI_DOUBLE : MPI_FLOAT;
  MPI_Allreduce(p, lo, (int)gpu->n_params, mt, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(p, hi, (int)gpu->n_params, mt, MPI_MAX, MPI_COMM_WORLD);
  CHECK(memcmp(lo, p, gpu->n_params * sizeof *p) == 0 && memcmp(hi, p, gpu->n_params * sizeof *p) == 0);
  real_t *b0 = malloc(gpu->n_buffers * sizeof *b0 + sizeof *b0);
  if (sync_bn) { /* SyncBatchNorm: every rank's running statistics are the global batch's */
    real_t *own = host_copy(gpu->buffers, gpu->n_buffers);
    memcpy(b0, own, gpu->n_buffers * sizeof *b0);
    MPI_Bcast(b0, (int)gpu->n_buffers, mt, 0, MPI_COMM_WORLD);
    CHECK(maxrel(own, b0, gpu->n_buffers) <= 1e-6);
    CHECK(maxrel(own, cpu->buffers, gpu->n_buffers) <= tol);
    free(own);
  }
  /* Running statistics differ per rank (local batch norm) until broadcast. */
  if (dg) CHECK(ddp_broadcast_buffers(dg) == 0);
  real_t *bufs = host_copy(gpu->buffers, gpu->n_buffers);
  memcpy(b0, bufs, gpu->n_buffers * sizeof *b0);
  MPI_Bcast(b0, (int)gpu->n_buffers, mt, 0, MPI_COMM_WORLD);
  CHECK(memcmp(b0, bufs, gpu->n_buffers * sizeof *b0) == 0);
  /* Checkpoint: GPU -> file -> CPU model bit-identical; file -> GPU model works too. */
  char path[64];
  snprintf(path, sizeof path, "/tmp/hv-gpu-ddp-%d.ckpt", rank);
  checkpoint_meta_t meta;
  memset(&meta, 0, sizeof meta);
  meta.step = STEPS;
  CHECK(checkpoint_save(path, gpu, &og, &meta, err, sizeof err) == 0);
  model_t *back = model_wrn_create(10, 1, 10, 0.0, 3, SIDE, SIDE, B, 99, err, sizeof err);
  sgd_t ob;
  CHECK(back && sgd_init(&ob, back, 0.1, 0.9, 5e-4, 0, err, sizeof err) == 0);
  checkpoint_meta_t got;
  CHECK(back && checkpoint_load(path, back, &ob, &got, err, sizeof err) == 0 && got.step == STEPS);
  if (back) {
    CHECK(memcmp(back->params, p, gpu->n_params * sizeof *p) == 0);
    CHECK(memcmp(back->buffers, bufs, gpu->n_buffers * sizeof *bufs) == 0);
    real_t *mom = host_copy(og.momentum_buf, og.n);
    CHECK(memcmp(ob.momentum_buf, mom, og.n * sizeof *mom) == 0);
    free(mom);
  }
  sgd_step(&og, gpu); /* move the parameters away, then load them back onto the device */
  CHECK(checkpoint_load(path, gpu, &og, &got, err, sizeof err) == 0);
  real_t *p2 = host_copy(gpu->params, gpu->n_params);
  CHECK(memcmp(p2, p, gpu->n_params * sizeof *p) == 0);
  remove(path);
  /* Evaluation on the GPU against the CPU model that holds the same state. */
  if (back) {
    dataset_t ds = {.n = 2 * B + 1, .c = 3, .h = SIDE, .w = SIDE, .num_classes = 10};
    ds.pixels = malloc((size_t)ds.n * 3 * SIDE * SIDE);
    ds.labels = malloc((size_t)ds.n);
    for (size_t i = 0; i < (size_t)ds.n * 3 * SIDE * SIDE; i++) ds.pixels[i] = (uint8_t)(i * 37 % 251);
    int idx[2 * B + 1];
    for (int i = 0; i < ds.n; i++) ds.labels[i] = (uint8_t)(i % 10), idx[i] = i;
    eval_result_t ec, eg;
    CHECK(model_evaluate(back, &ds, idx, ds.n, NULL, &ec) == 0);
    CHECK(model_evaluate(gpu, &ds, idx, ds.n, NULL, &eg) == 0);
    CHECK(eg.count == ds.n && ec.count == ds.n);
    CHECK_NEAR(eg.loss_sum, ec.loss_sum, 1e-4);
    CHECK(eg.correct == ec.correct);
    free(ds.pixels), free(ds.labels);
    sgd_free(&ob);
    model_free(back);
  }
  free(p), free(p2), free(lo), free(hi), free(bufs), free(b0), free(x);
  model_gpu_release(dx);
  ddp_free(dc), ddp_free(dg);
  sgd_free(&oc), sgd_free(&og);
  model_free(cpu), model_free(gpu);
  int total = 0;
  MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("gpu_ddp_step on %d ranks: %d failures on all ranks\n", size, total);
  hv_shutdown(comm);
  return total ? 1 : 0;
}
