/* test_powersgd.c (under mpirun, 1 or 2 ranks): the PowerSGD hook against a float64
 * reference of the same algorithm that one process runs on every rank's gradients.
 * Model: conv 6x18 and linear 12x96 weights (compressed at rank 2), a 3x12 linear
 * weight too small to gain (plain), biases and batch norm (plain), one bucket.
 *  1. Warm-up (start=1): step 0 is the plain average.
 *  2. Steps 1-4: the gradients, the averaged Q and each rank's error equal the
 *     reference's, which carries its own Q across the steps (warm start) and its own
 *     per-rank errors, and builds P and Q from the average of the ranks' x = g + e
 *     (so n ranks == one process with the averaged matrices).
 *  3. Error feedback, exactly: e_new == fl(fl(g + e_old) - out) bit for bit on the
 *     compressed weights, 0 on the plain tensors.
 *  4. Rank 16 with min_rate 0: clamped to min(rows, cols) (a warning), so P Q^T is the
 *     whole matrix and the result the plain average.
 *  5. Resume: each rank's hook state (error, Q) saved after step 2 and loaded into a
 *     new DDP with ddp_set_step(3) gives steps 3 and 4 bit for bit; without the state
 *     they differ.
 * Bound: |hook - ref| <= 2e-4 * max(1, max |ref|) per tensor (float32 arithmetic,
 * Gram-Schmidt in float32 against float64). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddp.h"
#include "ddp_hooks.h"
#include "model.h"
#include "rng.h"

enum { STEPS = 5, SEED = 5 };
static const double TOL = 2e-4;

static hv_comm_t *comm;
static int rank, size;

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

/* Rank q's gradient at step t: the same on every process. */
static void grads_of(int q, int t, size_t n, real_t *g) {
  rng_t r;
  rng_seed(&r, 1000 + (uint64_t)t * 31 + (uint64_t)q);
  for (size_t i = 0; i < n; i++) g[i] = (real_t)rng_normal(&r);
}

static void mgs(double *a, size_t rows, size_t r) {
  for (size_t i = 0; i < r; i++) {
    double norm = 0;
    for (size_t k = 0; k < rows; k++) norm += a[k * r + i] * a[k * r + i];
    norm = sqrt(norm);
    if (norm > 0)
      for (size_t k = 0; k < rows; k++) a[k * r + i] /= norm;
    for (size_t j = i + 1; j < r; j++) {
      double dot = 0;
      for (size_t k = 0; k < rows; k++) dot += a[k * r + i] * a[k * r + j];
      for (size_t k = 0; k < rows; k++) a[k * r + j] -= dot * a[k * r + i];
    }
  }
}

typedef struct { size_t off, rows, cols, r, q_off; } mat_t;

