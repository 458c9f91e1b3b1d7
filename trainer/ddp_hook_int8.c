/* ddp_hook_int8.c: 8-bit gradients with error feedback. Per bucket and step: x = g + e
 * (e: the residual of the last step); every chunk of `chunk` elements gets a scale
 * s = 2^k, the smallest power of two with 127 s >= max|x|, and q = round(x / s) in
 * [-127, 127]; e becomes x - s q for the next step. Each rank's scales and int8 values
 * go to every rank (one allgather), and every rank sums the ranks' s q in rank order
 * in float32 and divides by n: the same bits everywhere.
 * Why a power of two: x / s and s q are then exact, so the residual x - s q is exact
 * too (Sterbenz: for q != 0, x / s lies in [q - 1/2, q + 1/2], within a factor 2 of
 * q), and s q + e == x holds bit for bit (tests/trainer/test_int8.c); it costs at
 * most one bit of the 8.
 * A chunk with an inf or NaN sends a NaN scale (the average is NaN, as a plain
 * allreduce's would be) and keeps no residual.
 * Bytes: 4 per chunk plus 1 per element from each rank (a quarter of float32). The
 * allgather moves (n - 1) such messages to every rank, so against the ring
 * allreduce's 2 (n - 1) / n float32 the saving is 8 / n: 4x at 2 ranks, none at 8.
 * A GPU model's buckets go to gpu/ddp_hook_int8_gpu.c (device kernels, the same
 * record and bits); the residual then lives on the device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_hook_int8_internal.h"
#include "ddp_hooks.h"

typedef struct int8_bucket {
  real_t *error;   /* (n) */
  uint8_t *wire;   /* (size * record) every rank's record: scales, then int8 values */
  size_t n, record;
  int8_gpu_t *gpu; /* a GPU model's bucket: its device arrays (error and wire unused) */
} int8_bucket_t;

typedef struct int8_state {
  size_t chunk;
  int8_bucket_t *b;
  int nb;
} int8_state_t;

float ddp_int8_quantize(real_t *x, size_t n, int8_t *q) {
  real_t most = 0;
  int finite = 1;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) finite = 0;
    else if (fabs((double)x[i]) > most) most = (real_t)fabs((double)x[i]);
  }
  if (!finite) {
    memset(q, 0, n);
    memset(x, 0, n * sizeof *x);
    return NAN;
  }
  if (most == 0) {
    memset(q, 0, n);
    return 0;
  }
  int k;
  frexp((double)most / 127.0, &k); /* most / 127 = f 2^k, f in [0.5, 1): 2^k >= most / 127 */
  const real_t s = (real_t)ldexp(1.0, k < -149 ? -149 : k);
  for (size_t i = 0; i < n; i++) {
    double v = rint((double)(x[i] / s));
    v = v > 127 ? 127 : v < -127 ? -127 : v;
    q[i] = (int8_t)v;
    x[i] -= s * (real_t)q[i];
  }
  return (float)s;
}

static int8_bucket_t *bucket_state(int8_state_t *s, ddp_bucket_t *b, int size) {
  const int i = ddp_bucket_index(b);
  if (i >= s->nb) {
    int8_bucket_t *nb = realloc(s->b, (size_t)(i + 1) * sizeof *nb);
    if (!nb) return NULL;
    memset(nb + s->nb, 0, (size_t)(i + 1 - s->nb) * sizeof *nb);
    s->b = nb;
    s->nb = i + 1;
  }
  int8_bucket_t *ib = &s->b[i];
  if (!ib->error) {
    ddp_bucket_grads(b, &ib->n);
    const size_t chunks = (ib->n + s->chunk - 1) / s->chunk;
    ib->record = (chunks * sizeof(float) + ib->n + 3) / 4 * 4;
    ib->error = calloc(ib->n + 1, sizeof *ib->error);
    ib->wire = malloc(ib->record * (size_t)size);
    if (!ib->error || !ib->wire) return NULL;
    if (!ddp_bucket_on_host(b) && int8_gpu_prepare(&ib->gpu, b, ib->n, s->chunk, ib->record)) return NULL;
  }
  if (!ddp_bucket_on_host(b) && !ib->gpu) return NULL; /* its preparation failed: never the host path */
  return ib;
}

static int int8_prepare(void *state, ddp_bucket_t *b) {
  int size = 1;
  hv_comm_size(ddp_bucket_comm(b), &size);
  return bucket_state(state, b, size) ? 0 : ddp_bucket_fail(b, "out of memory");
}

