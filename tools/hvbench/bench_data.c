/* bench_data.c: buffers, exactly-known inputs and result checking for hvbench.
 *
 * Input element j of tensor t on rank r is a small integer v(r, j, t) (a power of two
 * for prod), with its range shrunk by the rank count so that every partial result of
 * any reduction order is exact in the dtype (and in the fp16/bf16 wire format when
 * compressing): the expected result is then one number, computed here in double from
 * the same formula, and compared with tolerance 0. Only avg and compression round
 * (documented bound: two units in the last place of the rounding format).
 *
 * Every receive buffer is followed by a guard zone; bytes changed there are counted
 * as out-of-bounds writes (the nccl-tests footer). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvbench.h"

enum { GUARD_BYTES = BENCH_GUARD_BYTES, GUARD_BYTE = 0xDB, SENTINEL_BYTE = 0xA5 };

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

/* Simulated builds: with HV_SIM_SHARED_BYTES set (a timing run of tools/sim/hvsim),
 * a buffer of that size or more is one SMPI allocation shared by every simulated
 * rank (their values then mean nothing: hvsim runs those sizes with --check 0). */
#if HV_SIMULATED
static int shared_buffer(size_t bytes) {
  const char *v = getenv("HV_SIM_SHARED_BYTES");
  return v && *v && bytes >= strtoull(v, NULL, 10);
}
#endif

static void *buffer_alloc(size_t bytes) {
#if HV_SIMULATED
  if (shared_buffer(bytes)) return SMPI_SHARED_MALLOC(bytes);
#endif
  return aligned_alloc(64, round_up(bytes, 64));
}

static void buffer_free(void *p, size_t bytes) {
#if HV_SIMULATED
  if (shared_buffer(bytes)) {
    SMPI_SHARED_FREE(p);
    return;
  }
#endif
  (void)bytes;
  free(p);
}

int buffers_alloc(bench_buffers_t *b, const bench_case_t *c, char *err, size_t err_len) {
  size_t esize = dtype_size(c->dtype);
  memset(b, 0, sizeof(*b));
  b->tensors = c->tensors;
  b->send_bytes = c->send_elems * esize;
  b->recv_bytes = c->recv_elems * esize;
  b->alloc_send_bytes = b->send_bytes + GUARD_BYTES;
  b->alloc_recv_bytes = b->recv_bytes + GUARD_BYTES;
  b->send = calloc((size_t)c->tensors, sizeof(void *));
  b->recv = calloc((size_t)c->tensors, sizeof(void *));
  if (!b->send || !b->recv) goto fail;
  for (int t = 0; t < c->tensors; t++) {
    b->send[t] = buffer_alloc(b->alloc_send_bytes);
    b->recv[t] = buffer_alloc(b->alloc_recv_bytes);
    if (!b->send[t] || !b->recv[t]) goto fail;
#if HV_SIMULATED
    /* Shared by every simulated rank: nothing to touch or fill (data_fill). */
    b->shared = shared_buffer(b->alloc_send_bytes) && shared_buffer(b->alloc_recv_bytes);
    if (b->shared) continue;
#endif
    /* Touch every page now so first-use page faults are not timed. */
    memset(b->send[t], 0, b->send_bytes + GUARD_BYTES);
    memset(b->recv[t], 0, b->recv_bytes + GUARD_BYTES);
  }
  return 0;
fail:
  snprintf(err, err_len, "out of memory allocating %d x (%zu + %zu) bytes of buffers",
           c->tensors, b->send_bytes, b->recv_bytes);
  buffers_free(b);
  return -1;
}

void buffers_use(bench_buffers_t *b, const bench_case_t *c) {
  size_t esize = dtype_size(c->dtype);
  b->send_bytes = c->send_elems * esize;
  b->recv_bytes = c->recv_elems * esize;
}

void buffers_free(bench_buffers_t *b) {
  for (int t = 0; t < b->tensors; t++) {
    if (b->send && b->send[t]) buffer_free(b->send[t], b->alloc_send_bytes);
    if (b->recv && b->recv[t]) buffer_free(b->recv[t], b->alloc_recv_bytes);
  }
  free(b->send);
  free(b->recv);
  memset(b, 0, sizeof(*b));
}

/* Largest magnitude every partial result may reach and stay exact. */
static double exact_cap(const bench_case_t *c) {
  double cap;
  switch (c->dtype) {
  case HV_INT8: cap = 127; break;
  case HV_UINT8: cap = 255; break;
  case HV_FLOAT16: cap = 2048; break;
  case HV_BFLOAT16: cap = 256; break;
  default: cap = 1 << 20; break;
  }
  if (c->compression == HV_COMPRESSION_FP16 && cap > 2048) cap = 2048;
  if (c->compression == HV_COMPRESSION_BF16 && cap > 256) cap = 256;
  return cap;
}

/* The value range: [lo, lo + range). */
static void value_range(const bench_case_t *c, long *range, long *lo) {
  double cap = exact_cap(c);
  int sums = coll_is_reducing(c->coll) && (c->op == HV_SUM || c->op == HV_AVERAGE);
  long r = 11;
  if (!coll_is_reducing(c->coll)) r = 101; /* more distinct values catch misplacement */
  if (sums) {
    long fit = (long)(cap / c->nranks) + 1;
    if (fit < r) r = fit;
  } else if (r > cap) {
    r = (long)cap;
  }
  if (r < 2) r = 2;
  *range = r;
  int is_signed = c->dtype != HV_UINT8;
  /* Signed types get negative values too, so min/max and sign handling are exercised. */
  *lo = is_signed ? -(r - 1) / 2 : 0;
}

static double value_of(const bench_case_t *c, long range, long lo, int r, size_t j, int t) {
  if (coll_is_reducing(c->coll) && c->op == HV_PRODUCT)
    return ((j + (size_t)r + (size_t)t) % 4 == 0) ? 2.0 : 1.0;
  return (double)((long)((j * 7 + (size_t)r * 3 + (size_t)t * 5 + 1) % (size_t)range) + lo);
}

static double reduce_of(const bench_case_t *c, long range, long lo, size_t j, int t) {
  double acc = value_of(c, range, lo, 0, j, t);
  for (int q = 1; q < c->nranks; q++) {
    double v = value_of(c, range, lo, q, j, t);
    switch (c->op) {
    case HV_MIN: acc = v < acc ? v : acc; break;
    case HV_MAX: acc = v > acc ? v : acc; break;
    case HV_PRODUCT: acc *= v; break;
    default: acc += v; break;
    }
  }
  if (c->op == HV_AVERAGE) acc /= c->nranks;
  return acc;
}

/* Expected value of receive element k on this rank. */
static double expected_of(const bench_case_t *c, long range, long lo, size_t k, int t) {
  size_t pc = c->param_count;
  switch (c->coll) {
  case BENCH_ALLREDUCE: return reduce_of(c, range, lo, k, t);
  case BENCH_REDUCESCATTER: return reduce_of(c, range, lo, (size_t)c->rank * pc + k, t);
  case BENCH_ALLGATHER: return value_of(c, range, lo, (int)(k / pc), k % pc, t);
  case BENCH_ALLTOALL:
  case BENCH_ALLTOALLV: return value_of(c, range, lo, (int)(k / pc), (size_t)c->rank * pc + k % pc, t);
  case BENCH_REDUCE: return reduce_of(c, range, lo, k, t);
  case BENCH_GATHER: return value_of(c, range, lo, (int)(k / pc), k % pc, t);
  case BENCH_SCATTER: return value_of(c, range, lo, c->root, (size_t)c->rank * pc + k, t);
  case BENCH_SENDRECV: return value_of(c, range, lo, (c->rank + c->nranks - 1) % c->nranks, k, t);
  case BENCH_BROADCAST: return value_of(c, range, lo, c->root, k, t);
  default: return NAN;
  }
}

void *data_input_ptr(const bench_case_t *c, bench_buffers_t *b, int t, int in_place) {
  if (!in_place && c->coll != BENCH_BROADCAST) return b->send[t];
  if (c->coll == BENCH_ALLGATHER)
    return (char *)b->recv[t] + (size_t)c->rank * c->param_count * dtype_size(c->dtype);
  return b->recv[t];
}

void data_fill(const bench_case_t *c, bench_buffers_t *b, int in_place) {
  /* A simulated timing run's shared buffers hold no meaningful values: filling 1 GiB
   * on each of 1,024 simulated ranks would be most of the simulation's wall time. */
  if (b->shared) return;
  long range, lo;
  value_range(c, &range, &lo);
  for (int t = 0; t < b->tensors; t++) {
    memset(b->recv[t], SENTINEL_BYTE, b->recv_bytes);
    memset((char *)b->recv[t] + b->recv_bytes, GUARD_BYTE, GUARD_BYTES);
    memset((char *)b->send[t] + b->send_bytes, GUARD_BYTE, GUARD_BYTES);
    if (c->coll == BENCH_BROADCAST && c->rank != c->root) continue;
    void *in = data_input_ptr(c, b, t, in_place);
    size_t n_in = c->coll == BENCH_BROADCAST ? c->count : c->send_elems;
    for (size_t j = 0; j < n_in; j++)
      dtype_store(in, c->dtype, j, value_of(c, range, lo, c->rank, j, t));
  }
}

static double tolerance_of(const bench_case_t *c, double expected) {
  double rel = 0.0;
  if (coll_is_reducing(c->coll) && c->op == HV_AVERAGE) rel = 2.0 * dtype_epsilon(c->dtype);
  if (c->compression == HV_COMPRESSION_FP16) rel += 2.0 * dtype_epsilon(HV_FLOAT16);
  if (c->compression == HV_COMPRESSION_BF16) rel += 2.0 * dtype_epsilon(HV_BFLOAT16);
  return rel * fabs(expected);
}

void data_check(const bench_case_t *c, const bench_buffers_t *b, int in_place,
                long long *wrong, long long *oob) {
  long range, lo;
  value_range(c, &range, &lo);
  long long bad = 0, out = 0;
  (void)in_place;
  for (int t = 0; t < b->tensors; t++) {
    for (size_t k = 0; k < c->recv_elems; k++) {
      double want = expected_of(c, range, lo, k, t);
      double got = dtype_load(b->recv[t], c->dtype, k);
      /* Written as !(<=) so a NaN result counts as wrong. The 0xA5 sentinel left by
       * an element never written is not an integer in the float dtypes, and outside
       * the value range of the integer ones below 19 ranks. */
      if (!(fabs(got - want) <= tolerance_of(c, want))) bad++;
    }
    const unsigned char *g = (const unsigned char *)b->recv[t] + b->recv_bytes;
    for (int i = 0; i < GUARD_BYTES; i++) out += g[i] != GUARD_BYTE;
    g = (const unsigned char *)b->send[t] + b->send_bytes;
    for (int i = 0; i < GUARD_BYTES; i++) out += g[i] != GUARD_BYTE;
  }
  *wrong = bad;
  *oob = out;
}

int data_fault_enabled(void) {
  const char *env = getenv("HVBENCH_INJECT_FAULT");
  return env && strcmp(env, "1") == 0;
}

void data_inject_fault(const bench_case_t *c, bench_buffers_t *b, int in_place) {
  (void)in_place;
  if (c->rank != c->nranks - 1 || c->recv_elems == 0) return;
  size_t k = c->recv_elems / 2;
  double v = dtype_load(b->recv[0], c->dtype, k);
  /* A change that stays in range and is exact in every dtype. */
  double bad;
  if (dtype_is_float(c->dtype)) bad = (isfinite(v) && v != 0.0) ? v * 2.0 : 1.0;
  else bad = v > 0 ? v - 1.0 : v + 1.0;
  dtype_store(b->recv[0], c->dtype, k, bad);
}
