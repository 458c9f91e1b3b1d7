/* test_ddp.c (under mpirun, N ranks): DDP equivalence. Every rank also trains a
 * single-process reference on the whole global batch B and compares after K steps:
 *  1. ConvNet without batch norm: N ranks with B/N images each == 1 process with B.
 *  2. ConvNet with batch norm (statistics local per rank, as PyTorch DDP): N ranks ==
 *     1 process accumulating the gradients of the same N micro-batches.
 *  3. Gradient accumulation: 2 micro-batches per step, the first without sync.
 *  4. Every rank holds bit-identical parameters (allreduce MIN == MAX == local).
 *  5. Buckets: reverse layer order, contiguous, small first bucket submitted during
 *     backward before the last one.
 *  6. WRN-10-1 (residual graph, batch norm) on noise images: as 2.
 * Bound: max |p_ddp - p_ref| <= TOL * max(1, max |p_ref|); TOL is 1e-10 in float64 and
 * 1e-5 in float32 (summation order differs between the ranks' sums and one sum). */
#include <stdio.h>
#include <stdlib.h>

#include "batch.h"
#include "check.h"
#include "data_cifar.h"
#include "data_mnist.h"
#include "ddp.h"
#include "ddp_test_util.h"
#include "models.h"
#include "optim.h"
#include "rng.h"

#if HV_REAL_F64
#define TOL 1e-10
#else
#define TOL 1e-5
#endif

enum { B = 16, K = 4 };

static hv_comm_t *comm;
static int rank, size;
static real_t *xs; /* (K * B, image) the global batches */
static uint8_t *ys;
static size_t IMG = 784;
/* 0: the ConvNet on MNIST; 1: WRN-10-1 (residual graph, 1x1 shortcuts) on 3x8x8 noise */
static int use_wrn;

static model_t *make_model(int with_bn, int batch, uint64_t seed) {
  char err[256];
  model_t *m = use_wrn ? model_wrn_create(10, 1, 10, 0, 3, 8, 8, batch, seed, err, sizeof err)
                       : model_convnet_create(10, with_bn, batch, seed, err, sizeof err);
  if (!m) {
    fprintf(stderr, "rank %d: %s\n", rank, err);
    exit(2);
  }
  return m;
}


/* DDP run: per step, `micro` micro-batches of B/(N*micro) images each. */
static int never_sync; /* negative control: DDP that never communicates */

static model_t *run_ddp(int with_bn, int micro, const ddp_config_t *cfg, ddp_t **out_d) {
  char err[512];
  const int local = B / size, mb = local / micro;
  model_t *m = make_model(with_bn, mb, 100 + (uint64_t)rank);
  ddp_t *d = ddp_create(comm, m, cfg, err, sizeof err);
  if (!d) {
    fprintf(stderr, "rank %d: %s\n", rank, err);
    exit(2);
  }
  sgd_t o;
  ddp_test_sgd(&o, m);
  for (int s = 0; s < K; s++) {
    model_zero_grad(m);
    for (int u = 0; u < micro; u++) {
      const size_t first = (size_t)s * B + (size_t)rank * local + (size_t)u * mb;
      model_forward(m, xs + first * IMG, mb, 1);
      model_loss(m, ys + first, (real_t)1.0 / local, NULL);
      if (ddp_backward(d, u == micro - 1 && !never_sync)) fprintf(stderr, "%s\n", ddp_error(d));
      if (u < micro - 1) {
        for (int b = 0; b < ddp_num_buckets(d); b++) CHECK(ddp_bucket_launch_layer(d, b) == -1);
      }
    }
    CHECK(ddp_wait(d) == 0);
    sgd_step(&o, m);
  }
  sgd_free(&o);
  if (out_d) *out_d = d;
  else ddp_free(d);
  return m;
}

/* Reference: one process, step s over images [s*B, (s+1)*B) in `parts` micro-batches
 * (batch-norm statistics per micro-batch), gradient = mean over B. */
static model_t *run_ref(int with_bn, int parts) {
  const int mb = B / parts;
  model_t *m = make_model(with_bn, mb, 100);
  sgd_t o;
  ddp_test_sgd(&o, m);
  for (int s = 0; s < K; s++) {
    model_zero_grad(m);
    for (int u = 0; u < parts; u++) {
      const size_t first = (size_t)s * B + (size_t)u * mb;
      model_forward(m, xs + first * IMG, mb, 1);
      model_loss(m, ys + first, (real_t)1.0 / B, NULL);
      model_backward(m, NULL, NULL);
    }
    sgd_step(&o, m);
  }
  sgd_free(&o);
  return m;
}

