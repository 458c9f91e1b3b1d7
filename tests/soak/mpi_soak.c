/* mpi_soak.c: the soak test (issue #11, "long runs stay flat"): thousands of mixed
 * collectives with random sizes, dtypes, ops and roots, submitted in a different
 * random order on every rank, with fusion and compression on. Every result is
 * checked exactly; resident memory, open file descriptors and threads are measured
 * after a warm-up and at the end, and must not grow.
 *
 * The schedule comes from one seeded generator, identical on every rank. Round 0
 * submits every collective at the largest size (and a full fusion buffer), so every
 * grow-only buffer reaches its ceiling inside the warm-up. Each later round draws
 * 1..24 tensors from three kinds of names: a stable pool (same metadata every time:
 * the response cache's steady state), a morphing pool (same names, new metadata each
 * time: cache evictions) and fresh names (the coordinator path; they also fill the
 * cache, after which new names are negotiated uncached). Each rank submits the round
 * in its own random order (sometimes as a group, with small random delays), waits in
 * another order (hv_wait, hv_test polling, hv_wait_all), then every rank agrees on
 * failures and on stopping through one more allreduce.
 *
 * Values are exactly checkable: reductions use small integers, scaled by powers of
 * two, chosen so that every partial result is exact on the wire dtype (fp16 and bf16
 * included), so any reduction order gives the same bits and the result is compared
 * exactly; data-movement collectives carry random bytes compared bitwise.
 *
 *   CI form:   mpirun -np 4 mpi_soak --iterations 400             (about 4,800 collectives)
 *   benchmark: mpirun -np 4 mpi_soak --seconds 600 --warmup 300 --report 60
 * (tests/soak/README.md). Exit 0 when every rank passed, 1 otherwise. */
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clock.h"
#include "hv.h"
#include "hv_mpi.h"
#include "soak_usage.h"
#include "test_util.h"

/* Resident memory may grow after the warm-up by at most max(8 MiB, 10 %). What is
 * measured is RSS after malloc_trim: live memory plus what the allocators keep
 * (glibc's arenas, one per thread; Open MPI's free lists) plus fragmentation of heaps
 * where buffers of up to a few hundred KiB come and go in random order. Here two
 * samples of the same steady state differ by up to about 1 MiB; the margin leaves
 * room for other allocators and MPI builds, and a grow-only buffer that keeps
 * growing, or a leak of a few dozen bytes per collective over the benchmark form
 * (700,000 collectives in ten minutes), still goes past it.
 * The bytes malloc has handed out (mallinfo2, all arenas) are the finer figure: no
 * page granularity and no allocator caching, so they only move when something is
 * kept. After the warm-up they grow by under 0.2 MiB while the response cache fills
 * with names (1,024 entries by default), then stay put. More than 4 MiB means
 * something is kept per collective: 1 KiB each over the CI form's 4,800 collectives,
 * 6 bytes each over the benchmark's. Under AddressSanitizer freed memory sits in a
 * quarantine of up to 256 MiB and malloc is ASan's, so neither figure says anything
 * there: only descriptors and threads are checked, and LeakSanitizer checks the heap
 * at exit. */
#define RSS_GROWTH_MIB 8.0
#define RSS_GROWTH_FRACTION 0.10
#define HEAP_GROWTH_MIB 4.0

/* ThreadSanitizer too has its own malloc, and shadow memory that grows with every
 * address touched: the same holds there (tools/setup.sh runs the soak under both). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SOAK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SOAK_SANITIZED 1
#endif
#endif
#ifndef SOAK_SANITIZED
#define SOAK_SANITIZED 0
#endif

enum { K_ALLREDUCE, K_ALLGATHER, K_ALLGATHERV, K_BROADCAST, K_REDUCESCATTER, K_ALLTOALL, K_BARRIER, K_NUM };
static const char *const kind_names[K_NUM] = {"allreduce", "allgather", "allgatherv", "broadcast",
                                              "reducescatter", "alltoall", "barrier"};
static const int kind_weights[K_NUM] = {45, 10, 10, 10, 12, 10, 3}; /* percent */

#define MAX_PER_ROUND 24
#define PRIME_TENSORS (MAX_PER_ROUND + 7)
#define NSTABLE 48
#define NMORPH 16

static int R, N;
static hv_comm_t *comm;
static hv_compression_t env_compression = HV_COMPRESSION_NONE; /* what HV_COMPRESSION makes the default */
static size_t max_bytes = 384 << 10;
static int printed_failures;

/* ---- random numbers: splitmix64, the same sequence on every rank for one seed ---- */

typedef struct rng {
  uint64_t s;
} rng_t;

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static uint64_t rng_next(rng_t *g) { return mix64(g->s += 0x632be59bd9b4e019ull); }
static uint64_t rng_below(rng_t *g, uint64_t n) { return n ? rng_next(g) % n : 0; }
static double rng_unit(rng_t *g) { return (double)(rng_next(g) >> 11) * 0x1p-53; }

/* ---- what one tensor is, identical on every rank ---- */

