/* config.c: reads the HV_* environment variables into hv__config_t, with defaults,
 * and rejects malformed values with a message naming the variable. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hv_internal.h"


int hv__parse_size(const char *text, size_t *out) {
  char *end = NULL;
  errno = 0;
  double value = strtod(text, &end);
  if (end == text || errno != 0 || !(value >= 0)) return -1;
  double unit = 1;
  if (*end == 'k' || *end == 'K') unit = 1024.0, end++;
  else if (*end == 'm' || *end == 'M') unit = 1024.0 * 1024, end++;
  else if (*end == 'g' || *end == 'G') unit = 1024.0 * 1024 * 1024, end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end != '\0') return -1;
  double bytes = value * unit;
  if (bytes > 1e18) return -1;
  *out = (size_t)bytes;
  return 0;
}

static int parse_seconds(const char *text, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !(v >= 0) || isinf(v)) return -1;
  *out = v;
  return 0;
}

hv_result_t hv__config_load(hv__config_t *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  c->fusion_threshold = 128u << 20;
  c->cycle_time_ms = 1.0;
  c->allreduce_algo = HV__ALGO_AUTO;
  c->small_allreduce_bytes = 64u << 10;
  c->link_latency_us = 5;
  c->ring_chunk_bytes = 1u << 20;
  c->hierarchical = -1;
  c->shm_slot_bytes = 4u << 20;
  c->shm_cma = -1;
  c->cuda_staging_bytes = 4u << 20;
  c->cache_capacity = 1024;
  c->stall_check_s = 60;
  c->stall_shutdown_s = 0;
  c->timeout_s = 60;
  c->compression = HV_COMPRESSION_NONE;
  c->log_level = HV__LOG_WARNING;
  /* Simulated builds run thousands of ranks in one process: a megabyte each would
   * be gigabytes, so their recorder is off unless asked for. */
  c->flight_recorder_size = HV_SIMULATED ? 0 : 4096;
  c->flight_signal = 1;
  c->autotune_sample_s = 0.5;
  const char *v;