static int int8_start(void *state, ddp_bucket_t *b) {
  int8_state_t *s = state;
  hv_comm_t *comm = ddp_bucket_comm(b);
  int size = 1, me = 0;
  hv_comm_size(comm, &size);
  hv_comm_rank(comm, &me);
  int8_bucket_t *ib = bucket_state(s, b, size);
  if (!ib) return ddp_bucket_fail(b, "out of memory");
  if (ib->gpu) return int8_gpu_start(ib->gpu, b);
  size_t n;
  const real_t *g = ddp_bucket_grads(b, &n);
  uint8_t *rec = ib->wire + (size_t)me * ib->record;
  const size_t chunks = (n + s->chunk - 1) / s->chunk;
  int8_t *q = (int8_t *)(rec + chunks * sizeof(float));
  for (size_t c = 0; c < chunks; c++) {
    const size_t lo = c * s->chunk, len = n - lo < s->chunk ? n - lo : s->chunk;
    for (size_t i = lo; i < lo + len; i++) ib->error[i] += g[i]; /* x = g + e, quantised in place */
    const float scale = ddp_int8_quantize(ib->error + lo, len, q + lo);
    memcpy(rec + c * sizeof(float), &scale, sizeof scale);
  }
  char name[48];
  snprintf(name, sizeof name, "%s.int8", ddp_bucket_name(b));
  if (hv_allgather_async(comm, name, rec, ib->wire, ib->record, HV_UINT8, ddp_bucket_handle(b)) != HV_SUCCESS)
    return ddp_bucket_fail(b, "%s", hv_comm_last_error(comm));
  return 0;
}

static int int8_finish(void *state, ddp_bucket_t *b) {
  int8_state_t *s = state;
  int8_bucket_t *ib = &s->b[ddp_bucket_index(b)];
  if (ib->gpu) return int8_gpu_finish(ib->gpu, b);
  hv_comm_t *comm = ddp_bucket_comm(b);
  if (hv_wait(*ddp_bucket_handle(b)) != HV_SUCCESS) return ddp_bucket_fail(b, "%s", hv_comm_last_error(comm));
  int size = 1;
  hv_comm_size(comm, &size);
  size_t n;
  real_t *g = ddp_bucket_grads(b, &n);
  const size_t chunks = (n + s->chunk - 1) / s->chunk;
  memset(g, 0, n * sizeof *g);
  for (int r = 0; r < size; r++) {
    const uint8_t *rec = ib->wire + (size_t)r * ib->record;
    const int8_t *q = (const int8_t *)(rec + chunks * sizeof(float));
    for (size_t c = 0; c < chunks; c++) {
      float scale;
      memcpy(&scale, rec + c * sizeof(float), sizeof scale);
      const size_t lo = c * s->chunk, hi = n - lo < s->chunk ? n : lo + s->chunk;
      for (size_t i = lo; i < hi; i++) g[i] += (real_t)scale * (real_t)q[i];
    }
  }
  for (size_t i = 0; i < n; i++) g[i] /= (real_t)size;
  return ddp_bucket_complete(b, ib->record);
}

/* Checkpoints and tests: the residual of every bucket seen, in index order. */
static size_t int8_state_count(void *state) {
  const int8_state_t *s = state;
  size_t c = 0;
  for (int i = 0; i < s->nb; i++) c += s->b[i].error ? s->b[i].n : 0;
  return c;
}

static void int8_state_copy(void *state, real_t *out, int load) {
  int8_state_t *s = state;
  for (int i = 0; i < s->nb; i++) {
    if (!s->b[i].error) continue;
    if (s->b[i].gpu) {
      if (int8_gpu_state_copy(s->b[i].gpu, out, load))
        fprintf(stderr, "ddp: int8: bucket %d: the residual could not be copied %s the GPU\n", i, load ? "to" : "from");
    } else if (load) memcpy(s->b[i].error, out, s->b[i].n * sizeof *out);
    else memcpy(out, s->b[i].error, s->b[i].n * sizeof *out);
    out += s->b[i].n;
  }
}

static void int8_free(void *state) {
  int8_state_t *s = state;
  for (int i = 0; i < s->nb; i++) {
    free(s->b[i].error);
    free(s->b[i].wire);
    int8_gpu_free(s->b[i].gpu);
  }
  free(s->b);
  free(s);
}

int ddp_hook_int8_make(ddp_comm_hook_t *hook, size_t chunk, char *err, size_t errlen) {
  int8_state_t *s = chunk ? calloc(1, sizeof *s) : NULL;
  if (!s) {
    snprintf(err, errlen, chunk ? "int8: out of memory" : "int8: chunk must be at least 1");
    return -1;
  }
  s->chunk = chunk;
  *hook = (ddp_comm_hook_t){.name = "int8",
                            .state = s,
                            .start = int8_start,
                            .finish = int8_finish,
                            .prepare = int8_prepare,
                            .state_count = int8_state_count,
                            .state_copy = int8_state_copy,
                            .free_state = int8_free};
  return 0;
}
