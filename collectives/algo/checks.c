/* checks.c: failing through an error sink, logging with the rank (HV_LOG_LEVEL),
 * and the clocks (checks.h). */
#include "checks.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int hv__log_level = HV__LOG_WARNING;
int hv__log_rank = -1;

void hv__log(int level, const char *file, int line, const char *fmt, ...) {
  static const char *const names[] = {"trace", "debug", "info", "warning", "error", "off"};
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  /* One fprintf per line so lines of different ranks and threads do not interleave. */
  if (level >= HV__LOG_WARNING)
    fprintf(stderr, "[hv rank %d] %s: %s\n", hv__log_rank, names[level], msg);
  else
    fprintf(stderr, "[hv rank %d] %s %s:%d: %s\n", hv__log_rank, names[level], base, line, msg);
}

hv_result_t hv__fail(const hv__errors_t *errors, hv_result_t code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (errors && errors->record) errors->record(errors->owner, msg);
  HV_LOG(HV__LOG_DEBUG, "%s: %s", hv_strerror(code), msg);
  return code;
}

hv_result_t hv__fail_mpi(const hv__errors_t *errors, int mpi_code, const char *what, const char *file, int line) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(mpi_code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", mpi_code);
  const char *base = strrchr(file, '/');
  return hv__fail(errors, HV_ERR_MPI, "rank %d: %s failed at %s:%d: %s", errors ? errors->rank : hv__log_rank,
                  what, base ? base + 1 : file, line, text);
}

char *hv__strdup_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

double hv__now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* The same clock at the kernel tick's resolution (1-4 ms), which reads a value the
 * kernel keeps instead of the time counter: for a time stamp per request that only
 * stall ages (seconds) use. */
double hv__coarse_now_us(void) {
#ifdef CLOCK_MONOTONIC_COARSE
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
#else
  return hv__now_us();
#endif
}