typedef struct spec {
  int kind;
  hv_dtype_t dtype;
  hv_op_t op;
  hv_compression_t compression; /* the per-call flag of a float32 allreduce */
  double prescale, postscale;
  int root, inplace;
  size_t count;        /* elements; per block for reducescatter and alltoall; the most
                          any rank gives for allgatherv */
  uint64_t shape_seed; /* allgatherv counts, spare capacity, NULL vs in-place send */
} spec_t;

typedef struct tensor {
  char name[400];
  spec_t s;
  uint64_t vseed; /* values: new every round */
  hv_dtype_t wire;
  uint64_t range; /* values in [0, range] or [-range, range] */
  int product_ranks; /* ranks whose product factors may be 2 or -1 (the rest give 1) */
  void *send, *recv;
  size_t *recvcounts;
  size_t capacity; /* allgatherv */
  hv_handle_t handle;
  int wait_mode;
} tensor_t;

static int is_float(hv_dtype_t t) {
  return t == HV_FLOAT16 || t == HV_BFLOAT16 || t == HV_FLOAT32 || t == HV_FLOAT64;
}

static void *xmalloc(size_t n) {
  if (n == 0) return NULL; /* count-0 tensors go in with NULL buffers, as hv allows */
  void *p = malloc(n);
  if (!p) {
    fprintf(stderr, "mpi_soak rank %d: out of memory (%zu bytes)\n", R, n);
    exit(2);
  }
  return p;
}

static size_t blocks_of(int kind) { return kind == K_REDUCESCATTER || kind == K_ALLTOALL ? (size_t)N : 1; }

static void spec_draw(rng_t *g, spec_t *s) {
  memset(s, 0, sizeof *s);
  int w = (int)rng_below(g, 100), k = 0;
  while (w >= kind_weights[k]) w -= kind_weights[k++];
  s->kind = k;
  s->dtype = rng_below(g, 3) == 0 ? HV_FLOAT32 : (hv_dtype_t)rng_below(g, HV_NUM_DTYPES);
  s->op = HV_SUM;
  if (k == K_ALLREDUCE || k == K_REDUCESCATTER)
    do s->op = (hv_op_t)rng_below(g, HV_NUM_OPS);
    while (s->op == HV_AVERAGE && !is_float(s->dtype));
  s->compression = HV_COMPRESSION_DEFAULT;
  if (k == K_ALLREDUCE && s->dtype == HV_FLOAT32) {
    static const hv_compression_t pick[10] = {HV_COMPRESSION_DEFAULT, HV_COMPRESSION_DEFAULT, HV_COMPRESSION_DEFAULT,
                                              HV_COMPRESSION_DEFAULT, HV_COMPRESSION_NONE,    HV_COMPRESSION_NONE,
                                              HV_COMPRESSION_FP16,    HV_COMPRESSION_FP16,    HV_COMPRESSION_FP16,
                                              HV_COMPRESSION_BF16};
    s->compression = pick[rng_below(g, 10)];
  }
  s->prescale = s->postscale = 1.0;
  /* Powers of two with prescale * postscale <= 1: scaled values keep their
   * significant bits and the result stays within the wire's exact range. */
  if (k == K_ALLREDUCE && is_float(s->dtype) && s->op != HV_PRODUCT && rng_below(g, 4) == 0) {
    static const double pairs[4][2] = {{0.5, 2.0}, {0.25, 4.0}, {0.5, 1.0}, {0.25, 2.0}};
    const double *p = pairs[rng_below(g, 4)];
    s->prescale = p[0];
    s->postscale = p[1];
  }
  s->root = (int)rng_below(g, (uint64_t)N);
  s->inplace = rng_below(g, 10) < 3;
  size_t most = max_bytes / hv_dtype_size(s->dtype) / blocks_of(k);
  if (most < 1) most = 1;
  /* Log-uniform: as many tensors of a few elements as of a few hundred KiB. */
  s->count = rng_below(g, 50) == 0 ? 0 : (size_t)exp(rng_unit(g) * log((double)most));
  if (s->count > most) s->count = most;
  s->shape_seed = rng_next(g);
}

/* ---- values ---- */

static hv_dtype_t wire_of(const spec_t *s) {
  if (s->kind == K_ALLREDUCE && s->dtype == HV_FLOAT32) {
    hv_compression_t c = s->compression == HV_COMPRESSION_DEFAULT ? env_compression : s->compression;
    if (c == HV_COMPRESSION_FP16) return HV_FLOAT16;
    if (c == HV_COMPRESSION_BF16) return HV_BFLOAT16;
  }
  return s->dtype;
}

/* The largest magnitude a partial result may reach and stay exact in the wire dtype. */
static double exact_limit(hv_dtype_t wire) {
  switch (wire) {
    case HV_UINT8: return 255;
    case HV_INT8: return 127;
    case HV_INT32: return 0x1p28;
    case HV_FLOAT16: return 2048;
    case HV_BFLOAT16: return 256;
    case HV_FLOAT32: return 0x1p24;
    default: return 0x1p50; /* int64, float64 (read back through double) */
  }
}

