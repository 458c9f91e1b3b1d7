/* clock.c: now_s (monotonic seconds) and cpu_now_s (process CPU seconds), clock.h. */
#include "clock.h"

#include <time.h>

static double clock_seconds(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double now_s(void) { return clock_seconds(CLOCK_MONOTONIC); }

double cpu_now_s(void) { return clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }
