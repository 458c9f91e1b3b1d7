/* dataset.c: ownership helpers of dataset_t (free, slice) and the train/test
 * agreement check. */
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

int dataset_check_pair(const dataset_t *train, const char *train_name, const dataset_t *test,
                       const char *test_name, char *err, size_t errlen) {
  /* A test image of another shape would be read as rows of the wrong length: the
   * errors printed would mean nothing. */
  if (train->c != test->c || train->h != test->h || train->w != test->w) {
    snprintf(err, errlen,
             "training set %s has %dx%dx%d images, test set %s has %dx%dx%d: the two must "
             "have the same shape",
             train_name, train->c, train->h, train->w, test_name, test->c, test->h, test->w);
    return -1;
  }
  if (train->num_classes != test->num_classes) {
    snprintf(err, errlen,
             "training set %s has %d classes, test set %s has %d: the two must have the same",
             train_name, train->num_classes, test_name, test->num_classes);
    return -1;
  }
  for (int i = 0; i < test->n; i++) {
    if (test->labels[i] >= train->num_classes) {
      snprintf(err, errlen,
               "test set %s: label %u of image %d is outside the %d classes (0..%d) of "
               "training set %s",
               test_name, test->labels[i], i, train->num_classes, train->num_classes - 1,
               train_name);
      return -1;
    }
  }
  return 0;
}