/* Products are of 1, 2 and -1: at most this many factors of 2 fit the wire dtype. */
static int product_limit(hv_dtype_t wire) {
  switch (wire) {
    case HV_UINT8: return 7;
    case HV_INT8: return 6;
    case HV_FLOAT16: return 14;
    default: return 30;
  }
}

static void tensor_ranges(tensor_t *t) {
  t->wire = wire_of(&t->s);
  double lim = exact_limit(t->wire);
  switch (t->s.op) {
    case HV_SUM: t->range = (uint64_t)(lim / N); break;
    case HV_AVERAGE: t->range = (uint64_t)(lim / ((double)N * N)); break; /* values N * w: see value_of */
    default: t->range = (uint64_t)lim; break;
  }
  t->product_ranks = N < product_limit(t->wire) ? N : product_limit(t->wire);
}

/* Rank r's input element i of a reduction. AVERAGE inputs are multiples of N, so the
 * sum divides by N exactly whatever N is. */
static double value_of(const tensor_t *t, int r, size_t i) {
  uint64_t h = mix64(t->vseed ^ mix64(((uint64_t)r << 48) ^ i));
  int is_signed = t->s.dtype != HV_UINT8;
  if (t->s.op == HV_PRODUCT) {
    if (r >= t->product_ranks) return 1;
    uint64_t k = h % (is_signed ? 3u : 2u);
    return k == 0 ? 1 : k == 1 ? 2 : -1;
  }
  double v = is_signed ? (double)(int64_t)(h % (2 * t->range + 1)) - (double)t->range : (double)(h % (t->range + 1));
  return t->s.op == HV_AVERAGE ? v * N : v;
}

static double expected_reduce(const tensor_t *t, size_t i) {
  double acc = 0;
  for (int r = 0; r < N; r++) {
    double x = t->s.prescale * value_of(t, r, i);
    if (r == 0) acc = x;
    else if (t->s.op == HV_MIN) acc = x < acc ? x : acc;
    else if (t->s.op == HV_MAX) acc = x > acc ? x : acc;
    else if (t->s.op == HV_PRODUCT) acc *= x;
    else acc += x;
  }
  acc *= t->s.postscale;
  return t->s.op == HV_AVERAGE ? acc / N : acc;
}

/* Random bytes of block (src -> dst) of a data-movement collective. */
static void fill_bytes(void *buf, size_t n, uint64_t seed, int src, int dst) {
  unsigned char *p = buf;
  uint64_t base = mix64(seed ^ ((uint64_t)(src + 1) << 40) ^ ((uint64_t)(dst + 1) << 20));
  for (size_t i = 0; i < n; i += 8) {
    uint64_t w = mix64(base + i);
    memcpy(p + i, &w, n - i < 8 ? n - i : 8);
  }
}

static size_t allgatherv_count(const tensor_t *t, int r) {
  return (size_t)(mix64(t->s.shape_seed + (uint64_t)r) % (t->s.count + 1));
}

/* ---- one tensor: prepare, submit, check ---- */

static void tensor_prepare(tensor_t *t) {
  const spec_t *s = &t->s;
  size_t es = hv_dtype_size(s->dtype), c = s->count, n = (size_t)N;
  tensor_ranges(t);
  t->send = t->recv = NULL;
  t->recvcounts = NULL;
  t->handle = NULL;
  switch (s->kind) {
    case K_ALLREDUCE:
      t->recv = xmalloc(c * es);
      if (s->inplace) {
        for (size_t i = 0; i < c; i++) elem_set(t->recv, s->dtype, i, value_of(t, R, i));
        t->send = (s->shape_seed & 1) ? NULL : t->recv; /* both spellings of in-place */
      } else {
        t->send = xmalloc(c * es);
        for (size_t i = 0; i < c; i++) elem_set(t->send, s->dtype, i, value_of(t, R, i));
        if (t->recv) memset(t->recv, 0xa5, c * es);
      }
      break;
    case K_REDUCESCATTER:
      t->send = xmalloc(n * c * es);
      for (size_t i = 0; i < n * c; i++) elem_set(t->send, s->dtype, i, value_of(t, R, i));
      t->recv = xmalloc(c * es);
      if (t->recv) memset(t->recv, 0xa5, c * es);
      break;
    case K_ALLGATHER:
      t->recv = xmalloc(n * c * es);
      if (t->recv) memset(t->recv, 0xa5, n * c * es);
      t->send = s->inplace && t->recv ? (char *)t->recv + (size_t)R * c * es : xmalloc(c * es);
      if (t->send) fill_bytes(t->send, c * es, t->vseed, R, 0);
      break;
    case K_ALLGATHERV: {
      size_t total = 0;
      for (int r = 0; r < N; r++) total += allgatherv_count(t, r);
      t->capacity = total + ((s->shape_seed >> 8) % 3 ? 0 : (s->shape_seed >> 16) % 17);
      t->recv = xmalloc(t->capacity * es);
      if (t->recv) memset(t->recv, 0xa5, t->capacity * es);
      t->recvcounts = xmalloc(n * sizeof(size_t));
      memset(t->recvcounts, 0xff, n * sizeof(size_t));
      size_t mine = allgatherv_count(t, R);
      t->send = xmalloc(mine * es);
      if (t->send) fill_bytes(t->send, mine * es, t->vseed, R, 0);
      break;
    }
    case K_BROADCAST:
      t->recv = t->send = xmalloc(c * es);
      if (t->recv) fill_bytes(t->recv, c * es, t->vseed ^ (R == s->root ? 0 : 0x5555), R == s->root ? s->root : R, 0);
      break;
    case K_ALLTOALL:
      t->send = xmalloc(n * c * es);
      t->recv = xmalloc(n * c * es);
      for (int j = 0; j < N && t->send; j++) fill_bytes((char *)t->send + (size_t)j * c * es, c * es, t->vseed, R, j);
      if (t->recv) memset(t->recv, 0xa5, n * c * es);
      break;
    default:
      break;
  }
}

/* Bytes this rank contributes: the figure summed into "moved". */
static size_t tensor_bytes(const tensor_t *t) {
  size_t es = hv_dtype_size(t->s.dtype);
  if (t->s.kind == K_BARRIER) return 0;
  if (t->s.kind == K_ALLGATHERV) return allgatherv_count(t, R) * es;
  return t->s.count * blocks_of(t->s.kind) * es;
}

static void describe(const tensor_t *t, char *out, size_t len) {
  const spec_t *s = &t->s;
  snprintf(out, len, "%s '%.60s%s' %s %s count %zu root %d wire %s pre %g post %g%s", kind_names[s->kind], t->name,
           strlen(t->name) > 60 ? "..." : "", hv_dtype_name(s->dtype), hv_op_name(s->op), s->count, s->root,
           hv_dtype_name(t->wire), s->prescale, s->postscale, s->inplace ? " in-place" : "");
}

static hv_result_t tensor_submit(tensor_t *t) {
  const spec_t *s = &t->s;
  hv_allreduce_opts_t opts = {s->prescale, s->postscale, s->compression};
  switch (s->kind) {
    case K_ALLREDUCE:
      return hv_allreduce_async(comm, t->name, t->send, t->recv, s->count, s->dtype, s->op, &opts, &t->handle);
    case K_ALLGATHER:
      return hv_allgather_async(comm, t->name, t->send, t->recv, s->count, s->dtype, &t->handle);
    case K_ALLGATHERV:
      return hv_allgatherv_async(comm, t->name, t->send, allgatherv_count(t, R), s->dtype, t->recv, t->capacity,
                                 t->recvcounts, &t->handle);
    case K_BROADCAST: return hv_broadcast_async(comm, t->name, t->recv, s->count, s->dtype, s->root, &t->handle);
    case K_REDUCESCATTER:
      return hv_reducescatter_async(comm, t->name, t->send, t->recv, s->count, s->dtype, s->op, &t->handle);
    case K_ALLTOALL: return hv_alltoall_async(comm, t->name, t->send, t->recv, s->count, s->dtype, &t->handle);
    default: return hv_barrier_async(comm, &t->handle);
  }
}

static void fail_tensor(const tensor_t *t, const char *what, size_t at, double got, double want) {
  check_failures++;
  if (printed_failures++ >= 20) return;
  char d[256];
  describe(t, d, sizeof d);
  fprintf(stderr, "FAIL rank %d %s: %s at %zu (got %.17g, want %.17g)\n", R, d, what, at, got, want);
}

/* Compares block [at, at + n) bytes of buf with the bytes fill_bytes gives. */
static void check_block(const tensor_t *t, const void *buf, size_t n, int src, int dst, const char *what) {
  static unsigned char *want;
  static size_t want_cap;
  if (n > want_cap) {
    free(want);
    want = xmalloc(n);
    want_cap = n;
  }
  if (!n) return;
  fill_bytes(want, n, t->vseed, src, dst);
  const unsigned char *got = buf;
  if (memcmp(got, want, n) == 0) return;
  size_t i = 0;
  while (got[i] == want[i]) i++;
  fail_tensor(t, what, i, got[i], want[i]);
}

static void tensor_check(const tensor_t *t) {
  const spec_t *s = &t->s;
  size_t es = hv_dtype_size(s->dtype), c = s->count;
  check_count++;
  switch (s->kind) {
    case K_ALLREDUCE:
    case K_REDUCESCATTER: {
      size_t base = s->kind == K_REDUCESCATTER ? (size_t)R * c : 0;
      for (size_t i = 0; i < c; i++) {
        double got = elem_get(t->recv, s->dtype, i), want = expected_reduce(t, base + i);
        if (got != want) {
          fail_tensor(t, "element", i, got, want);
          break;
        }
      }
      break;
    }
    case K_ALLGATHER:
      for (int j = 0; j < N; j++) check_block(t, (char *)t->recv + (size_t)j * c * es, c * es, j, 0, "block of rank");
      break;
    case K_ALLGATHERV: {
      size_t off = 0;
      for (int j = 0; j < N; j++) {
        size_t cj = allgatherv_count(t, j);
        if (t->recvcounts[j] != cj) {
          fail_tensor(t, "recvcounts of rank", (size_t)j, (double)t->recvcounts[j], (double)cj);
          return;
        }
        check_block(t, (char *)t->recv + off * es, cj * es, j, 0, "block of rank");
        off += cj;
      }
      break;
    }
    case K_BROADCAST: check_block(t, t->recv, c * es, s->root, 0, "byte"); break;
    case K_ALLTOALL:
      for (int j = 0; j < N; j++) check_block(t, (char *)t->recv + (size_t)j * c * es, c * es, j, R, "block from rank");
      break;
    default: break;
  }
}

static void tensor_release(tensor_t *t) {
  int send_owned = t->send && t->send != t->recv &&
                   !(t->s.kind == K_ALLGATHER && t->s.inplace && t->recv);
  if (send_owned) free(t->send);
  free(t->recv);
  free(t->recvcounts);
  t->send = t->recv = NULL;
  t->recvcounts = NULL;
}

/* ---- rounds ---- */

typedef struct options {
  long iterations; /* rounds; 0: until --seconds */
  double seconds;
  long warmup;
  double report_s;
  long reinit_every;
  uint64_t seed;
} options_t;

static spec_t stable_specs[NSTABLE];

/* Round 0: every grow-only buffer of hv (fusion buffer, algorithm scratch, request
 * arrays) to its ceiling, so growth after the warm-up means something. */
static int build_prime_round(tensor_t *ts, rng_t *g) {
  int k = 0;
  for (; k < MAX_PER_ROUND; k++) {
    ts[k].s = (spec_t){.kind = K_ALLREDUCE, .dtype = HV_INT32, .op = HV_SUM, .prescale = 1, .postscale = 1,
                       .count = max_bytes / 4};
    snprintf(ts[k].name, sizeof ts[k].name, "soak.prime.%d", k);
  }
  static const int kinds[5] = {K_ALLGATHER, K_ALLGATHERV, K_BROADCAST, K_REDUCESCATTER, K_ALLTOALL};
  for (int j = 0; j < 5; j++, k++) {
    ts[k].s = (spec_t){.kind = kinds[j], .dtype = HV_INT32, .op = HV_SUM, .prescale = 1, .postscale = 1,
                       .count = max_bytes / 4 / blocks_of(kinds[j]), .shape_seed = rng_next(g)};
    snprintf(ts[k].name, sizeof ts[k].name, "soak.prime.%s", kind_names[kinds[j]]);
  }
  /* Lone tensors that still go through the fusion buffer: scaled, and compressed. */
  ts[k].s = (spec_t){.kind = K_ALLREDUCE, .dtype = HV_FLOAT64, .op = HV_SUM, .prescale = 0.5, .postscale = 2,
                     .count = max_bytes / 8};
  snprintf(ts[k].name, sizeof ts[k].name, "soak.prime.scaled");
  k++;
  ts[k].s = (spec_t){.kind = K_ALLREDUCE, .dtype = HV_FLOAT32, .op = HV_SUM, .prescale = 1, .postscale = 1,
                     .compression = HV_COMPRESSION_FP16, .count = max_bytes / 4};
  snprintf(ts[k].name, sizeof ts[k].name, "soak.prime.fp16");
  k++;
  for (int j = 0; j < k; j++) ts[j].vseed = rng_next(g);
  return k;
}

static int build_round(tensor_t *ts, rng_t *g, uint64_t rno) {
  int K = 1 + (int)rng_below(g, MAX_PER_ROUND);
  uint64_t used_stable = 0, used_morph = 0;
  for (int k = 0; k < K; k++) {
    tensor_t *t = &ts[k];
    uint64_t u = rng_below(g, 100), j = rng_below(g, 64);
    if (u < 55 && j < NSTABLE && !(used_stable >> j & 1)) {
      used_stable |= 1ull << j;
      t->s = stable_specs[j];
      snprintf(t->name, sizeof t->name, "soak.stable.%d", (int)j);
    } else if (u >= 55 && u < 75 && j < NMORPH && !(used_morph >> j & 1)) {
      used_morph |= 1ull << j;
      spec_draw(g, &t->s);
      snprintf(t->name, sizeof t->name, "soak.morph.%d", (int)j);
    } else {
      spec_draw(g, &t->s);
      int len = snprintf(t->name, sizeof t->name, "soak.fresh.%llu.%d", (unsigned long long)rno, k);
      if (rng_below(g, 10) == 0) /* long names: negotiation messages of every length */
        for (int rep = (int)rng_below(g, 16); rep >= 0 && len < 300; rep--)
          len += snprintf(t->name + len, sizeof t->name - (size_t)len, "/layer%d.weight", rep);
    }
    t->vseed = rng_next(g);
  }
  return K;
}

static void shuffle(int *order, int n, rng_t *g) {
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)rng_below(g, (uint64_t)i + 1), tmp = order[i];
    order[i] = order[j];
    order[j] = tmp;
  }
}

