/* straggler_note.c: HV_STRAGGLER_REPORT and the text the workloads append to their
 * epoch lines (straggler_note.h). */
#include "straggler_note.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int straggler_setting(int *on, char *err, size_t errlen) {
  const char *v = getenv("HV_STRAGGLER_REPORT");
  *on = 0;
  if (!v || !*v || !strcmp(v, "0")) return 0;
  if (!strcmp(v, "1")) {
    *on = 1;
    return 0;
  }
  snprintf(err, errlen, "HV_STRAGGLER_REPORT='%s' is not valid: expected 0 or 1", v);
  return -1;
}

void straggler_format(char *out, size_t len, int rank, double lag_ms, unsigned long long steps) {
  if (rank < 0) snprintf(out, len, " straggler: none measured");
  else snprintf(out, len, " straggler rank %d %+.1f ms (p50, %llu step%s)", rank, lag_ms, steps, steps == 1 ? "" : "s");
}
