/* straggler_note.h: the workloads' side of hv's straggler report (hv.h,
 * hv_straggler_report): HV_STRAGGLER_REPORT=1 asks each workload to append the
 * slowest rank and its lag to its per-epoch line, e.g.
 *   Epoch 2/5 completed in 31.20 seconds straggler rank 3 +180.2 ms (p50, 50 steps)
 * Parsing and formatting only (this library links no hv): the workload calls
 * hv_straggler_report itself, on every rank at the same point, since it is collective. */
#ifndef HV_WORKLOAD_STRAGGLER_NOTE_H
#define HV_WORKLOAD_STRAGGLER_NOTE_H

#include <stddef.h>

/* HV_STRAGGLER_REPORT: unset, empty or 0 gives *on = 0, 1 gives 1. 0, or -1 with the
 * line naming the variable in err (the form of hv's settings). */
int straggler_setting(int *on, char *err, size_t errlen);

/* " straggler rank R +L ms (p50, N steps)", or " straggler: none measured" when rank
 * is negative, into out (len bytes). */
void straggler_format(char *out, size_t len, int rank, double lag_ms, unsigned long long steps);

#endif /* HV_WORKLOAD_STRAGGLER_NOTE_H */