static void submit_and_wait(tensor_t *ts, int K, rng_t *mine) {
  int order[PRIME_TENSORS];
  shuffle(order, K, mine);
  int grouped = rng_below(mine, 5) == 0;
  if (grouped) CHECK_RC(hv_group_start(comm));
  for (int k = 0; k < K; k++) {
    tensor_t *t = &ts[order[k]];
    uint64_t jitter = rng_below(mine, 64);
    if (jitter == 0) nanosleep(&(struct timespec){0, 100000}, NULL); /* a late rank */
    else if (jitter < 4) sched_yield();
    hv_result_t rc = tensor_submit(t);
    if (rc != HV_SUCCESS) {
      char d[256];
      describe(t, d, sizeof d);
      CHECK(0, "rank %d: submitting %s: %s (%s)", R, d, hv_strerror(rc), hv_comm_last_error(comm));
      t->handle = NULL;
    }
  }
  if (grouped) CHECK_RC(hv_group_end(comm));

  hv_handle_t later[PRIME_TENSORS];
  int nlater = 0, failed[PRIME_TENSORS] = {0};
  shuffle(order, K, mine);
  for (int k = 0; k < K; k++) {
    tensor_t *t = &ts[order[k]];
    if (!t->handle) {
      failed[order[k]] = 1;
      continue;
    }
    uint64_t mode = rng_below(mine, 10);
    hv_result_t rc = HV_SUCCESS;
    if (mode < 7) {
      rc = hv_wait(t->handle);
    } else if (mode < 8) {
      int done = 0;
      while (!done && rc == HV_SUCCESS) {
        rc = hv_test(t->handle, &done);
        if (!done) sched_yield();
      }
    } else {
      later[nlater++] = t->handle;
      continue;
    }
    if (rc != HV_SUCCESS) {
      char d[256];
      describe(t, d, sizeof d);
      CHECK(0, "rank %d: waiting for %s: %s (%s)", R, d, hv_strerror(rc), hv_comm_last_error(comm));
      failed[order[k]] = 1;
    }
  }
  if (nlater) {
    hv_result_t rc = hv_wait_all(later, (size_t)nlater);
    CHECK(rc == HV_SUCCESS, "rank %d: hv_wait_all of %d handles: %s (%s)", R, nlater, hv_strerror(rc),
          hv_comm_last_error(comm));
  }
  for (int k = 0; k < K; k++)
    if (!failed[k]) tensor_check(&ts[k]);
}

static void usage(void) {
  fprintf(stderr,
          "usage: mpi_soak [--iterations N] [--seconds S] [--warmup N] [--report S] [--reinit-every N]\n"
          "                [--max-bytes B] [--seed S]\n"
          "  --iterations N    rounds of 1..%d collectives (default 400; with --seconds: no limit)\n"
          "  --seconds S       run until S seconds have passed (rank 0's clock)\n"
          "  --warmup N        rounds before the first measurement (default 50)\n"
          "  --report S        rank 0 prints its figures every S seconds (default: off)\n"
          "  --reinit-every N  hv_shutdown and hv_init_from_mpi again every N rounds (default: never)\n"
          "  --max-bytes B     the largest per-rank tensor (default 393216)\n"
          "  --seed S          the schedule's seed (default 11)\n",
          MAX_PER_ROUND);
}

static int parse_options(int argc, char **argv, options_t *o) {
  *o = (options_t){.iterations = -1, .seconds = 0, .warmup = 50, .report_s = 0, .reinit_every = 0, .seed = 11};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return -1;
    char *end;
    if (strcmp(a, "--iterations") == 0) o->iterations = strtol(v, &end, 10);
    else if (strcmp(a, "--seconds") == 0) o->seconds = strtod(v, &end);
    else if (strcmp(a, "--warmup") == 0) o->warmup = strtol(v, &end, 10);
    else if (strcmp(a, "--report") == 0) o->report_s = strtod(v, &end);
    else if (strcmp(a, "--reinit-every") == 0) o->reinit_every = strtol(v, &end, 10);
    else if (strcmp(a, "--max-bytes") == 0) max_bytes = (size_t)strtoull(v, &end, 10);
    else if (strcmp(a, "--seed") == 0) o->seed = strtoull(v, &end, 10);
    else return -1;
    if (*end) return -1;
    i++;
  }
  if (o->iterations < 0) o->iterations = o->seconds > 0 ? 0 : 400;
  if (o->warmup < 1 || max_bytes < 64 || o->reinit_every < 0 || o->seconds < 0) return -1;
  return 0;
}

