/* gpu_powersgd.c (under mpirun, 1 or 2 ranks): the PowerSGD hook's GPU path
 * (gpu/ddp_hook_powersgd_gpu.c: cuBLAS, cuSOLVER QR, hv_cuda.h) against its CPU path
 * (ddp_hook_powersgd.c, which test_powersgd.c holds to a float64 reference), on the
 * same random gradients. test_powersgd.c's model twice, one moved to the GPU, each in
 * a DDP with powersgd:rank=2,start=1,seed=5 (conv 6x18 and linear 12x96 compressed,
 * the rest plain):
 *  1. Steps 0-4 (step 0 the plain average, then compressed with warm start and error
 *     feedback): the averaged gradients and each rank's error buffer of the GPU equal
 *     the CPU's within TOL of the largest value; Q too, column by column up to its
 *     sign (Householder QR and Gram-Schmidt may give a basis vector either sign; the
 *     result P P^T M does not depend on it).
 *  2. The GPU's error bookkeeping is exact: e_new == fl(fl(g + e_old) - out) bit for
 *     bit on the compressed weights, 0 elsewhere.
 *  3. The CPU hook's state saved after step 2, loaded into a new GPU DDP (the host
 *     layout of the checkpoint, Q row-major, transposed on the way in), with
 *     ddp_set_step(3): steps 3 and 4 equal the CPU's within TOL.
 * Without a GPU or driver on some rank (gpu_present.h) every rank reports skipped
 * (exit 77); a GPU that cannot be selected fails every rank (exit 1). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddp.h"
#include "ddp_hooks.h"
#include "device.h"
#include "gpu_present.h"
#include "gpu_test_start.h"
#include "gpu_test_util.h"
#include "model.h"
#include "model_gpu.h"
#include "rng.h"

enum { STEPS = 5 };
static const double TOL = 2e-4;
static const char *const SPEC = "powersgd:rank=2,start=1,seed=5";

static model_t *make_model(void) {
  model_t *m = model_create(2, 4, 4);
  int id = model_add_conv2d(m, "conv", -1, 6, 3, 1, 1, 1);
  id = model_add_batchnorm2d(m, "bn", id);
  id = model_add_flatten(m, "flat", id);
  id = model_add_linear(m, "fc1", id, 12, 1);
  id = model_add_linear(m, "fc2", id, 3, 1);
  if (id < 0 || model_finalize(m, 2, INIT_PYTORCH_DEFAULT, 1)) {
    fprintf(stderr, "model: %s\n", m->err);
    exit(2);
  }
  return m;
}

/* Rank q's gradient at step t. */
static void grads_of(int q, int t, size_t n, real_t *g) {
  rng_t r;
  rng_seed(&r, 1000 + (uint64_t)t * 31 + (uint64_t)q);
  for (size_t i = 0; i < n; i++) g[i] = (real_t)rng_normal(&r);
}

static ddp_t *make_ddp(hv_comm_t *comm, model_t *m) {
  char err[512];
  ddp_hook_spec_t spec;
  ddp_comm_hook_t hook;
  ddp_t *d = ddp_create(comm, m, NULL, err, sizeof err);
  CHECK(d != NULL, "ddp_create: %s", err);
  if (!d) return NULL;
  CHECK(ddp_hook_spec_parse(SPEC, &spec, err, sizeof err) == 0 && ddp_hook_make(&spec, &hook, err, sizeof err) == 0,
        "%s", err);
  CHECK(ddp_register_comm_hook(d, &hook) == 0, "%s", ddp_error(d));
  return d;
}

/* One step of both: this rank's gradients of step t in, the averages out. */
static void step(ddp_t *d, model_t *m, int rank, int t, real_t *host) {
  grads_of(rank, t, m->n_params, host);
  if (m->dev->kind == DEVICE_CPU) memcpy(m->grads, host, m->n_params * sizeof *host);
  else CHECK(model_gpu_upload(m->grads, host, m->n_params * sizeof *host) == 0);
  CHECK(ddp_reduce_grads(d) == 0 && ddp_wait(d) == 0, "step %d: %s", t, ddp_error(d));
}

typedef struct { size_t off, rows, cols, q_off; } mat_t;

