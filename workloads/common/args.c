/* args.c: parse_int and parse_double, the flag value parsers of the workloads and
 * tools (args.h). */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int parse_int(const char *flag, const char *s, long long lo, long long hi, long long *out,
              char *err, size_t errlen) {
  char *end = NULL;
  errno = 0;
  long long v = s ? strtoll(s, &end, 10) : 0;
  if (!s || *s == '\0' || *end != '\0' || errno || v < lo || v > hi) {
    if (err && errlen)
      snprintf(err, errlen, "%s: '%s' is not an integer in [%lld, %lld]", flag,
               s ? s : "(missing value)", lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

int parse_double(const char *flag, const char *s, double lo, double hi, double *out, char *err,
                 size_t errlen) {
  char *end = NULL;
  errno = 0;
  double v = s ? strtod(s, &end) : 0.0;
  if (!s || *s == '\0' || *end != '\0' || errno || !isfinite(v) || v < lo || v > hi) {
    if (err && errlen) {
      if (lo == -HUGE_VAL && hi == HUGE_VAL)
        snprintf(err, errlen, "%s: '%s' is not a number", flag, s ? s : "(missing value)");
      else
        snprintf(err, errlen, "%s: '%s' is not a number in [%g, %g]", flag,
                 s ? s : "(missing value)", lo, hi);
    }
    return -1;
  }
  *out = v;
  return 0;
}