/* Figures of one rank, gathered to rank 0 for the summary. */
enum { F_ROUNDS, F_COLLS, F_BYTES, F_RSS0, F_RSS1, F_HEAP0, F_HEAP1, F_FDS0, F_FDS1, F_THR0, F_THR1,
       F_SECONDS, F_FAILED, F_NUM };

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  MPI_Comm_size(MPI_COMM_WORLD, &N);
  options_t opt;
  if (parse_options(argc, argv, &opt)) {
    if (R == 0) usage();
    MPI_Finalize();
    return 2;
  }
  const char *ec = getenv("HV_COMPRESSION");
  if (ec && strcasecmp(ec, "fp16") == 0) env_compression = HV_COMPRESSION_FP16;
  if (ec && strcasecmp(ec, "bf16") == 0) env_compression = HV_COMPRESSION_BF16;

  soak_usage_t before_init = soak_usage_now();
  hv_result_t rc = hv_init_from_mpi(MPI_COMM_WORLD, &comm);
  if (rc != HV_SUCCESS) {
    fprintf(stderr, "mpi_soak rank %d: hv_init_from_mpi: %s (%s)\n", R, hv_strerror(rc), hv_comm_last_error(NULL));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  test_comm = comm;
  if (R == 0) {
    const char *fusion = getenv("HV_FUSION_THRESHOLD"), *cycle = getenv("HV_CYCLE_TIME");
    const char *cache = getenv("HV_CACHE_CAPACITY");
    printf("mpi_soak: %d ranks, seed %llu, %s %ld%s, warm-up %ld rounds, tensors up to %zu bytes, "
           "HV_COMPRESSION=%s HV_FUSION_THRESHOLD=%s HV_CYCLE_TIME=%s HV_CACHE_CAPACITY=%s%s\n",
           N, (unsigned long long)opt.seed, opt.seconds > 0 ? "seconds" : "rounds",
           opt.seconds > 0 ? (long)opt.seconds : opt.iterations, opt.reinit_every ? ", re-init" : "", opt.warmup,
           max_bytes, ec ? ec : "-", fusion ? fusion : "-", cycle ? cycle : "-", cache ? cache : "-",
           SOAK_SANITIZED ? " (sanitizer build: memory reported, not checked)" : "");
    fflush(stdout);
  }

  rng_t sched = {opt.seed}, mine = {mix64(opt.seed) ^ mix64(0x1000u + (uint64_t)R)};
  for (int j = 0; j < NSTABLE; j++) {
    rng_t g = {mix64(opt.seed * 1000003u + (uint64_t)j)};
    spec_draw(&g, &stable_specs[j]);
  }
  static tensor_t ts[PRIME_TENSORS];
  double f[F_NUM] = {0};
  soak_usage_t start = {0}, end = {0};
  int measured = 0, stop = 0;
  double t0 = now_s(), t_start = 0, next_report = opt.report_s;
  uint64_t rno = 0;
  for (; !stop && (opt.iterations == 0 || (long)rno < opt.iterations); rno++) {
    /* A new communicator starts with a prime round of its own: its buffers are then
     * full-sized before any measurement, as the first one's are. */
    int fresh_comm = rno == 0;
    if (opt.reinit_every && rno > 0 && rno % (uint64_t)opt.reinit_every == 0) {
      CHECK_RC(hv_shutdown(comm));
      rc = hv_init_from_mpi(MPI_COMM_WORLD, &comm);
      if (rc != HV_SUCCESS) {
        fprintf(stderr, "mpi_soak rank %d: re-init: %s (%s)\n", R, hv_strerror(rc), hv_comm_last_error(NULL));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      test_comm = comm;
      fresh_comm = 1;
    }
    int K = fresh_comm ? build_prime_round(ts, &sched) : build_round(ts, &sched, rno);
    for (int k = 0; k < K; k++) tensor_prepare(&ts[k]);
    int failures_before = check_failures;
    submit_and_wait(ts, K, &mine);
    for (int k = 0; k < K; k++) {
      f[F_BYTES] += (double)tensor_bytes(&ts[k]);
      tensor_release(&ts[k]);
    }
    f[F_COLLS] += K;

    /* Every rank learns whether any rank failed, and whether rank 0's time is up. */
    int32_t ctl[2] = {check_failures != failures_before, 0};
    double elapsed = now_s() - t0;
    if (R == 0 && opt.seconds > 0 && elapsed >= opt.seconds) ctl[1] = 1;
    CHECK_RC(hv_allreduce(comm, "soak.control", ctl, ctl, 2, HV_INT32, HV_MAX, NULL));
    stop = ctl[0] || ctl[1];
    if (ctl[0] && R == 0) fprintf(stderr, "mpi_soak: round %llu failed on some rank: stopping\n", (unsigned long long)rno);

    if ((long)rno + 1 == opt.warmup) {
      start = soak_usage_now();
      t_start = now_s();
      measured = 1;
    }
    if (R == 0 && opt.report_s > 0 && elapsed >= next_report) {
      soak_usage_t u = soak_usage_now();
      printf("mpi_soak: %6.0f s  round %8llu  %10.0f collectives  rank 0: RSS %.1f MiB, heap %.1f MiB, "
             "%d fds, %d threads\n",
             elapsed, (unsigned long long)rno + 1, f[F_COLLS], u.rss_mib, u.heap_mib, u.fds, u.threads);
      fflush(stdout);
      next_report = elapsed + opt.report_s;
    }
  }
  end = soak_usage_now();
  /* hv_shutdown on any rank ends every rank's engine (its thread leaves after the
   * shutdown round that its idle rounds join): a rank still on its way here would then
   * count one thread fewer. Under TSan on 2 cores that was 1 run in 5. */
  MPI_Barrier(MPI_COMM_WORLD);
  int failed_early = check_failures > 0;
  CHECK(measured || failed_early, "rank %d: the run (%llu rounds) ended within the warm-up (%ld rounds): run longer",
        R, (unsigned long long)rno, opt.warmup);

  /* Growth after the warm-up (see RSS_GROWTH_MIB for the margin). */
  double rss_limit = start.rss_mib * RSS_GROWTH_FRACTION > RSS_GROWTH_MIB ? start.rss_mib * RSS_GROWTH_FRACTION
                                                                          : RSS_GROWTH_MIB;
  if (measured) {
    CHECK(end.fds == start.fds, "rank %d: open file descriptors grew from %d to %d", R, start.fds, end.fds);
    CHECK(end.threads == start.threads, "rank %d: threads went from %d (%s) to %d (%s)", R, start.threads,
          start.thread_names, end.threads, end.thread_names);
    if (!SOAK_SANITIZED) {
      CHECK(end.rss_mib - start.rss_mib <= rss_limit, "rank %d: resident memory grew from %.1f to %.1f MiB (limit +%.1f)",
            R, start.rss_mib, end.rss_mib, rss_limit);
      CHECK(end.heap_mib - start.heap_mib <= HEAP_GROWTH_MIB,
            "rank %d: memory in use by malloc grew from %.2f to %.2f MiB (limit +%.1f)", R, start.heap_mib,
            end.heap_mib, HEAP_GROWTH_MIB);
    }
  }
  f[F_ROUNDS] = (double)rno;
  f[F_RSS0] = start.rss_mib, f[F_RSS1] = end.rss_mib;
  f[F_HEAP0] = start.heap_mib, f[F_HEAP1] = end.heap_mib;
  f[F_FDS0] = start.fds, f[F_FDS1] = end.fds;
  f[F_THR0] = start.threads, f[F_THR1] = end.threads;
  f[F_SECONDS] = measured ? now_s() - t_start : -1;

  /* After hv_shutdown the process is back to where it was before hv_init: the
   * background thread joined, shared memory unmapped, no descriptor left open. */
  CHECK_RC(hv_shutdown(comm));
  comm = test_comm = NULL;
  soak_usage_t after = soak_usage_now();
  CHECK(after.fds == before_init.fds, "rank %d: %d file descriptors open after hv_shutdown, %d before hv_init", R,
        after.fds, before_init.fds);
  CHECK(after.threads == before_init.threads, "rank %d: %d threads after hv_shutdown, %d before hv_init", R,
        after.threads, before_init.threads);
  f[F_FAILED] = check_failures;

  double *all = R == 0 ? calloc((size_t)N * F_NUM, sizeof(double)) : NULL;
  MPI_Gather(f, F_NUM, MPI_DOUBLE, all, F_NUM, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int total = 0;
  MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (R == 0) {
    for (int r = 0; r < N; r++) {
      const double *g = all + (size_t)r * F_NUM;
      printf("mpi_soak rank %d: %.0f rounds, %.0f collectives, %.2f GiB", r, g[F_ROUNDS], g[F_COLLS],
             g[F_BYTES] / (1024.0 * 1024 * 1024));
      if (g[F_SECONDS] < 0) {
        printf(", not measured (stopped within the warm-up), %.0f failures\n", g[F_FAILED]);
        continue;
      }
      double limit = g[F_RSS0] * RSS_GROWTH_FRACTION > RSS_GROWTH_MIB ? g[F_RSS0] * RSS_GROWTH_FRACTION : RSS_GROWTH_MIB;
      if (SOAK_SANITIZED)
        printf(", RSS %.1f -> %.1f MiB (%+.1f, not checked under a sanitizer)", g[F_RSS0], g[F_RSS1], g[F_RSS1] - g[F_RSS0]);
      else
        printf(", RSS %.1f -> %.1f MiB (%+.1f, limit +%.1f), heap %.2f -> %.2f MiB (%+.2f, limit +%.1f)", g[F_RSS0],
               g[F_RSS1], g[F_RSS1] - g[F_RSS0], limit, g[F_HEAP0], g[F_HEAP1], g[F_HEAP1] - g[F_HEAP0],
               HEAP_GROWTH_MIB);
      printf(", fds %.0f -> %.0f, threads %.0f -> %.0f, %.1f s after warm-up, %.0f failures\n", g[F_FDS0], g[F_FDS1],
             g[F_THR0], g[F_THR1], g[F_SECONDS], g[F_FAILED]);
    }
    printf("mpi_soak on %d ranks: %s, %d checks on rank 0, %d failures on all ranks, %.1f s\n", N,
           total ? "FAIL" : "PASS", check_count, total, now_s() - t0);
    free(all);
  }
  MPI_Finalize();
  return total ? 1 : 0;
}
