/* ddp_hook_powersgd.c: PowerSGD (Vogels, Karimireddy and Jaggi, 2019) as a DDP
 * communication hook, step for step as torch's powerSGD_hook:
 *  - the steps before start_iter use the plain allreduce (warm-up, no error feedback);
 *  - then, per bucket: the error of the last step is added to the gradients
 *    (x = g + e); vectors (biases, batch norm) and matrices too small to gain
 *    (rows * cols <= min_rate * (rows + cols) * rank) travel uncompressed, averaged in
 *    the same allreduce as the P's; every other matrix M (rows x cols) gets P = M Q
 *    (Q: cols x rank, kept from the last step, random and orthogonalised the first
 *    time); the P's are averaged and orthogonalised (Gram-Schmidt), Q = M^T P is
 *    averaged, M becomes P Q^T, and e = x - P Q^T is kept for the next step.
 * Averaging P where torch sums it changes nothing (orthogonalisation removes the
 * scale) and makes n ranks equal one process holding the average of their matrices:
 * P = avg(M_i) Q, Q = avg(M_i)^T P (tests/trainer/test_powersgd.c checks both).
 * One difference: torch's error buffer also holds x - avg(x) for the uncompressed
 * tensors, whose average over the ranks is zero, so no averaged gradient changes; it
 * only adds noise to each rank's. Here those entries stay 0.
 * A rank above min(rows, cols) is clamped to it, with a warning from rank 0 (such a
 * matrix is then too small to compress unless min_rate < 1).
 * The matrix products are BLAS (cblas_?gemm), the orthogonalisation BLAS level 1. The
 * P allreduce overlaps the rest of backward; the Q allreduce blocks in ddp_wait.
 * A GPU model's buckets take the same plan and the same first Q from here and run on
 * the device (gpu/ddp_hook_powersgd_gpu.c: cuBLAS, cuSOLVER, hv_cuda.h); this file
 * is their reference (tests/trainer/gpu_powersgd.c). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_hook_powersgd_internal.h"
#include "ddp_hooks.h"
#include "rng.h"

#if HV_REAL_F64
#define GEMM cblas_dgemm
#define NRM2 cblas_dnrm2
#define DOT cblas_ddot
#define AXPY cblas_daxpy
#define SCAL cblas_dscal
#define WIRE HV_FLOAT64
#else
#define GEMM cblas_sgemm
#define NRM2 cblas_snrm2
#define DOT cblas_sdot
#define AXPY cblas_saxpy
#define SCAL cblas_sscal
#define WIRE HV_FLOAT32
#endif

typedef struct psgd {
  ddp_powersgd_config_t cfg;
  psgd_bucket_t *b;
  int nb;
} psgd_t;

/* Modified Gram-Schmidt on the r columns of a (rows x r, row-major), as torch's
 * _orthogonalize_gram_schmidt; a zero column stays zero (torch divides by 0 there). */
void psgd_orthogonalize(real_t *a, size_t rows, size_t r) {
  for (size_t i = 0; i < r; i++) {
    real_t *col = a + i;
    const real_t norm = NRM2((int)rows, col, (int)r);
    if (norm > 0) SCAL((int)rows, (real_t)1 / norm, col, (int)r);
    for (size_t j = i + 1; j < r; j++) {
      const real_t dot = DOT((int)rows, col, (int)r, a + j, (int)r);
      AXPY((int)rows, -dot, col, (int)r, a + j, (int)r);
    }
  }
}

static int plan(psgd_t *s, psgd_bucket_t *pb, ddp_bucket_t *b) {
  int nt, me = 0;
  const ddp_tensor_t *t = ddp_bucket_tensors(b, &nt);
  hv_comm_rank(ddp_bucket_comm(b), &me);
  ddp_bucket_grads(b, &pb->n);
  pb->mats = calloc((size_t)nt + 1, sizeof *pb->mats);
  pb->plain_off = calloc((size_t)nt + 1, sizeof *pb->plain_off);
  pb->plain_len = calloc((size_t)nt + 1, sizeof *pb->plain_len);
  if (!pb->mats || !pb->plain_off || !pb->plain_len) return ddp_bucket_fail(b, "out of memory");
  for (int i = 0; i < nt; i++) {
    size_t r = (size_t)s->cfg.rank;
    if (t[i].rows > 1) {
      const size_t most = t[i].rows < t[i].cols ? t[i].rows : t[i].cols;
      if (r > most) {
        if (me == 0)
          fprintf(stderr, "ddp: warning: powersgd rank %zu is more than layer %s's %zux%zu gradient allows: "
                  "clamped to %zu\n", r, t[i].layer, t[i].rows, t[i].cols, most);
        r = most;
      }
      if ((double)t[i].rows * (double)t[i].cols >
          s->cfg.min_compression_rate * (double)(t[i].rows + t[i].cols) * (double)r) {
        pb->mats[pb->n_mats++] = (psgd_matrix_t){t[i].off, t[i].rows, t[i].cols, r, pb->p_elems, pb->q_elems};
        pb->p_elems += t[i].rows * r;
        pb->q_elems += t[i].cols * r;
        continue;
      }
    }
    pb->plain_off[pb->n_plain] = t[i].off;
    pb->plain_len[pb->n_plain++] = t[i].rows * t[i].cols;
    pb->n_plain_elems += t[i].rows * t[i].cols;
  }
  pb->error = calloc(pb->n, sizeof *pb->error);
  pb->q = calloc(pb->q_elems + 1, sizeof *pb->q);
  pb->wire = malloc((pb->n_plain_elems + pb->p_elems + 1) * sizeof *pb->wire);
  if (!pb->error || !pb->q || !pb->wire) return ddp_bucket_fail(b, "out of memory");
  if (!ddp_bucket_on_host(b) && psgd_gpu_prepare(pb, b)) return -1;
  pb->planned = 1;
  return 0;
}

static psgd_bucket_t *bucket_state(psgd_t *s, ddp_bucket_t *b);

static int psgd_prepare(void *state, ddp_bucket_t *b) { return bucket_state(state, b) ? 0 : -1; }

static psgd_bucket_t *bucket_state(psgd_t *s, ddp_bucket_t *b) {
  const int i = ddp_bucket_index(b);
  if (i >= s->nb) {
    psgd_bucket_t *nb = realloc(s->b, (size_t)(i + 1) * sizeof *nb);
    if (!nb) return NULL;
    memset(nb + s->nb, 0, (size_t)(i + 1 - s->nb) * sizeof *nb);
    s->b = nb;
    s->nb = i + 1;
  }
  if (!s->b[i].planned && plan(s, &s->b[i], b)) return NULL;
  return &s->b[i];
}

/* Q of every matrix: standard normal from the seed (the same on every rank), each
 * orthogonalised, as torch's first step. */
static void init_q(const psgd_t *s, psgd_bucket_t *pb, int bucket) {
  rng_t rng;
  rng_seed(&rng, s->cfg.seed * 1000003u + (uint64_t)bucket);
  for (size_t i = 0; i < pb->q_elems; i++) pb->q[i] = (real_t)rng_normal(&rng);
  for (int m = 0; m < pb->n_mats; m++) psgd_orthogonalize(pb->q + pb->mats[m].q_off, pb->mats[m].cols, pb->mats[m].rank);
  pb->q_ready = 1;
}

