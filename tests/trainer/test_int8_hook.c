/* test_int8_hook.c (under mpirun, 2 or 3 ranks): the int8 hook with error feedback.
 *  1. ddp_int8_quantize alone: scale a power of two, the smallest with 127 s >= max|x|;
 *     |residual| <= s / 2 unless clamped; s q + residual == x exactly (in float64, so
 *     bit for bit); a zero chunk gives scale 0; subnormal inputs included.
 *  2. The hook over 4 steps, chunk 100 (uneven last chunk): each rank's residual
 *     equals x - s q of a float64 reference quantisation of x = g + e_old, and the
 *     result equals the float64 average of every rank's s q within the float32 sum's
 *     rounding: (n + 1) 2^-24 sum_r |s_r q_r| / n.
 *  3. Error feedback telescopes: sum over steps of the results + the average of the
 *     final residuals == sum over steps of the average gradient (to rounding). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddp.h"
#include "ddp_hooks.h"
#include "model.h"
#include "rng.h"

enum { STEPS = 4, CHUNK = 100 };

static hv_comm_t *comm;
static int rank, size;

static void grads_of(int q, int t, size_t n, real_t *g) {
  rng_t r;
  rng_seed(&r, 500 + (uint64_t)t * 17 + (uint64_t)q);
  for (size_t i = 0; i < n; i++) g[i] = (real_t)(rng_normal(&r) * (i % 7 == 0 ? 1e-3 : 1.0));
}

/* float64 reference of one chunk's quantisation: s, and q into qd */
static double ref_quant(const double *x, size_t n, double *qd) {
  double most = 0;
  for (size_t i = 0; i < n; i++) most = fmax(most, fabs(x[i]));
  if (most == 0) {
    for (size_t i = 0; i < n; i++) qd[i] = 0;
    return 0;
  }
  double s = ldexp(1.0, (int)ceil(log2(most / 127.0)));
  if (s * 127 < most) s *= 2;
  if (s / 2 * 127 >= most) s /= 2;
  for (size_t i = 0; i < n; i++) qd[i] = fmax(-127, fmin(127, nearbyint(x[i] / s)));
  return s;
}

static void unit_quantize(void) {
  rng_t r;
  rng_seed(&r, 3);
  real_t x[300], x0[300];
  int8_t q[300];
  const double mags[] = {1.0, 1e-3, 3e5, 1e-40, 0.0};
  for (size_t k = 0; k < sizeof mags / sizeof *mags; k++) {
    double most = 0;
    for (int i = 0; i < 300; i++) {
      x0[i] = x[i] = (real_t)(rng_normal(&r) * mags[k]);
      most = fmax(most, fabs((double)x0[i]));
    }
    const double s = ddp_int8_quantize(x, 300, q);
    if (most == 0) {
      CHECK(s == 0);
      continue;
    }
    int e;
    CHECK(frexp(s, &e) == 0.5, "scale %g is not a power of two", s);
    CHECK(127 * s >= most && 127 * s / 2 < most, "scale %g for max %g", s, most);
    for (int i = 0; i < 300; i++) {
      CHECK((double)x[i] + s * q[i] == (double)x0[i], "magnitude %g: %.9g + %g * %d != %.9g", mags[k], (double)x[i],
            s, q[i], (double)x0[i]);
      CHECK(fabs((double)x[i]) <= s / 2, "residual %g above s/2 = %g", (double)x[i], s / 2);
    }
  }
}

