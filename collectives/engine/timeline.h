/* timeline.h: HV_TIMELINE=path writes a Chrome-trace JSON file per rank (path with
 * ".rank<N>" inserted before a ".json" suffix, or appended), one row per tensor with
 * its QUEUE, NEGOTIATE, FUSION_PACK, algorithm and FUSION_UNPACK spans. Opens in
 * Perfetto or chrome://tracing. Written by the background thread only. */
#ifndef HV_TIMELINE_H
#define HV_TIMELINE_H

#include "hv.h"

struct hv__timeline;
struct hv__timeline *hv__timeline_open(const char *path, int rank, char *err, size_t errlen);
/* A span [start_us, end_us] on the row of tensor `name`. No-op when tl is NULL. */
void hv__timeline_span(struct hv__timeline *tl, const char *name, const char *phase,
                       double start_us, double end_us);
void hv__timeline_close(struct hv__timeline *tl);

#endif