static int psgd_start(void *state, ddp_bucket_t *b) {
  psgd_t *s = state;
  psgd_bucket_t *pb = bucket_state(s, b);
  if (!pb) return ddp_bucket_fail(b, "out of memory");
  if (pb->gpu) {
    pb->compressed = ddp_bucket_step(b) >= s->cfg.start_iter;
    const int new_q = pb->compressed && (!pb->q_ready || !s->cfg.warm_start);
    if (new_q) init_q(s, pb, ddp_bucket_index(b));
    return psgd_gpu_start(&s->cfg, pb, b, new_q);
  }
  size_t n;
  real_t *g = ddp_bucket_grads(b, &n);
  hv_comm_t *comm = ddp_bucket_comm(b);
  char name[48];
  pb->compressed = ddp_bucket_step(b) >= s->cfg.start_iter;
  if (!pb->compressed) {
    snprintf(name, sizeof name, "%s.psgd", ddp_bucket_name(b));
    if (hv_allreduce_async(comm, name, g, g, n, WIRE, HV_AVERAGE, NULL, ddp_bucket_handle(b)) != HV_SUCCESS)
      return ddp_bucket_fail(b, "%s", hv_comm_last_error(comm));
    return 0;
  }
  if (s->cfg.use_error_feedback) {
    for (size_t i = 0; i < n; i++) g[i] += pb->error[i];
    for (int m = 0; m < pb->n_mats; m++) /* error := x, until finish subtracts P Q^T */
      memcpy(pb->error + pb->mats[m].off, g + pb->mats[m].off, pb->mats[m].rows * pb->mats[m].cols * sizeof *g);
  }
  if (!pb->q_ready || !s->cfg.warm_start) init_q(s, pb, ddp_bucket_index(b));
  size_t k = 0;
  for (int i = 0; i < pb->n_plain; i++) {
    memcpy(pb->wire + k, g + pb->plain_off[i], pb->plain_len[i] * sizeof *g);
    k += pb->plain_len[i];
  }
  real_t *p = pb->wire + pb->n_plain_elems;
  for (int m = 0; m < pb->n_mats; m++) {
    const psgd_matrix_t *x = &pb->mats[m];
    GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)x->rows, (int)x->rank, (int)x->cols, 1, g + x->off,
         (int)x->cols, pb->q + x->q_off, (int)x->rank, 0, p + x->p_off, (int)x->rank);
  }
  snprintf(name, sizeof name, "%s.psgd.P", ddp_bucket_name(b));
  if (hv_allreduce_async(comm, name, pb->wire, pb->wire, pb->n_plain_elems + pb->p_elems, WIRE, HV_AVERAGE, NULL,
                         ddp_bucket_handle(b)) != HV_SUCCESS)
    return ddp_bucket_fail(b, "%s", hv_comm_last_error(comm));
  return 0;
}

static int psgd_finish(void *state, ddp_bucket_t *b) {
  psgd_t *s = state;
  psgd_bucket_t *pb = &s->b[ddp_bucket_index(b)];
  if (pb->gpu) return psgd_gpu_finish(&s->cfg, pb, b);
  size_t n;
  real_t *g = ddp_bucket_grads(b, &n);
  hv_comm_t *comm = ddp_bucket_comm(b);
  if (hv_wait(*ddp_bucket_handle(b)) != HV_SUCCESS) return ddp_bucket_fail(b, "%s", hv_comm_last_error(comm));
  if (!pb->compressed) return ddp_bucket_complete(b, n * sizeof *g);
  size_t k = 0;
  for (int i = 0; i < pb->n_plain; i++) {
    memcpy(g + pb->plain_off[i], pb->wire + k, pb->plain_len[i] * sizeof *g);
    k += pb->plain_len[i];
  }
  real_t *p = pb->wire + pb->n_plain_elems;
  for (int m = 0; m < pb->n_mats; m++) {
    const psgd_matrix_t *x = &pb->mats[m];
    psgd_orthogonalize(p + x->p_off, x->rows, x->rank);
    GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)x->cols, (int)x->rank, (int)x->rows, 1, g + x->off,
         (int)x->cols, p + x->p_off, (int)x->rank, 0, pb->q + x->q_off, (int)x->rank);
  }
  if (pb->q_elems) {
    char name[48];
    snprintf(name, sizeof name, "%s.psgd.Q", ddp_bucket_name(b));
    if (hv_allreduce(comm, name, pb->q, pb->q, pb->q_elems, WIRE, HV_AVERAGE, NULL) != HV_SUCCESS)
      return ddp_bucket_fail(b, "%s", hv_comm_last_error(comm));
  }
  for (int m = 0; m < pb->n_mats; m++) {
    const psgd_matrix_t *x = &pb->mats[m];
    GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)x->rows, (int)x->cols, (int)x->rank, 1, p + x->p_off,
         (int)x->rank, pb->q + x->q_off, (int)x->rank, 0, g + x->off, (int)x->cols);
    if (s->cfg.use_error_feedback)
      for (size_t i = 0; i < x->rows * x->cols; i++) pb->error[x->off + i] -= g[x->off + i];
  }
  return ddp_bucket_complete(b, (pb->n_plain_elems + pb->p_elems + pb->q_elems) * sizeof *g);
}

