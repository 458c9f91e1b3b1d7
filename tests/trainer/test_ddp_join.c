/* test_ddp_join.c (under mpirun, N ranks): DDP with uneven inputs (ddp_join, hv_join)
 * against one process. Rank r runs K - r steps of b = B/N images each (its images of
 * step s are [s*B + r*b, +b)), then calls ddp_join. At step s the ranks still running
 * are 0 .. A_s - 1, so DDP's gradient is the mean over their A_s * b images: the
 * reference is one process whose step s is those images [s*B, s*B + A_s*b), with the
 * loss averaged over them. After the join every rank holds the model of rank 0 (it
 * ran longest): all ranks equal the reference within the bound, and each other.
 * A negative control runs the same steps with the average taken over all N ranks (the
 * joined ones counted as zeros): far from the reference.
 * Bound: max |p - p_ref| <= TOL * max(1, max |p_ref|); TOL 1e-10 in float64, 1e-5 in
 * float32 (the ranks' sums and one process's sum round differently). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "check.h"
#include "data_cifar.h"
#include "data_mnist.h"
#include "ddp.h"
#include "ddp_test_util.h"
#include "models.h"
#include "optim.h"

#if HV_REAL_F64
#define TOL 1e-10
#else
#define TOL 1e-5
#endif

enum { B = 16, K = 4 };
#define IMG 784

static hv_comm_t *comm;
static int rank, size;
static real_t *xs; /* (K * B, image) */
static uint8_t *ys;

static model_t *make_model(int batch) {
  char err[256];
  model_t *m = model_convnet_create(10, 0, batch, 100, err, sizeof err);
  if (!m) {
    fprintf(stderr, "rank %d: %s\n", rank, err);
    exit(2);
  }
  return m;
}


static int steps_of(int r) { return K - r < 1 ? 1 : K - r; }
static int active_at(int s) {
  int a = 0;
  for (int r = 0; r < size; r++) a += steps_of(r) > s;
  return a;
}

/* divide_by_all: the negative control (the joined ranks' zeros counted in the mean). */
static model_t *run_ref(int divide_by_all) {
  const int b = B / size;
  model_t *m = make_model(B);
  sgd_t o;
  ddp_test_sgd(&o, m);
  for (int s = 0; s < steps_of(0); s++) {
    const int a = active_at(s);
    model_zero_grad(m);
    model_forward(m, xs + (size_t)s * B * IMG, a * b, 1);
    model_loss(m, ys + (size_t)s * B, (real_t)1.0 / (divide_by_all ? size * b : a * b), NULL);
    model_backward(m, NULL, NULL);
    sgd_step(&o, m);
  }
  sgd_free(&o);
  return m;
}

/* Every rank's parameters are bitwise the same (allreduce MIN == MAX == local). */
static void check_identical(model_t *m, const char *when) {
  const hv_dtype_t dt = HV_REAL_F64 ? HV_FLOAT64 : HV_FLOAT32;
  real_t *mn = malloc(sizeof(real_t) * m->n_params), *mx = malloc(sizeof(real_t) * m->n_params);
  CHECK(hv_allreduce(comm, "test.min", m->params, mn, m->n_params, dt, HV_MIN, NULL) == HV_SUCCESS);
  CHECK(hv_allreduce(comm, "test.max", m->params, mx, m->n_params, dt, HV_MAX, NULL) == HV_SUCCESS);
  CHECK(!memcmp(mn, m->params, sizeof(real_t) * m->n_params) && !memcmp(mx, m->params, sizeof(real_t) * m->n_params),
        "rank %d: the ranks' parameters differ %s", rank, when);
  free(mn);
  free(mx);
}

/* Trains with uneven steps and joins; returns the largest relative difference from
 * ref at the join, then takes one more step on every rank. */
static double run_ddp(const model_t *ref) {
  char err[512];
  const int b = B / size;
  model_t *m = make_model(b);
  ddp_t *d = ddp_create(comm, m, &(ddp_config_t){.first_bucket_bytes = 4096, .bucket_bytes = 32768}, err, sizeof err);
  if (!d) {
    fprintf(stderr, "rank %d: %s\n", rank, err);
    exit(2);
  }
  sgd_t o;
  ddp_test_sgd(&o, m);
  for (int s = 0; s < steps_of(rank); s++) {
    model_zero_grad(m);
    const size_t first = (size_t)s * B + (size_t)rank * b;
    model_forward(m, xs + first * IMG, b, 1);
    model_loss(m, ys + first, (real_t)1.0 / b, NULL);
    CHECK(ddp_backward(d, 1) == 0, "rank %d step %d: %s", rank, s, ddp_error(d));
    CHECK(ddp_wait(d) == 0, "rank %d step %d: %s", rank, s, ddp_error(d));
    sgd_step(&o, m);
  }
  int last = -1;
  CHECK(ddp_join(d, &last) == 0, "rank %d: ddp_join: %s", rank, ddp_error(d));
  CHECK(last == 0, "rank %d: the last to join is rank %d, expected 0 (it ran %d steps)", rank, last, steps_of(0));
  const double diff = ddp_test_max_diff(m, ref);
  check_identical(m, "after ddp_join");
  /* The optimiser's state is the caller's: the last joiner's, as its parameters. */
  CHECK(o.has_buf, "rank %d: no momentum buffer after the steps", rank);
  CHECK(ddp_broadcast_array_from(d, "test.momentum", o.momentum_buf, o.n, last) == 0, "rank %d: %s", rank,
        ddp_error(d));
  /* Training goes on together after the join: one more step on every rank. */
  model_zero_grad(m);
  model_forward(m, xs, b, 1);
  model_loss(m, ys, (real_t)1.0 / b, NULL);
  CHECK(ddp_backward(d, 1) == 0 && ddp_wait(d) == 0, "rank %d: a step after the join: %s", rank, ddp_error(d));
  sgd_step(&o, m);
  check_identical(m, "a step after ddp_join");
  sgd_free(&o);
  ddp_free(d);
  model_free(m);
  return diff;
}

int main(int argc, char **argv) {
  if (ddp_test_init(&argc, &argv, &comm, &rank, &size)) return 2;
  if (B % size != 0 || size > K) {
    fprintf(stderr, "run with 1, 2 or 4 ranks\n");
    hv_shutdown(comm);
    return 2;
  }
  if (ddp_test_mnist(K * B, &xs, &ys)) return 2;

  model_t *ref = run_ref(0);
  const double diff = run_ddp(ref);
  if (rank == 0) printf("uneven steps (%d..%d per rank), ddp_join: N=%d max rel diff %.3g (bound %.0e)\n",
                        steps_of(size - 1), steps_of(0), size, diff, TOL);
  CHECK(diff <= TOL, "rank %d: %.3g from the reference", rank, diff);
  /* The comparison can fail: the mean taken over all N ranks is far from it. */
  if (size > 1) {
    model_t *control = run_ref(1);
    CHECK(ddp_test_max_diff(control, ref) > 1000 * TOL, "the negative control is within %.3g", ddp_test_max_diff(control, ref));
    model_free(control);
  }
  model_free(ref);
  free(xs);
  free(ys);
  int failures = check_failures;
  hv_shutdown(comm);
  if (failures) fprintf(stderr, "rank %d: %d check(s) failed\n", rank, failures);
  return failures ? 1 : 0;
}
