/* test_sync_bn.c (under mpirun, R ranks): SyncBatchNorm (ddp_set_sync_bn) equivalence.
 * Every rank trains WRN-10-1 (batch norm after every convolution, residual graph) on
 * its B/R images of each global batch with SyncBatchNorm through hv, and also a
 * single-process reference with plain batch norm on the whole B images; for K steps it
 * compares the forward output (its rows of the reference's), the loss (summed over
 * ranks), the gradients of every parameter (after DDP's average), the parameters after
 * each SGD step and, at the end, the running statistics (every rank's, synchronised by
 * SyncBatchNorm). Bound: max |a - ref| <= TOL * max |ref| per array.
 *
 * Each step starts from the reference's parameters and momentum (issue #24's 1e-6 in
 * float32): both batch norms sum each (image, channel) row the same way
 * (kernels/batchnorm_rows.h) and differ only in how the ranks' double sums associate,
 * so the forward outputs agree to the bit or nearly; what remains is float32 in the
 * convolutions' weight gradients (oneDNN sums a batch of B/R images, not B) and DDP's
 * float average. Left to run free for K steps those last-bit parameter differences are
 * amplified through the network (1.6e-6 on the outputs after 3 steps): that run is
 * held to the looser TOL_FREE. The gradients themselves are held to TOL_GRAD: their
 * largest difference is in the first convolution's weight gradient, a sum of
 * 1,024 products per weight with cancellation, which oneDNN associates by the CPU's
 * kernel and the batch (B/R images, not B) whether or not batch norm is synchronised:
 * 8.7e-7 of the array's largest value on an AVX-512 Xeon without FP16, 1.11e-6 on one
 * with AVX-512 FP16 (Sapphire Rapids), so 1e-6 held on one CPU and not the other.
 * The negative control: the same DDP without SyncBatchNorm misses the gradients by far
 * more than the bound.
 *
 * `test_sync_bn batch1`: SyncBatchNorm with a batch of 1 image on rank 0 (then on every
 * rank): the training forward fails on every rank with a message naming the cause, and
 * nothing hangs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddp.h"
#include "ddp_test_util.h"
#include "models.h"
#include "optim.h"
#include "rng.h"

#if HV_REAL_F64
#define TOL 1e-10
#define TOL_GRAD 1e-10
#define TOL_FREE 1e-10
#else
#define TOL 1e-6
#define TOL_GRAD 4e-6
#define TOL_FREE 1e-5
#endif

enum { B = 16, K = 3, CLASSES = 10, IC = 3, IH = 8, IW = 8 };
#define IMG ((size_t)IC * IH * IW)

static hv_comm_t *comm;
static int rank, size;
static real_t *xs; /* (K * B, image) */
static uint8_t *ys;

/* seed: rank 0's model is the one DDP broadcasts, and the reference's. */
static model_t *make_model(int batch, uint64_t seed) {
  char err[256];
  model_t *m = model_wrn_create(10, 1, CLASSES, 0, IC, IH, IW, batch, seed, err, sizeof err);
  if (!m) {
    fprintf(stderr, "rank %d: %s\n", rank, err);
    exit(2);
  }
  return m;
}


/* max |a[i] - ref[i]| / max |ref[i]| over n; *abs_out gets the largest absolute difference. */
static double rel_diff(const real_t *a, const real_t *ref, size_t n, double *abs_out) {
  double d = 0, mx = 0;
  for (size_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - ref[i]));
    mx = fmax(mx, fabs((double)ref[i]));
  }
  if (abs_out) *abs_out = fmax(*abs_out, d);
  return mx > 0 ? d / mx : d;
}

typedef struct worst {
  double rel, abs;
} worst_t;

static void note(worst_t *w, const real_t *a, const real_t *ref, size_t n) {
  w->rel = fmax(w->rel, rel_diff(a, ref, n, &w->abs));
}

/* The largest of v over the ranks. */
static double max_over_ranks(double v) {
  CHECK(hv_allreduce(comm, "test.max", &v, &v, 1, HV_FLOAT64, HV_MAX, NULL) == HV_SUCCESS);
  return v;
}

static void report(const char *what, const worst_t *w, double tol) {
  const double rel = max_over_ranks(w->rel), abs = max_over_ranks(w->abs);
  if (rank == 0)
    printf("  %-34s R=%d max rel diff %.3g, max abs diff %.3g (bound %.0e)\n", what, size, rel, abs, tol);
  CHECK(rel <= tol, "%s: rel diff %.3g > %.0e", what, rel, tol);
}

/* K steps of R ranks x B/R images (SyncBatchNorm when sync) against one process with B,
 * each from the reference's parameters and momentum (each_step) or free; checks the
 * differences against tol (the gradients against tol_grad) unless tol is 0; returns
 * the worst gradient difference (for the negative control). */