/* The state for checkpoints and tests: per planned bucket, in index order, a flag
 * (Q initialised), the error (n) and Q (q_elems). */
static size_t psgd_state_count(void *state) {
  const psgd_t *s = state;
  size_t c = 0;
  for (int i = 0; i < s->nb; i++)
    if (s->b[i].planned) c += 1 + s->b[i].n + s->b[i].q_elems;
  return c;
}

static void psgd_state_copy(void *state, real_t *out, int load) {
  psgd_t *s = state;
  for (int i = 0; i < s->nb; i++) {
    psgd_bucket_t *pb = &s->b[i];
    if (!pb->planned) continue;
    if (pb->gpu) {
      if (load) pb->q_ready = out[0] != 0;
      else out[0] = (real_t)pb->q_ready;
      if (psgd_gpu_state_copy(pb, out + 1, out + 1 + pb->n, load))
        fprintf(stderr, "ddp: powersgd: bucket %d: the hook state could not be copied %s the GPU\n", i,
                load ? "to" : "from");
    } else if (load) {
      pb->q_ready = out[0] != 0;
      memcpy(pb->error, out + 1, pb->n * sizeof *out);
      memcpy(pb->q, out + 1 + pb->n, pb->q_elems * sizeof *out);
    } else {
      out[0] = (real_t)pb->q_ready;
      memcpy(out + 1, pb->error, pb->n * sizeof *out);
      memcpy(out + 1 + pb->n, pb->q, pb->q_elems * sizeof *out);
    }
    out += 1 + pb->n + pb->q_elems;
  }
}

static void psgd_free(void *state) {
  psgd_t *s = state;
  for (int i = 0; i < s->nb; i++) {
    free(s->b[i].mats);
    free(s->b[i].plain_off);
    free(s->b[i].plain_len);
    free(s->b[i].error);
    free(s->b[i].q);
    free(s->b[i].wire);
    if (s->b[i].gpu) psgd_gpu_free(&s->b[i]);
  }
  free(s->b);
  free(s);
}

int ddp_hook_powersgd_make(ddp_comm_hook_t *hook, const ddp_powersgd_config_t *cfg, char *err, size_t errlen) {
  if (cfg->rank < 1 || cfg->start_iter < 0 || !(cfg->min_compression_rate >= 0)) {
    snprintf(err, errlen, "powersgd: rank must be at least 1 (got %d), start at least 0 (got %lld), min_rate at "
             "least 0 (got %g)", cfg->rank, cfg->start_iter, cfg->min_compression_rate);
    return -1;
  }
  psgd_t *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "powersgd: out of memory");
    return -1;
  }
  s->cfg = *cfg;
  *hook = (ddp_comm_hook_t){.name = "powersgd",
                            .state = s,
                            .start = psgd_start,
                            .finish = psgd_finish,
                            .prepare = psgd_prepare,
                            .state_count = psgd_state_count,
                            .state_copy = psgd_state_copy,
                            .free_state = psgd_free};
  return 0;
}
