/* unit_pieces.c: unit tests of the engine's pieces: the name hash map (against a
 * brute-force reference under random insert, insert-if-absent and remove), the response cache (bit
 * assignment, metadata match, eviction), fusion packing conversions with scaling
 * and compression, the element-wise reductions, and size/env parsing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hashmap.h"
#include "hv_internal.h"
#include "reduce.h"
#include "response_cache.h"
#include "test_util.h"

static void test_hashmap(void) {
  enum { KEYS = 2000 };
  static char names[KEYS][16];
  static int present[KEYS];
  hv__map_t map = {0};
  for (int i = 0; i < KEYS; i++) snprintf(names[i], sizeof names[i], "grad/%d", i);
  uint64_t s = 12345;
  for (int step = 0; step < 200000; step++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    int k = (int)((s >> 33) % KEYS);
    if ((s >> 20) & 1) {
      if ((s >> 21) & 1) {
        hv__map_put(&map, names[k], &present[k]);
      } else {
        /* Insert-if-absent: 1 and the map unchanged when present (the value passed
         * here would fail the final get), else 0. */
        int rc = hv__map_insert_new_hashed(&map, names[k], hv__hash_string(names[k]), present[k] ? (void *)names[k] : &present[k]);
        CHECK(rc == present[k], "insert_new %s: %d, present %d", names[k], rc, present[k]);
      }
      present[k] = 1;
    } else {
      void *v = hv__map_remove(&map, names[k]);
      CHECK((v != NULL) == present[k], "remove %s", names[k]);
      present[k] = 0;
    }
  }
  size_t count = 0;
  for (int k = 0; k < KEYS; k++) {
    /* Through another pointer to the same text (the put/remove above pass the stored
     * key itself, which matches without a comparison). */
    char copy[16];
    memcpy(copy, names[k], sizeof copy);
    CHECK(hv__hash_bytes(copy, strlen(copy)) == hv__hash_string(names[k]), "hash_bytes %s", copy);
    void *v = hv__map_get(&map, copy);
    CHECK((v == &present[k]) == present[k] && (v == NULL) == !present[k], "get %s", names[k]);
    count += (size_t)present[k];
  }
  CHECK(map.count == count, "map count %zu, reference %zu", map.count, count);
  hv__map_free(&map);
}

static void test_cache(void) {
  hv__cache_t cache;
  CHECK(hv__cache_init(&cache, 3, 2) == 0, "cache init");
  hv__meta_t m = {0};
  m.coll = HV__COLL_ALLREDUCE;
  m.dtype = HV_FLOAT32;
  m.count = 10;
  CHECK(hv__cache_insert(&cache, "a", &m, NULL) == 0, "first bit is 0");
  CHECK(hv__cache_insert(&cache, "b", &m, NULL) == 1, "second bit is 1");
  CHECK(hv__cache_insert(&cache, "a", &m, NULL) == -1, "no double insert");
  CHECK(hv__cache_lookup(&cache, "a", hv__hash_string("a"), &m) == 0, "lookup a");
  hv__meta_t other = m;
  other.count = 11;
  CHECK(hv__cache_lookup(&cache, "a", hv__hash_string("a"), &other) == -1, "metadata must match");
  CHECK(hv__cache_find(&cache, "a") == 0, "find ignores metadata");
  hv__cache_evict(&cache, 0);
  CHECK(hv__cache_find(&cache, "a") == -1, "evicted");
  CHECK(hv__cache_insert(&cache, "c", &m, NULL) == 0, "lowest free bit reused");
  CHECK(hv__cache_insert(&cache, "d", &m, NULL) == 2, "third");
  CHECK(hv__cache_insert(&cache, "e", &m, NULL) == -1, "full cache refuses");
  uint64_t counts[2] = {3, 5};
  hv__cache_evict(&cache, 1);
  int bit = hv__cache_insert(&cache, "v", &m, counts);
  CHECK(bit == 1 && hv__cache_entry(&cache, bit)->all_counts[1] == 5, "allgatherv counts kept");
  hv__cache_free(&cache);
}