static double run(int sync, int each_step, double tol, double tol_grad) {
  const int local = B / size;
  model_t *ref = make_model(B, 100), *m = make_model(local, 100 + (uint64_t)rank);
  char err[512];
  ddp_t *d = ddp_create(comm, m, NULL, err, sizeof err);
  if (!d) {
    fprintf(stderr, "rank %d: %s\n", rank, err);
    exit(2);
  }
  ddp_set_sync_bn(d, sync);
  sgd_t oref, o;
  ddp_test_sgd(&oref, ref);
  ddp_test_sgd(&o, m);
  worst_t out = {0, 0}, loss = {0, 0}, grad = {0, 0}, par = {0, 0}, buf = {0, 0};
  for (int s = 0; s < K; s++) {
    const size_t first = (size_t)s * B;
    if (each_step && s > 0) {
      memcpy(m->params, ref->params, sizeof(real_t) * m->n_params);
      if (oref.has_buf) memcpy(o.momentum_buf, oref.momentum_buf, sizeof(real_t) * m->n_params);
    }
    model_zero_grad(ref);
    const real_t *yr = model_forward(ref, xs + first * IMG, B, 1);
    CHECK(yr != NULL);
    real_t lref = (real_t)model_loss(ref, ys + first, (real_t)1.0 / B, NULL);
    model_backward(ref, NULL, NULL);

    const size_t mine = first + (size_t)rank * local;
    model_zero_grad(m);
    const real_t *y = model_forward(m, xs + mine * IMG, local, 1);
    if (!y) {
      fprintf(stderr, "rank %d: %s\n", rank, m->err);
      exit(1);
    }
    note(&out, y, yr + (size_t)rank * local * CLASSES, (size_t)local * CLASSES);
    double l = model_loss(m, ys + mine, (real_t)1.0 / local, NULL);
    CHECK(hv_allreduce(comm, "test.loss", &l, &l, 1, HV_FLOAT64, HV_SUM, NULL) == HV_SUCCESS);
    real_t lsum = (real_t)l;
    note(&loss, &lsum, &lref, 1);
    CHECK(ddp_backward(d, 1) == 0, "%s", ddp_error(d));
    CHECK(ddp_wait(d) == 0, "%s", ddp_error(d));
    note(&grad, m->grads, ref->grads, m->n_params);
    sgd_step(&oref, ref);
    sgd_step(&o, m);
    note(&par, m->params, ref->params, m->n_params);
  }
  note(&buf, m->buffers, ref->buffers, m->n_buffers);
  if (tol > 0) {
    int bn = 0, blocked = 0;
    for (int i = 0; i < m->n_layers; i++)
      if (m->layers[i].kind == LAYER_BATCHNORM2D) bn++, blocked += m->layers[i].blocked;
    if (rank == 0)
      printf("%s, %d batch-norm layers, %d in the blocked layout, %d steps %s:\n", real_name(), bn, blocked, K,
             each_step ? "each from the reference's parameters" : "run free");
    report("forward outputs", &out, tol);
    report("loss (sum over the global batch)", &loss, tol);
    report("gradients (every parameter)", &grad, tol_grad);
    report(each_step ? "parameters after each step" : "parameters after the steps", &par, tol);
    report("running statistics", &buf, tol);
  }
  const double g = max_over_ranks(grad.rel);
  sgd_free(&oref);
  sgd_free(&o);
  ddp_free(d);
  model_free(m);
  model_free(ref);
  return g;
}

/* A batch of one image where `who` (-1: every rank): every rank's forward fails. */
static void batch_of_one(int who) {
  model_t *m = make_model(2, 100);
  char err[512];
  ddp_t *d = ddp_create(comm, m, NULL, err, sizeof err);
  if (!d) {
    fprintf(stderr, "rank %d: %s\n", rank, err);
    exit(2);
  }
  ddp_set_sync_bn(d, 1);
  const int n = who < 0 || who == rank ? 1 : 2;
  const real_t *y = model_forward(m, xs, n, 1);
  CHECK(y == NULL, "rank %d: a forward with a batch of 1 somewhere succeeded", rank);
  CHECK(strstr(m->err, "SyncBatchNorm") && strstr(m->err, "batch of 1 image"), "rank %d: message: %s", rank,
        m->err);
  if (rank == 0) printf("batch of 1 on %s: every rank fails: \"%s\"\n", who < 0 ? "every rank" : "rank 0", m->err);
  ddp_free(d);
  model_free(m);
}

int main(int argc, char **argv) {
  if (ddp_test_init(&argc, &argv, &comm, &rank, &size)) return 2;
  if (B % (2 * size) != 0) {
    fprintf(stderr, "run with 1, 2, 4 or 8 ranks\n");
    hv_shutdown(comm);
    return 2;
  }
  xs = malloc(sizeof(real_t) * K * B * IMG);
  ys = malloc(K * B);
  rng_t r;
  rng_seed(&r, 77);
  /* Not centred, so the batch means matter. */
  for (size_t i = 0; i < (size_t)K * B * IMG; i++) xs[i] = (real_t)(0.5 + rng_normal(&r));
  for (int i = 0; i < K * B; i++) ys[i] = (uint8_t)rng_below(&r, CLASSES);

  if (argc > 1 && !strcmp(argv[1], "batch1")) {
    batch_of_one(0);
    batch_of_one(-1);
  } else {
    run(1, 1, TOL, TOL_GRAD);
    run(1, 0, TOL_FREE, TOL_FREE);
    /* The comparison can fail: with per-rank statistics the gradients are not those
     * of the global batch. */
    if (size > 1) {
      const double g = run(0, 1, 0, 0);
      if (rank == 0) printf("without SyncBatchNorm: gradients differ by %.3g (must exceed %.0e)\n", g, 1000 * TOL);
      CHECK(g > 1000 * TOL);
    }
  }
  free(xs);
  free(ys);
  int failures = check_failures;
  hv_shutdown(comm);
  if (failures) fprintf(stderr, "rank %d: %d check(s) failed\n", rank, failures);
  return failures ? 1 : 0;
}