int main(int argc, char **argv) {
  setenv("HV_CUDNN_TF32", "0", 1);
  hv_comm_t *comm = NULL;
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "hv_init failed: %s\n", hv_comm_last_error(NULL));
    return 2;
  }
  int rank, size, local;
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  hv_comm_local_rank(comm, &local);
  model_t *cpu = make_model(), *gpu = make_model();
  const int start_rc = gpu_test_start("gpu_powersgd", rank, local, gpu);
  if (start_rc) {
    model_free(cpu), model_free(gpu);
    hv_shutdown(comm);
    return start_rc;
  }
  const size_t n = cpu->n_params;
  /* The compressed matrices as the hook plans them at rank 2 (test_powersgd.c). */
  mat_t mats[8];
  int nm = 0;
  size_t q_elems = 0;
  for (int i = 0; i < cpu->n_layers; i++) {
    const layer_t *l = &cpu->layers[i];
    if ((l->kind == LAYER_CONV2D || l->kind == LAYER_LINEAR) && l->weight_count) {
      const size_t rows = (size_t)l->out_ch, cols = l->weight_count / rows;
      if ((double)rows * cols > 2.0 * (rows + cols) * 2) {
        mats[nm++] = (mat_t){l->param_off, rows, cols, q_elems};
        q_elems += cols * 2;
      }
    }
  }
  CHECK(nm == 2, "compressed matrices: %d (conv and fc1 expected)", nm);

  ddp_t *dc = make_ddp(comm, cpu), *dg = make_ddp(comm, gpu);
  if (!dc || !dg) return 1;
  const size_t sc = ddp_hook_state_count(dc);
  CHECK(sc == 1 + n + q_elems && ddp_hook_state_count(dg) == sc, "state counts %zu and %zu, expected %zu", sc,
        ddp_hook_state_count(dg), 1 + n + q_elems);
  real_t *g = malloc(n * sizeof *g), *sc_state = malloc(sc * sizeof(real_t)), *sg_state = malloc(sc * sizeof(real_t));
  real_t *e_old = calloc(n, sizeof *e_old), *saved = malloc(sc * sizeof(real_t)), *cpu_out[2];
  double worst_out = 0, worst_e = 0, worst_q = 0;
  for (int t = 0; t < STEPS; t++) {
    step(dc, cpu, rank, t, g);
    step(dg, gpu, rank, t, g);
    real_t *out = host_copy(gpu->grads, n);
    worst_out = fmax(worst_out, maxrel(out, cpu->grads, n));
    if (t >= 3) cpu_out[t - 3] = memcpy(malloc(n * sizeof(real_t)), cpu->grads, n * sizeof(real_t));
    ddp_hook_state_copy(dc, sc_state, 0);
    ddp_hook_state_copy(dg, sg_state, 0);
    if (t == 2) memcpy(saved, sc_state, sc * sizeof(real_t));
    CHECK(sg_state[0] == sc_state[0], "step %d: Q initialised flags %g (GPU) and %g (CPU)", t, (double)sg_state[0],
          (double)sc_state[0]);
    const real_t *ec = sc_state + 1, *eg = sg_state + 1, *qc = ec + n, *qg = eg + n;
    if (t >= 1) {
      worst_e = fmax(worst_e, maxrel(eg, ec, n));
      for (int k = 0; k < nm; k++) /* each column of Q, up to its sign */
        for (size_t j = 0; j < 2; j++) {
          double dot = 0, top = 1e-30, d = 0;
          for (size_t c = 0; c < mats[k].cols; c++) dot += (double)qg[mats[k].q_off + c * 2 + j] * qc[mats[k].q_off + c * 2 + j];
          const double sign = dot < 0 ? -1 : 1;
          for (size_t c = 0; c < mats[k].cols; c++) {
            const double a = qg[mats[k].q_off + c * 2 + j], b = qc[mats[k].q_off + c * 2 + j];
            d = fmax(d, fabs(sign * a - b)), top = fmax(top, fabs(b));
          }
          worst_q = fmax(worst_q, d / top);
        }
      /* exact bookkeeping on the GPU: e_new = fl(fl(g + e_old) - out) on the matrices, else 0 */
      size_t bad = 0;
      for (size_t i = 0; i < n; i++) {
        int compressed = 0;
        for (int k = 0; k < nm; k++) compressed |= i >= mats[k].off && i < mats[k].off + mats[k].rows * mats[k].cols;
        const real_t xi = g[i] + e_old[i];
        const real_t want = compressed ? xi - out[i] : 0;
        if (memcmp(&want, &eg[i], sizeof want)) bad++;
      }
      CHECK(bad == 0, "step %d: %zu GPU error entries differ from fl(fl(g + e_old) - out)", t, bad);
    }
    memcpy(e_old, eg, n * sizeof *e_old);
    free(out);
  }
  if (rank == 0)
    printf("gpu powersgd rank 2, N=%d, %d steps, GPU against CPU: max rel diff out %.3g, error %.3g, Q (up to "
           "sign) %.3g (bound %.0e)\n", size, STEPS, worst_out, worst_e, worst_q, TOL);
  CHECK(worst_out <= TOL && worst_e <= TOL && worst_q <= TOL);
  ddp_free(dc), ddp_free(dg);

  /* 3. The CPU's state after step 2 resumes on the GPU. */
  dg = make_ddp(comm, gpu);
  double worst_resume = 0;
  if (dg) {
    ddp_set_step(dg, 3);
    ddp_hook_state_copy(dg, saved, 1);
    for (int t = 3; t < STEPS; t++) {
      step(dg, gpu, rank, t, g);
      real_t *out = host_copy(gpu->grads, n);
      worst_resume = fmax(worst_resume, maxrel(out, cpu_out[t - 3], n));
      free(out);
    }
    ddp_free(dg);
  }
  if (rank == 0) printf("gpu powersgd resumed from the CPU's state of step 2: max rel diff %.3g\n", worst_resume);
  CHECK(worst_resume <= TOL);

  free(g), free(sc_state), free(sg_state), free(e_old), free(saved), free(cpu_out[0]), free(cpu_out[1]);
  model_free(cpu), model_free(gpu);
  int failures = check_failures;
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  hv_shutdown(comm);
  return failures ? 1 : 0;
}