static void test_convert_and_reduce(void) {
  enum { N = 1000 };
  float src[N], back[N];
  uint16_t packed[N];
  for (int i = 0; i < N; i++) src[i] = (float)(i % 50) - 25.0f;
  hv__convert(packed, HV_FLOAT16, src, HV_FLOAT32, N, 0.5);
  hv__convert(back, HV_FLOAT32, packed, HV_FLOAT16, N, 4.0);
  CHECK_ELEMENTS(back, HV_FLOAT32, (size_t)N, (double)src[i] * 2.0, "fp16 pack with prescale, unpack with postscale");
  hv__convert(packed, HV_BFLOAT16, src, HV_FLOAT32, N, 1.0);
  hv__convert(back, HV_FLOAT32, packed, HV_BFLOAT16, N, 1.0);
  CHECK_ELEMENTS(back, HV_FLOAT32, (size_t)N, (double)src[i], "bf16 round trip of small integers");
  for (int dt = 0; dt < HV_NUM_DTYPES; dt++) {
    char a[N * 8], b[N * 8];
    for (int i = 0; i < N; i++) elem_set(a, (hv_dtype_t)dt, (size_t)i, i % 7), elem_set(b, (hv_dtype_t)dt, (size_t)i, i % 5);
    hv__reduce(a, b, N, (hv_dtype_t)dt, HV_SUM);
    CHECK_ELEMENTS(a, (hv_dtype_t)dt, (size_t)N, (double)(i % 7 + i % 5), "sum %s", hv_dtype_name((hv_dtype_t)dt));
    hv__reduce(a, b, N, (hv_dtype_t)dt, HV_MIN);
    CHECK_ELEMENTS(a, (hv_dtype_t)dt, (size_t)N, (double)(i % 5), "min %s", hv_dtype_name((hv_dtype_t)dt));
  }
  int32_t big[2] = {2147483647, -2147483647 - 1}, one[2] = {1, -1};
  hv__reduce(big, one, 2, HV_INT32, HV_SUM);
  CHECK(big[0] == -2147483647 - 1 && big[1] == 2147483647, "int32 sums wrap around");
  float avg[3] = {3, 7, 10};
  hv__divide(avg, 3, HV_FLOAT32, 3);
  CHECK(avg[0] == 1 && avg[2] == 10.0f / 3.0f, "divide");
}

/* The vectorised fp16 loops (half_simd.c, used by hv__convert and hv__reduce when the
 * CPU has F16C) must give the bits of the portable per-element functions. */
static void test_simd_matches_scalar(void) {
  enum { N = 10007 };
  static float src[N], back[N];
  static uint16_t packed[N], a[N], b[N];
  uint64_t s = 99;
  for (int i = 0; i < N; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    src[i] = ((float)(s >> 40) / 16777216.0f - 0.5f) * (i % 2 ? 1e5f : 1e-3f);
  }
  hv__convert(packed, HV_FLOAT16, src, HV_FLOAT32, N, 0.75);
  size_t bad = 0;
  for (int i = 0; i < N; i++) bad += packed[i] != hv_float_to_half(src[i] * 0.75f);
  CHECK(bad == 0, "f32->f16 packing: %zu elements differ from hv_float_to_half", bad);
  hv__convert(back, HV_FLOAT32, packed, HV_FLOAT16, N, 2.0);
  bad = 0;
  for (int i = 0; i < N; i++) bad += back[i] != hv_half_to_float(packed[i]) * 2.0f;
  CHECK(bad == 0, "f16->f32 unpacking: %zu elements differ", bad);
  for (int i = 0; i < N; i++) a[i] = packed[i], b[i] = packed[(i * 7) % N];
  hv__reduce(a, b, N, HV_FLOAT16, HV_SUM);
  bad = 0;
  for (int i = 0; i < N; i++)
    bad += a[i] != hv_float_to_half(hv_half_to_float(packed[i]) + hv_half_to_float(packed[(i * 7) % N]));
  CHECK(bad == 0, "fp16 sum: %zu elements differ", bad);
}

