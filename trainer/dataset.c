/* dataset.c: ownership helpers of dataset_t (free, slice). */
#include "dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dataset_free(dataset_t *ds) {
  if (!ds) return;
  free(ds->pixels);
  free(ds->labels);
  memset(ds, 0, sizeof *ds);
}

int dataset_slice(const dataset_t *src, int begin, int end, dataset_t *dst, char *err,
                  size_t errlen) {
  memset(dst, 0, sizeof *dst);
  if (begin < 0 || end > src->n || begin > end) {
    snprintf(err, errlen, "dataset_slice: range [%d, %d) outside [0, %d)", begin, end, src->n);
    return -1;
  }
  size_t img = (size_t)src->c * src->h * src->w, n = (size_t)(end - begin);
  *dst = *src;
  dst->n = (int)n;
  dst->pixels = malloc(n * img + 1);
  dst->labels = malloc(n + 1);
  if (!dst->pixels || !dst->labels) {
    dataset_free(dst);
    snprintf(err, errlen, "dataset_slice: out of memory for %zu images", n);
    return -1;
  }
  memcpy(dst->pixels, src->pixels + (size_t)begin * img, n * img);
  memcpy(dst->labels, src->labels + begin, n);
  return 0;
}
