/* gpu_int8_hook.c (under mpirun, 1 or 2 ranks): the int8 hook's GPU path
 * (gpu/ddp_hook_int8_gpu.c, kernels/cuda/int8_quant.cu, hv_allgather_cuda) against its
 * CPU path (ddp_hook_int8.c, which test_int8_hook.c holds to its bounds), on the same
 * random gradients: test_powersgd.c's model twice, one moved to the GPU, each in a DDP
 * with int8:chunk=7 (uneven chunks, the last one short).
 *  1. Steps 0-3, with the first chunk all zeros at step 0 (scale 0) and one chunk of
 *     each step scaled by 1e-30 (small scales): the averaged gradients and each rank's
 *     residual of the GPU equal the CPU's bit for bit (the kernels spell out the CPU's
 *     roundings and sum the ranks in the same order).
 *  2. The CPU's residual after step 1 loaded into a new GPU DDP: steps 2 and 3 equal
 *     the CPU's bit for bit.
 * Without a GPU or driver on some rank (gpu_present.h) every rank reports skipped
 * (exit 77); a GPU that cannot be selected fails every rank (exit 1). */
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

enum { STEPS = 4, CHUNK = 7 };

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

/* Rank q's gradient at step t: normal values, chunk 3 scaled by 1e-30, chunk 0 zero at step 0. */
static void grads_of(int q, int t, size_t n, real_t *g) {
  rng_t r;
  rng_seed(&r, 2000 + (uint64_t)t * 31 + (uint64_t)q);
  for (size_t i = 0; i < n; i++) g[i] = (real_t)rng_normal(&r);
  for (size_t i = 3 * CHUNK; i < 4 * CHUNK && i < n; i++) g[i] *= (real_t)1e-30;
  if (t == 0) memset(g, 0, CHUNK * sizeof *g);
}

static ddp_t *make_ddp(hv_comm_t *comm, model_t *m) {
  char err[512];
  ddp_hook_spec_t spec;
  ddp_comm_hook_t hook;
  ddp_t *d = ddp_create(comm, m, NULL, err, sizeof err);
  CHECK(d != NULL, "ddp_create: %s", err);
  if (!d) return NULL;
  CHECK(ddp_hook_spec_parse("int8:chunk=7", &spec, err, sizeof err) == 0 &&
            ddp_hook_make(&spec, &hook, err, sizeof err) == 0, "%s", err);
  CHECK(ddp_register_comm_hook(d, &hook) == 0, "%s", ddp_error(d));
  return d;
}

static void step(ddp_t *d, model_t *m, int rank, int t, real_t *host) {
  grads_of(rank, t, m->n_params, host);
  if (m->dev->kind == DEVICE_CPU) memcpy(m->grads, host, m->n_params * sizeof *host);
  else CHECK(model_gpu_upload(m->grads, host, m->n_params * sizeof *host) == 0);
  CHECK(ddp_reduce_grads(d) == 0 && ddp_wait(d) == 0, "step %d: %s", t, ddp_error(d));
}

static size_t differing(const real_t *a, const real_t *b, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], sizeof *a) != 0;
  return bad;
}

int main(int argc, char **argv) {
  hv_comm_t *comm = NULL;
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "hv_init failed: %s\n", hv_comm_last_error(NULL));
    return 2;
  }
  int rank, local;
  hv_comm_rank(comm, &rank);
  hv_comm_local_rank(comm, &local);
  model_t *cpu = make_model(), *gpu = make_model();
  const int start_rc = gpu_test_start("gpu_int8_hook", rank, local, gpu);
  if (start_rc) {
    model_free(cpu), model_free(gpu);
    hv_shutdown(comm);
    return start_rc;
  }
  const size_t n = cpu->n_params;
  ddp_t *dc = make_ddp(comm, cpu), *dg = make_ddp(comm, gpu);
  if (!dc || !dg) return 1;
  const size_t sc = ddp_hook_state_count(dc);
  CHECK(sc == n && ddp_hook_state_count(dg) == n, "state counts %zu and %zu, expected %zu", sc,
        ddp_hook_state_count(dg), n);
  real_t *g = malloc(n * sizeof *g), *ec = malloc(n * sizeof *ec), *eg = malloc(n * sizeof *eg);
  real_t *saved = malloc(n * sizeof *saved), *cpu_out[2];
  for (int t = 0; t < STEPS; t++) {
    step(dc, cpu, rank, t, g);
    step(dg, gpu, rank, t, g);
    real_t *out = host_copy(gpu->grads, n);
    CHECK(differing(out, cpu->grads, n) == 0, "step %d: %zu of %zu averaged gradients differ from the CPU's", t,
          differing(out, cpu->grads, n), n);
    if (t >= 2) cpu_out[t - 2] = memcpy(malloc(n * sizeof(real_t)), cpu->grads, n * sizeof(real_t));
    ddp_hook_state_copy(dc, ec, 0);
    ddp_hook_state_copy(dg, eg, 0);
    CHECK(differing(eg, ec, n) == 0, "step %d: %zu of %zu residuals differ from the CPU's", t, differing(eg, ec, n), n);
    if (t == 1) memcpy(saved, ec, n * sizeof *ec);
    free(out);
  }
  ddp_free(dc), ddp_free(dg);
  dg = make_ddp(comm, gpu);
  if (dg) {
    ddp_hook_state_copy(dg, saved, 1);
    for (int t = 2; t < STEPS; t++) {
      step(dg, gpu, rank, t, g);
      real_t *out = host_copy(gpu->grads, n);
      CHECK(differing(out, cpu_out[t - 2], n) == 0, "resumed step %d: %zu gradients differ from the CPU's", t,
            differing(out, cpu_out[t - 2], n));
      free(out);
    }
    ddp_free(dg);
  }
  if (rank == 0) printf("gpu int8 hook: %d steps and a resume from the CPU's residual, bit for bit: %s\n", STEPS,
                        check_failures ? "FAILED" : "ok");
  free(g), free(ec), free(eg), free(saved), free(cpu_out[0]), free(cpu_out[1]);
  model_free(cpu), model_free(gpu);
  int failures = check_failures;
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  hv_shutdown(comm);
  return failures ? 1 : 0;
}