static void test_parsing(void) {
  size_t v;
  CHECK(hv__parse_size("64M", &v) == 0 && v == 64u << 20, "64M");
  CHECK(hv__parse_size("4k", &v) == 0 && v == 4096, "4k");
  CHECK(hv__parse_size("1048576", &v) == 0 && v == 1048576, "plain");
  CHECK(hv__parse_size("12Q", &v) != 0 && hv__parse_size("", &v) != 0 && hv__parse_size("-1", &v) != 0, "bad sizes");
  hv__config_t c;
  char err[256];
  setenv("HV_FUSION_THRESHOLD", "lots", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_ERR_INVALID_ARGUMENT && strstr(err, "HV_FUSION_THRESHOLD"), "bad env: %s", err);
  unsetenv("HV_FUSION_THRESHOLD");
  setenv("HV_ALLREDUCE_ALGO", "bogus", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_ERR_INVALID_ARGUMENT && strstr(err, "ring"), "bad algo: %s", err);
  unsetenv("HV_ALLREDUCE_ALGO");
  /* The engine turns the cycle into a long count of nanoseconds (tests/fuzz found 3e47). */
  setenv("HV_CYCLE_TIME", "3e47", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_ERR_INVALID_ARGUMENT && strstr(err, "60000"), "huge cycle: %s", err);
  unsetenv("HV_CYCLE_TIME");
  /* The link model: a rate and a latency; HV_SMALL_ALLREDUCE_BYTES given beats it. */
  setenv("HV_LINK_GBITS", "fast", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_ERR_INVALID_ARGUMENT && strstr(err, "HV_LINK_GBITS"), "bad link: %s", err);
  setenv("HV_LINK_GBITS", "0", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_ERR_INVALID_ARGUMENT, "zero link rate accepted");
  setenv("HV_LINK_GBITS", "25", 1);
  setenv("HV_LINK_LATENCY_US", "-3", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_ERR_INVALID_ARGUMENT && strstr(err, "HV_LINK_LATENCY_US"), "bad latency: %s", err);
  setenv("HV_LINK_LATENCY_US", "8", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_SUCCESS && c.link_gbits == 25 && c.link_latency_us == 8 &&
            !c.small_allreduce_given, "link model");
  setenv("HV_SMALL_ALLREDUCE_BYTES", "32K", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_SUCCESS && c.small_allreduce_given && c.small_allreduce_bytes == 32768,
        "explicit limit");
  unsetenv("HV_SMALL_ALLREDUCE_BYTES");
  unsetenv("HV_LINK_GBITS");
  unsetenv("HV_LINK_LATENCY_US");
  /* The chunk across nodes: auto (0, resolved at hv_init: net_chunk.c) or 64 to 1G. */
  setenv("HV_NET_CHUNK_BYTES", "63", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_ERR_INVALID_ARGUMENT && strstr(err, "HV_NET_CHUNK_BYTES"),
        "tiny net chunk: %s", err);
  setenv("HV_NET_CHUNK_BYTES", "2G", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_ERR_INVALID_ARGUMENT, "huge net chunk accepted");
  setenv("HV_NET_CHUNK_BYTES", "63K", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_SUCCESS && c.net_chunk_bytes == 64512, "net chunk 63K");
  setenv("HV_NET_CHUNK_BYTES", "auto", 1);
  CHECK(hv__config_load(&c, err, sizeof err) == HV_SUCCESS && c.net_chunk_bytes == 0, "net chunk auto");
  unsetenv("HV_NET_CHUNK_BYTES");
  CHECK(hv__config_load(&c, err, sizeof err) == HV_SUCCESS && c.fusion_threshold == 128u << 20 &&
            c.cycle_time_ms == 1.0 && c.stall_check_s == 60, "defaults");
  CHECK(strstr(hv_strerror(HV_ERR_MISMATCH), "mismatch") != NULL, "strerror text");
}

/* Size products that wrap size_t are refused with HV_ERR_INVALID_ARGUMENT (issue 27):
 * the shared-memory region (slot x local ranks), and the algorithms' reduce-scatter
 * (block x ranks x element size) and all-to-all (block bytes x ranks), which a caller
 * other than the engine's checked API may reach. */
static hv_result_t last_code;
static char last_detail[256];
static void record(void *owner, const char *detail) {
  (void)owner;
  snprintf(last_detail, sizeof last_detail, "%s", detail);
}

static void test_size_overflow(void) {
  CHECK(hv__shm_region_bytes(4, 4096) >= 4 * 4096, "region of 4 x 4K: %zu", hv__shm_region_bytes(4, 4096));
  CHECK(hv__shm_region_bytes(32, (size_t)1e18) == 0, "32 x 1e18 bytes must overflow: %zu",
        hv__shm_region_bytes(32, (size_t)1e18));
  CHECK(hv__shm_region_bytes(2, SIZE_MAX - 10) == 0, "slot rounding past SIZE_MAX: %zu",
        hv__shm_region_bytes(2, SIZE_MAX - 10));
  CHECK(hv__shm_region_bytes(1, SIZE_MAX - 100) == 0, "a slot of SIZE_MAX - 100 plus the header: %zu",
        hv__shm_region_bytes(1, SIZE_MAX - 100));

  hv__algo_host_t host;
  memset(&host, 0, sizeof host);
  host.errors.record = record;
  hv__algo_ctx_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.host = &host;
  ctx.transport.size = 4;
  float buf[4] = {0};
  const size_t block = SIZE_MAX / 4 / 4 + 1; /* x 4 ranks x 4 bytes wraps */
  char want[160];
  last_detail[0] = '\0';
  last_code = hv__reducescatter(&ctx, buf, block, HV_FLOAT32, HV_SUM);
  snprintf(want, sizeof want, "a block of %zu elements x 4 ranks x 4 bytes (float32) does not fit", block);
  CHECK(last_code == HV_ERR_INVALID_ARGUMENT && strstr(last_detail, want), "reducescatter overflow: %d '%s'",
        (int)last_code, last_detail);
  last_detail[0] = '\0';
  last_code = hv__alltoall(&ctx, buf, buf, SIZE_MAX / 4 + 1);
  snprintf(want, sizeof want, "blocks of %zu bytes x 4 ranks do not fit", SIZE_MAX / 4 + 1);
  CHECK(last_code == HV_ERR_INVALID_ARGUMENT && strstr(last_detail, want), "alltoall overflow: %d '%s'",
        (int)last_code, last_detail);
}

int main(void) {
  test_hashmap();
  test_cache();
  test_convert_and_reduce();
  test_simd_matches_scalar();
  test_parsing();
  test_size_overflow();
  printf("%d passed, %d failed\n", check_count - check_failures, check_failures);
  return check_failures ? 1 : 0;
}