static void check_identical(model_t *m) {
  const hv_dtype_t dt = HV_REAL_F64 ? HV_FLOAT64 : HV_FLOAT32;
  real_t *mn = malloc(sizeof(real_t) * m->n_params), *mx = malloc(sizeof(real_t) * m->n_params);
  CHECK(hv_allreduce(comm, "test.min", m->params, mn, m->n_params, dt, HV_MIN, NULL) == HV_SUCCESS);
  CHECK(hv_allreduce(comm, "test.max", m->params, mx, m->n_params, dt, HV_MAX, NULL) == HV_SUCCESS);
  CHECK(memcmp(mn, m->params, sizeof(real_t) * m->n_params) == 0);
  CHECK(memcmp(mx, m->params, sizeof(real_t) * m->n_params) == 0);
  free(mn);
  free(mx);
}

static void report(const char *what, double diff) {
  if (rank == 0) printf("%-40s N=%d max rel diff %.3g (bound %.0e)\n", what, size, diff, TOL);
  CHECK(diff <= TOL);
}

int main(int argc, char **argv) {
  if (ddp_test_init(&argc, &argv, &comm, &rank, &size)) return 2;
  if (B % (2 * size) != 0) {
    fprintf(stderr, "run with 1, 2, 4 or 8 ranks\n");
    hv_shutdown(comm);
    return 2;
  }
  if (ddp_test_mnist(K * B, &xs, &ys)) return 2;

  model_t *ref = run_ref(0, 1);
  ddp_config_t small = {.first_bucket_bytes = 4096, .bucket_bytes = 32768};
  ddp_t *d;
  model_t *m = run_ddp(0, 1, &small, &d);
  report("no BN: N x B/N vs 1 x B", ddp_test_max_diff(m, ref));
  check_identical(m);
  /* Buckets: from the end of the flat array down to 0, contiguous, >= 3 of them, the
   * first completed (and submitted) at a later layer than the last, i.e. earlier in
   * backward. */
  const int nb = ddp_num_buckets(d);
  CHECK(nb >= 3);
  size_t lo, hi, prev_lo = m->n_params;
  for (int b = 0; b < nb; b++) {
    ddp_bucket_range(d, b, &lo, &hi);
    CHECK(hi == prev_lo && lo < hi);
    prev_lo = lo;
  }
  CHECK(prev_lo == 0);
  CHECK(ddp_bucket_launch_layer(d, 0) > ddp_bucket_launch_layer(d, nb - 1));
  CHECK(ddp_bucket_launch_layer(d, nb - 1) == 0);
  ddp_free(d);
  model_free(m);

  /* The comparison can fail: without communication the ranks drift from the
   * reference by far more than the bound (when there is more than one rank). */
  if (size > 1) {
    never_sync = 1;
    m = run_ddp(0, 1, NULL, NULL);
    CHECK(ddp_test_max_diff(m, ref) > 1000 * TOL);
    never_sync = 0;
    model_free(m);
  }

  m = run_ddp(0, 2, NULL, NULL);
  report("no BN, accumulate 2 micro-batches", ddp_test_max_diff(m, ref));
  check_identical(m);
  model_free(m);
  model_free(ref);

  ref = run_ref(1, size);
  m = run_ddp(1, 1, NULL, NULL);
  report("BN (local stats) vs 1 x N micro-batches", ddp_test_max_diff(m, ref));
  check_identical(m);
  model_free(m);
  model_free(ref);

  /* WideResNet: the DAG (two consumers per block input, shortcut convs added after
   * the block's conv2) through the hooks, with batch norm, against accumulation. */
  use_wrn = 1;
  IMG = 3 * 8 * 8;
  {
    rng_t r;
    rng_seed(&r, 77);
    for (size_t i = 0; i < (size_t)K * B * IMG; i++) xs[i] = (real_t)rng_normal(&r);
    for (int i = 0; i < K * B; i++) ys[i] = (uint8_t)rng_below(&r, 10);
  }
  ref = run_ref(1, size);
  ddp_config_t tiny = {.first_bucket_bytes = 2048, .bucket_bytes = 16384};
  m = run_ddp(1, 1, &tiny, &d);
  report("WRN-10-1 (BN, residual) vs N micro-batches", ddp_test_max_diff(m, ref));
  check_identical(m);
  CHECK(ddp_num_buckets(d) >= 4);
  ddp_free(d);
  model_free(m);
  model_free(ref);

  free(xs);
  free(ys);
  int failures = check_failures;
  hv_shutdown(comm);
  if (failures) fprintf(stderr, "rank %d: %d check(s) failed\n", rank, failures);
  return failures ? 1 : 0;
}
