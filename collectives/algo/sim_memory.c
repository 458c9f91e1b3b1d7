/* sim_memory.c: memory a simulated build does not have. A simulation of 1,024 ranks
 * reducing 1 GiB each would need a terabyte; SimGrid's SMPI lets every rank share
 * one physical copy of a large buffer (SMPI_SHARED_MALLOC), which keeps the timing
 * and makes the values meaningless. HV_SIM_SHARED_BYTES asks for that (tools/sim/
 * hvsim sets it for its timing runs only): algorithm scratch of that size or more is
 * shared, and the reductions' arithmetic is skipped (under SMPI's network-only model
 * it costs no simulated time either way). Unset, and in every real build, memory is
 * plain malloc and every value is computed: the exact runs. */
#include <stdlib.h>

#include "algo.h"

static size_t shared_threshold(void) {
#if HV_SIMULATED
  static int read;
  static size_t bytes;
  if (!read) {
    const char *v = getenv("HV_SIM_SHARED_BYTES");
    bytes = v && *v ? strtoull(v, NULL, 10) : 0;
    read = 1;
  }
  return bytes;
#else
  return 0;
#endif
}

int hv__sim_timing_only(void) { return shared_threshold() > 0; }

void *hv__scratch_alloc(size_t bytes, int *shared) {
#if HV_SIMULATED
  const size_t threshold = shared_threshold();
  if (threshold && bytes >= threshold) {
    *shared = 1;
    return SMPI_SHARED_MALLOC(bytes);
  }
#endif
  *shared = 0;
  return malloc(bytes);
}

void hv__scratch_free(void *p, int shared) {
#if HV_SIMULATED
  if (shared) {
    SMPI_SHARED_FREE(p);
    return;
  }
#endif
  (void)shared;
  free(p);
}