int main(int argc, char **argv) {
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "hv_init failed: %s\n", hv_comm_last_error(NULL));
    return 2;
  }
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  unit_quantize();

  char err[512];
  model_t *m = model_create(1, 1, 30);
  int id = model_add_linear(m, "fc1", -1, 20, 1);
  id = model_add_linear(m, "fc2", id, 7, 1);
  if (id < 0 || model_finalize(m, 1, INIT_PYTORCH_DEFAULT, 1)) return 2;
  ddp_t *d = ddp_create(comm, m, NULL, err, sizeof err);
  ddp_hook_spec_t spec;
  ddp_comm_hook_t hook;
  CHECK(ddp_hook_spec_parse("int8:chunk=100", &spec, err, sizeof err) == 0, "%s", err);
  CHECK(ddp_hook_make(&spec, &hook, err, sizeof err) == 0 && ddp_register_comm_hook(d, &hook) == 0);
  const size_t n = m->n_params;
  real_t *g = malloc(n * sizeof *g), *state = malloc(n * sizeof *state);
  double *e = calloc(n * (size_t)size, sizeof *e), *x = malloc(n * sizeof *x), *qd = malloc(n * sizeof *qd);
  double *avg = calloc(n, sizeof *avg), *bound = calloc(n, sizeof *bound);
  double *sum_out = calloc(n, sizeof *sum_out), *sum_g = calloc(n, sizeof *sum_g);
  double worst = 0;
  for (int t = 0; t < STEPS; t++) {
    grads_of(rank, t, n, g);
    memcpy(m->grads, g, n * sizeof *g);
    CHECK(ddp_reduce_grads(d) == 0 && ddp_wait(d) == 0, "%s", ddp_error(d));
    memset(avg, 0, n * sizeof *avg);
    memset(bound, 0, n * sizeof *bound);
    for (int r = 0; r < size; r++) {
      grads_of(r, t, n, g);
      for (size_t i = 0; i < n; i++) {
        x[i] = (double)(real_t)(g[i] + (real_t)e[(size_t)r * n + i]); /* fl(g + e) as the hook */
        sum_g[i] += (double)g[i] / size;
      }
      for (size_t lo = 0; lo < n; lo += CHUNK) {
        const size_t len = n - lo < CHUNK ? n - lo : CHUNK;
        const double s = ref_quant(x + lo, len, qd + lo);
        for (size_t i = lo; i < lo + len; i++) {
          avg[i] += s * qd[i] / size;
          bound[i] += (size + 1) * 0x1p-24 * fabs(s * qd[i]) / size;
          e[(size_t)r * n + i] = x[i] - s * qd[i];
        }
      }
    }
    ddp_hook_state_copy(d, state, 0);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
      worst = fmax(worst, fabs(m->grads[i] - avg[i]) / fmax(bound[i], 1e-300));
      if ((double)state[i] != e[(size_t)rank * n + i]) bad++;
      sum_out[i] += m->grads[i];
    }
    CHECK(bad == 0, "step %d: %zu residuals differ from the float64 reference's x - s q", t, bad);
  }
  double tele = 0, scale = 0;
  for (size_t i = 0; i < n; i++) {
    double ebar = 0;
    for (int r = 0; r < size; r++) ebar += e[(size_t)r * n + i] / size;
    tele = fmax(tele, fabs(sum_out[i] + ebar - sum_g[i]));
    scale = fmax(scale, fabs(sum_g[i]));
  }
  if (rank == 0)
    printf("int8 N=%d: worst |result - ref| / bound %.3g; telescoping max |sum out + avg e - sum g| %.3g "
           "(scale %.3g)\n", size, worst, tele, scale);
  CHECK(worst <= 1.0);
  CHECK(tele <= 1e-5 * fmax(1, scale));
  unsigned long long sent, dense;
  ddp_comm_bytes(d, &sent, &dense);
  CHECK(sent * 3 < dense, "int8 sent %llu of %llu dense bytes", sent, dense);
  ddp_free(d);
  model_free(m);
  free(g), free(state), free(e), free(x), free(qd), free(avg), free(bound), free(sum_out), free(sum_g);
  int failures = check_failures;
  hv_allreduce(comm, "test.failures", &failures, &failures, 1, HV_INT32, HV_SUM, NULL);
  hv_shutdown(comm);
  return failures ? 1 : 0;
}