#define BAD(var, forms)                                                               \
  do {                                                                                \
    snprintf(err, errlen, "%s='%s' is not valid: expected %s", var, v, forms);       \
    return HV_ERR_INVALID_ARGUMENT;                                                   \
  } while (0)

  if ((v = getenv("HV_FUSION_THRESHOLD")) && *v)
    if (hv__parse_size(v, &c->fusion_threshold)) BAD("HV_FUSION_THRESHOLD", "a size in bytes such as 67108864, 64M or 0");
  /* Bounded: the engine's timed wait converts the cycle to a long count of nanoseconds
   * (found by tests/fuzz: HV_CYCLE_TIME=3e47 overflowed it); a minute is far beyond use. */
  if ((v = getenv("HV_CYCLE_TIME")) && *v)
    if (parse_seconds(v, &c->cycle_time_ms) || c->cycle_time_ms > 60000)
      BAD("HV_CYCLE_TIME", "milliseconds from 0 to 60000, such as 1 or 0.5");
  if ((v = getenv("HV_SMALL_ALLREDUCE_BYTES")) && *v) {
    if (hv__parse_size(v, &c->small_allreduce_bytes)) BAD("HV_SMALL_ALLREDUCE_BYTES", "a size such as 64K");
    c->small_allreduce_given = 1;
  }
  if ((v = getenv("HV_LINK_GBITS")) && *v)
    if (parse_seconds(v, &c->link_gbits) || c->link_gbits <= 0 || c->link_gbits > 1e5)
      BAD("HV_LINK_GBITS", "the network bandwidth one rank gets across nodes, in Gbit/s, such as 100 or 12.5");
  if ((v = getenv("HV_LINK_LATENCY_US")) && *v)
    if (parse_seconds(v, &c->link_latency_us) || c->link_latency_us <= 0 || c->link_latency_us > 1e6)
      BAD("HV_LINK_LATENCY_US", "one message's latency across the network in microseconds, such as 5");
  if ((v = getenv("HV_RING_CHUNK_BYTES")) && *v)
    if (hv__parse_size(v, &c->ring_chunk_bytes) || c->ring_chunk_bytes < 64 ||
        c->ring_chunk_bytes > (1u << 30))
      BAD("HV_RING_CHUNK_BYTES", "a size between 64 and 1G, such as 1M");
  if ((v = getenv("HV_NET_CHUNK_BYTES")) && *v && strcmp(v, "auto") != 0)
    if (hv__parse_size(v, &c->net_chunk_bytes) || c->net_chunk_bytes < 64 || c->net_chunk_bytes > (1u << 30))
      BAD("HV_NET_CHUNK_BYTES", "auto or a size between 64 and 1G, such as 63K");
  if ((v = getenv("HV_CACHE_CAPACITY")) && *v) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 0 || n > (1 << 20)) BAD("HV_CACHE_CAPACITY", "a number of tensors from 0 (off) to 1048576");
    c->cache_capacity = (size_t)n;
  }
  if ((v = getenv("HV_STALL_CHECK_TIME")) && *v)
    if (parse_seconds(v, &c->stall_check_s)) BAD("HV_STALL_CHECK_TIME", "seconds, 0 to disable");
  if ((v = getenv("HV_STALL_SHUTDOWN_TIME")) && *v)
    if (parse_seconds(v, &c->stall_shutdown_s)) BAD("HV_STALL_SHUTDOWN_TIME", "seconds, 0 to disable");
  if ((v = getenv("HV_SHM_SLOT_BYTES")) && *v)
    if (hv__parse_size(v, &c->shm_slot_bytes) || (c->shm_slot_bytes && c->shm_slot_bytes < 4096))
      BAD("HV_SHM_SLOT_BYTES", "a size of at least 4K, such as 4M, or 0 to disable shared memory");
  if ((v = getenv("HV_SHM_CMA")) && *v) {
    if (strcasecmp(v, "auto") == 0) c->shm_cma = -1;
    else if (strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0) c->shm_cma = 0;
    else if (strcmp(v, "1") == 0 || strcasecmp(v, "on") == 0) c->shm_cma = 1;
    else BAD("HV_SHM_CMA", "auto, 0 (off: copy through shared memory) or 1 (single copy at every size)");
  }
  if ((v = getenv("HV_CUDA_STAGING_BYTES")) && *v)
    if (hv__parse_size(v, &c->cuda_staging_bytes) || c->cuda_staging_bytes < 4096)
      BAD("HV_CUDA_STAGING_BYTES", "a size of at least 4K, such as 4M");
  if ((v = getenv("HV_TIMEOUT")) && *v)
    if (parse_seconds(v, &c->timeout_s)) BAD("HV_TIMEOUT", "seconds, 0 to wait forever");
  if ((v = getenv("HV_ALLREDUCE_ALGO")) && *v) {
    const int algo = hv__algo_from_name(v);
    if (algo < 0) BAD("HV_ALLREDUCE_ALGO", "auto, ring, rd, rab, 2d, mpi, hier or shm");
    c->allreduce_algo = (hv__algo_t)algo;
  }
  if ((v = getenv("HV_HIERARCHICAL_ALLREDUCE")) && *v) {
    if (strcasecmp(v, "auto") == 0) c->hierarchical = -1;
    else if (strcmp(v, "1") == 0 || strcasecmp(v, "on") == 0) c->hierarchical = 1;
    else if (strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0) c->hierarchical = 0;
    else BAD("HV_HIERARCHICAL_ALLREDUCE", "auto, 1 (force on) or 0 (off)");
  }
  if ((v = getenv("HV_COMPRESSION")) && *v) {
    if (strcasecmp(v, "none") == 0) c->compression = HV_COMPRESSION_NONE;
    else if (strcasecmp(v, "fp16") == 0) c->compression = HV_COMPRESSION_FP16;
    else if (strcasecmp(v, "bf16") == 0) c->compression = HV_COMPRESSION_BF16;
    else if (strcasecmp(v, "fp16-1r") == 0) c->compression = HV_COMPRESSION_FP16_1R;
    else if (strcasecmp(v, "bf16-1r") == 0) c->compression = HV_COMPRESSION_BF16_1R;
    else BAD("HV_COMPRESSION", "none, fp16, bf16, fp16-1r or bf16-1r");
  }
  if ((v = getenv("HV_TIMELINE")) && *v) {
    if (strlen(v) >= sizeof c->timeline_path) BAD("HV_TIMELINE", "a path shorter than 512 bytes");
    strcpy(c->timeline_path, v);
  }
  if ((v = getenv("HV_LOG_LEVEL")) && *v) {
    static const char *const levels[] = {"trace", "debug", "info", "warning", "error", "off"};
    int found = 0;
    for (int i = 0; i < 6; i++)
      if (strcasecmp(v, levels[i]) == 0) c->log_level = i, found = 1;
    if (!found) BAD("HV_LOG_LEVEL", "trace, debug, info, warning, error or off");
  }
  if ((v = getenv("HV_FLIGHT_RECORDER_SIZE")) && *v) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 0 || n > (1 << 20)) BAD("HV_FLIGHT_RECORDER_SIZE", "a number of events from 0 (off) to 1048576");
    c->flight_recorder_size = (size_t)n;
  }
  if ((v = getenv("HV_FLIGHT_RECORDER_SIGNAL")) && *v) {
    if (strcmp(v, "0") && strcmp(v, "1")) BAD("HV_FLIGHT_RECORDER_SIGNAL", "1 (dump on SIGUSR1) or 0");
    c->flight_signal = v[0] == '1';
  }
  if ((v = getenv("HV_AUTOTUNE_SAMPLE_SECONDS")) && *v)
    if (parse_seconds(v, &c->autotune_sample_s) || !(c->autotune_sample_s > 0) || c->autotune_sample_s > 60)
      BAD("HV_AUTOTUNE_SAMPLE_SECONDS", "seconds above 0 and at most 60, such as 0.5");
#undef BAD
  /* Asking for the shared-memory allreduce while turning shared memory off is a
   * contradiction, not a wish hv can meet by falling back. */
  if (c->allreduce_algo == HV__ALGO_SHM && c->shm_slot_bytes == 0) {
    snprintf(err, errlen,
             "HV_ALLREDUCE_ALGO=shm needs shared memory, but HV_SHM_SLOT_BYTES=0 turns it off: unset one of them");
    return HV_ERR_INVALID_ARGUMENT;
  }
  return HV_SUCCESS;
}
