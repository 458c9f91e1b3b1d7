/* fuzz_config.c: libFuzzer target of the engine's HV_* environment parser
 * (collectives/config.c: hv__config_load and hv__parse_size).
 * Input: lines "NAME=value". A line whose NAME is one of the variables config.c reads
 * sets it (putenv) for this input; other lines are skipped, so the harness never sets
 * anything else (LD_PRELOAD, ASAN_OPTIONS...). Each value is also given to
 * hv__parse_size on its own. Every variable is unset again afterwards, so one input
 * never leaks its settings into the next. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz_util.h"

/* Every getenv() of config.c. */
static const char *const names[] = {
    "HV_FUSION_THRESHOLD", "HV_CYCLE_TIME",      "HV_SMALL_ALLREDUCE_BYTES",
    "HV_RING_CHUNK_BYTES", "HV_NET_CHUNK_BYTES", "HV_CACHE_CAPACITY",  "HV_STALL_CHECK_TIME",
    "HV_STALL_SHUTDOWN_TIME", "HV_SHM_SLOT_BYTES", "HV_TIMEOUT",
    "HV_ALLREDUCE_ALGO",   "HV_HIERARCHICAL_ALLREDUCE", "HV_COMPRESSION",
    "HV_TIMELINE",         "HV_LOG_LEVEL",      "HV_LINK_GBITS",
    "HV_LINK_LATENCY_US",  "HV_AUTOTUNE_SAMPLE_SECONDS"};
enum { NUM_NAMES = sizeof names / sizeof names[0] };

static void unset_all(void) {
  for (int i = 0; i < NUM_NAMES; i++) unsetenv(names[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  unset_all(); /* the fuzzer's own environment must not decide the outcome */
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* One NUL-terminated copy; a NUL inside ends that line's value, as in a real
   * environment. */
  char *text = malloc(size + 1);
  /* putenv with our own "NAME=value" strings, freed after unset_all: setenv would copy
   * each value into memory glibc never frees, and RSS would grow with every input. */
  char **owned = malloc(sizeof *owned * (size / 2 + 1));
  size_t n_owned = 0;
  if (!text || !owned) __builtin_trap();
  memcpy(text, data, size);
  text[size] = '\0';
  for (char *line = text, *next; line < text + size; line = next) {
    char *nl = memchr(line, '\n', (size_t)(text + size - line));
    next = nl ? nl + 1 : text + size;
    if (nl) *nl = '\0';
    char *eq = strchr(line, '=');
    if (!eq) continue;
    *eq = '\0';
    for (int i = 0; i < NUM_NAMES; i++) {
      if (strcmp(line, names[i]) != 0) continue;
      *eq = '=';
      char *entry = strdup(line);
      if (!entry || putenv(entry) != 0) __builtin_trap();
      owned[n_owned++] = entry;
      size_t bytes;
      (void)hv__parse_size(eq + 1, &bytes);
      break;
    }
  }
  free(text);

  hv__config_t c;
  char err[512] = "";
  const hv_result_t rc = hv__config_load(&c, err, sizeof err);
  if (rc != HV_SUCCESS && (rc != HV_ERR_INVALID_ARGUMENT || err[0] == '\0')) __builtin_trap();
  if (rc == HV_SUCCESS) {
    /* The invariants the engine relies on without checking again; among them,
     * engine.c's timed_wait converts a cycle of milliseconds to a long count of
     * nanoseconds, (long)(ms * 1e6), which must not overflow. */
    if ((unsigned)c.allreduce_algo >= HV__NUM_ALGOS || c.ring_chunk_bytes < 64 ||
        (c.shm_slot_bytes && c.shm_slot_bytes < 4096) || !(c.cycle_time_ms >= 0) ||
        !(c.cycle_time_ms * 1e6 < 9e18) || !(c.timeout_s >= 0) || !(c.link_gbits >= 0 && c.link_gbits <= 1e5) ||
        !(c.link_latency_us > 0 && c.link_latency_us <= 1e6) ||
        !(c.autotune_sample_s > 0 && c.autotune_sample_s <= 60) ||
        memchr(c.timeline_path, '\0', sizeof c.timeline_path) == NULL)
      __builtin_trap();
  }
  unset_all();
  for (size_t i = 0; i < n_owned; i++) free(owned[i]);
  free(owned);
  return 0;
}