static double max_abs(const double *v, size_t n) {
  double m = 1;
  for (size_t i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
  return m;
}

int main(int argc, char **argv) {
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "hv_init failed: %s\n", hv_comm_last_error(NULL));
    return 2;
  }
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  char err[512];
  model_t *m = make_model();
  ddp_t *d = ddp_create(comm, m, NULL, err, sizeof err);
  CHECK(d != NULL, "%s", err);
  ddp_hook_spec_t spec;
  CHECK(ddp_hook_spec_parse("powersgd:rank=2,start=1,seed=5", &spec, err, sizeof err) == 0, "%s", err);
  ddp_comm_hook_t hook;
  CHECK(ddp_hook_make(&spec, &hook, err, sizeof err) == 0, "%s", err);
  CHECK(ddp_register_comm_hook(d, &hook) == 0);
  CHECK(ddp_num_buckets(d) == 1);
  const size_t n = m->n_params;

  /* The compressed matrices, as the hook plans them: every weight with rows > 1 and
   * rows*cols > 2 (rows+cols) r. */
  int nt;
  size_t lo, hi;
  ddp_bucket_range(d, 0, &lo, &hi);
  CHECK(lo == 0 && hi == n);
  mat_t mats[8];
  int nm = 0;
  size_t q_elems = 0;
  {
    /* ddp_bucket_tensors needs a bucket: the layers give the same shapes */
    for (int i = 0; i < m->n_layers; i++) {
      const layer_t *l = &m->layers[i];
      if ((l->kind == LAYER_CONV2D || l->kind == LAYER_LINEAR) && l->weight_count) {
        size_t rows = (size_t)l->out_ch, cols = l->weight_count / rows;
        if ((double)rows * cols > 2.0 * (rows + cols) * 2) {
          mats[nm++] = (mat_t){l->param_off, rows, cols, 2, q_elems};
          q_elems += cols * 2;
        }
      }
    }
    nt = nm;
  }
  CHECK(nt == 2, "compressed matrices: %d (conv and fc1 expected)", nt);

  real_t *g = malloc(n * sizeof *g), *e_old = calloc(n, sizeof *e_old), *state = NULL;
  double *x = calloc(n * (size_t)size, sizeof *x), *e = calloc(n * (size_t)size, sizeof *e);
  double *avg = calloc(n, sizeof *avg), *out = calloc(n, sizeof *out), *q = calloc(q_elems + 1, sizeof *q);
  double *p = calloc(n * 2, sizeof *p), *qn = calloc(q_elems + 1, sizeof *qn);
  /* the reference's first Q: the hook's seed, rounded to real_t, orthogonalised */
  {
    rng_t r;
    rng_seed(&r, (uint64_t)SEED * 1000003u + 0);
    for (size_t i = 0; i < q_elems; i++) q[i] = (double)(real_t)rng_normal(&r);
    for (int k = 0; k < nm; k++) mgs(q + mats[k].q_off, mats[k].cols, mats[k].r);
  }
  double worst_out = 0, worst_q = 0, worst_e = 0;
  for (int t = 0; t < STEPS; t++) {
    grads_of(rank, t, n, g);
    memcpy(m->grads, g, n * sizeof *g);
    CHECK(ddp_reduce_grads(d) == 0 && ddp_wait(d) == 0, "%s", ddp_error(d));
    /* reference: x_q = g_q + e_q; the average */
    memset(avg, 0, n * sizeof *avg);
    for (int r = 0; r < size; r++) {
      grads_of(r, t, n, g);
      for (size_t i = 0; i < n; i++) {
        x[(size_t)r * n + i] = (double)g[i] + (t >= 1 ? e[(size_t)r * n + i] : 0);
        avg[i] += x[(size_t)r * n + i] / size;
      }
    }
    memcpy(out, avg, n * sizeof *out);
    if (t >= 1) {
      for (int k = 0; k < nm; k++) {
        const mat_t *a = &mats[k];
        double *pk = p; /* rows x r */
        for (size_t i = 0; i < a->rows; i++)
          for (size_t j = 0; j < a->r; j++) {
            double s = 0;
            for (size_t c = 0; c < a->cols; c++) s += avg[a->off + i * a->cols + c] * q[a->q_off + c * a->r + j];
            pk[i * a->r + j] = s;
          }
        mgs(pk, a->rows, a->r);
        for (size_t c = 0; c < a->cols; c++)
          for (size_t j = 0; j < a->r; j++) {
            double s = 0;
            for (size_t i = 0; i < a->rows; i++) s += avg[a->off + i * a->cols + c] * pk[i * a->r + j];
            qn[a->q_off + c * a->r + j] = s;
          }
        for (size_t i = 0; i < a->rows; i++)
          for (size_t c = 0; c < a->cols; c++) {
            double s = 0;
            for (size_t j = 0; j < a->r; j++) s += pk[i * a->r + j] * qn[a->q_off + c * a->r + j];
            out[a->off + i * a->cols + c] = s;
            for (int r = 0; r < size; r++)
              e[(size_t)r * n + a->off + i * a->cols + c] = x[(size_t)r * n + a->off + i * a->cols + c] - s;
          }
      }
      memcpy(q, qn, q_elems * sizeof *q);
    }
    /* the hook against it */
    const double scale = max_abs(out, n);
    for (size_t i = 0; i < n; i++) worst_out = fmax(worst_out, fabs(m->grads[i] - out[i]) / scale);
    const size_t sc = ddp_hook_state_count(d);
    CHECK(sc == 1 + n + q_elems, "state count %zu, expected %zu", sc, 1 + n + q_elems);
    free(state);
    state = malloc(sc * sizeof *state);
    ddp_hook_state_copy(d, state, 0);
    const real_t *he = state + 1, *hq = state + 1 + n;
    CHECK(state[0] == (t >= 1), "step %d: Q initialised flag %g", t, (double)state[0]);
    if (t >= 1) {
      for (size_t i = 0; i < q_elems; i++) worst_q = fmax(worst_q, fabs(hq[i] - q[i]) / max_abs(q, q_elems));
      for (size_t i = 0; i < n; i++)
        worst_e = fmax(worst_e, fabs(he[i] - e[(size_t)rank * n + i]) / max_abs(e + (size_t)rank * n, n));
      /* exact bookkeeping: on the matrices e_new = fl(fl(g + e_old) - out), else 0 */
      grads_of(rank, t, n, g);
      size_t bad = 0;
      for (size_t i = 0; i < n; i++) {
        int compressed = 0;
        for (int k = 0; k < nm; k++) compressed |= i >= mats[k].off && i < mats[k].off + mats[k].rows * mats[k].cols;
        const real_t xi = g[i] + e_old[i];
        const real_t want = compressed ? xi - m->grads[i] : 0;
        if (memcmp(&want, &he[i], sizeof want)) bad++;
      }
      CHECK(bad == 0, "step %d: %zu error entries differ from fl(fl(g + e_old) - out)", t, bad);
    }
    memcpy(e_old, he, n * sizeof *e_old);
  }
  if (rank == 0)
    printf("powersgd rank 2, N=%d, %d steps: max rel diff out %.3g, Q %.3g, error %.3g (bound %.0e)\n", size,
           STEPS, worst_out, worst_q, worst_e, TOL);
  CHECK(worst_out <= TOL && worst_q <= TOL && worst_e <= TOL);
  unsigned long long sent, dense;
  ddp_comm_bytes(d, &sent, &dense);
  CHECK(dense == (unsigned long long)STEPS * n * 4 && sent < dense, "sent %llu dense %llu", sent, dense);
  ddp_free(d);

  /* 4. rank clamped: P Q^T reproduces the matrices, the result is the average */
  d = ddp_create(comm, m, NULL, err, sizeof err);
  CHECK(ddp_hook_spec_parse("powersgd:rank=16,start=0,min_rate=0", &spec, err, sizeof err) == 0, "%s", err);
  CHECK(ddp_hook_make(&spec, &hook, err, sizeof err) == 0 && ddp_register_comm_hook(d, &hook) == 0);
  grads_of(rank, 9, n, g);
  memcpy(m->grads, g, n * sizeof *g);
  CHECK(ddp_reduce_grads(d) == 0 && ddp_wait(d) == 0, "%s", ddp_error(d));
  memset(avg, 0, n * sizeof *avg);
  for (int r = 0; r < size; r++) {
    grads_of(r, 9, n, g);
    for (size_t i = 0; i < n; i++) avg[i] += (double)g[i] / size;
  }
  double worst = 0;
  for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(m->grads[i] - avg[i]) / max_abs(avg, n));
  if (rank == 0) printf("powersgd rank 16 clamped to full rank: max rel diff to the average %.3g\n", worst);
  CHECK(worst <= TOL);
  ddp_free(d);

  /* 5. resume */
  real_t *saved = NULL, *after[2] = {malloc(n * sizeof(real_t)), malloc(n * sizeof(real_t))};
  size_t saved_n = 0;
  for (int run = 0; run < 3; run++) { /* 0: uninterrupted; 1: resumed with the state; 2: without */
    d = ddp_create(comm, m, NULL, err, sizeof err);
    CHECK(ddp_hook_spec_parse("powersgd:rank=2,start=1,seed=5", &spec, err, sizeof err) == 0);
    CHECK(ddp_hook_make(&spec, &hook, err, sizeof err) == 0 && ddp_register_comm_hook(d, &hook) == 0);
    if (run > 0) {
      ddp_set_step(d, 3);
      CHECK(ddp_hook_state_count(d) == saved_n, "state of %zu values before the first step, saved %zu",
            ddp_hook_state_count(d), saved_n);
      if (run == 1) ddp_hook_state_copy(d, saved, 1);
    }
    for (int t = run ? 3 : 0; t < 5; t++) {
      grads_of(rank, 20 + t, n, m->grads);
      CHECK(ddp_reduce_grads(d) == 0 && ddp_wait(d) == 0, "%s", ddp_error(d));
      if (run == 0 && t == 2) {
        saved_n = ddp_hook_state_count(d);
        saved = malloc(saved_n * sizeof *saved);
        ddp_hook_state_copy(d, saved, 0);
      }
      if (t >= 3) {
        const int same = memcmp(after[t - 3], m->grads, n * sizeof(real_t)) == 0;
        if (run == 0) memcpy(after[t - 3], m->grads, n * sizeof(real_t));
        if (run == 1) CHECK(same, "resumed step %d differs from the uninterrupted run", t);
        if (run == 2 && t == 3) CHECK(!same, "step 3 without the saved state equals the uninterrupted run");
      }
    }
    ddp_free(d);
  }
  free(saved), free(after[0]), free(after[1]);

  free(g), free(e_old), free(state), free(x), free(e), free(avg), free(out), free(q), free(p), free(qn);
  model_free(m);
  int failures = check_failures;
  hv_allreduce(comm, "test.failures", &failures, &failures, 1, HV_INT32, HV_SUM, NULL);
  hv_shutdown(comm);
  return failures ? 1 : 0;
}
