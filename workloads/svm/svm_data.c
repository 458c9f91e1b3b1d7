/* svm_data.c: MNIST-format images (through trainer/data_mnist.h) to standardised
 * float features for the SVM, plus centring and row subsets. */
#include "svm_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_mnist.h"
#include "rbf_kernel.h"

/* The first max_n images of ds (all when max_n <= 0) as features of out; dir names
 * the data in the message. */
static int from_dataset(const dataset_t *ds, const char *dir, int max_n, svm_set_t *out,
                        char *err, size_t errlen) {
  int n = max_n > 0 && max_n < ds->n ? max_n : ds->n;
  int d = ds->c * ds->h * ds->w;
  out->n = n;
  out->d = d;
  out->ncls = ds->num_classes > 0 ? ds->num_classes : 10;
  out->x = malloc((size_t)n * d * sizeof(float) + 1);
  out->sq = malloc((size_t)n * sizeof(float) + 1);
  out->y = malloc((size_t)n + 1);
  if (!out->x || !out->sq || !out->y) {
    snprintf(err, errlen, "%s: out of memory for %d images of %d features", dir, n, d);
    svm_data_free(out);
    return -1;
  }
  for (int i = 0; i < n; ++i) {
    const uint8_t *px = dataset_image(ds, i);
    float *row = out->x + (size_t)i * d;
    for (int k = 0; k < d; ++k) row[k] = ((float)px[k] - SVM_PIXEL_SHIFT) / SVM_PIXEL_SCALE;
    out->y[i] = ds->labels[i];
  }
  return 0;
}

int svm_data_load(const char *dir, const char *split, int max_n, svm_set_t *out, char *err,
                  size_t errlen) {
  memset(out, 0, sizeof *out);
  dataset_t ds;
  if (dataset_load_mnist(dir, split, &ds, err, errlen) != 0) return -1;
  int rc = from_dataset(&ds, dir, max_n, out, err, errlen);
  dataset_free(&ds);
  return rc;
}

int svm_data_load_pair(const char *dir, int train_n, int test_n, svm_set_t *tr, svm_set_t *te,
                       char *err, size_t errlen) {
  memset(tr, 0, sizeof *tr);
  memset(te, 0, sizeof *te);
  char tr_images[4096], te_images[4096], labels[4096];
  if (dataset_mnist_paths(dir, "train", tr_images, labels, sizeof labels, err, errlen) ||
      dataset_mnist_paths(dir, "test", te_images, labels, sizeof labels, err, errlen))
    return -1;
  dataset_t a, b;
  if (dataset_load_mnist(dir, "train", &a, err, errlen) != 0) return -1;
  if (dataset_load_mnist(dir, "test", &b, err, errlen) != 0) {
    dataset_free(&a);
    return -1;
  }
  /* Before any feature is made: a test row of another length would be read as one of
   * the training set's and give a meaningless test error. */
  int rc = dataset_check_pair(&a, tr_images, &b, te_images, err, errlen) ||
           from_dataset(&a, dir, train_n, tr, err, errlen) ||
           from_dataset(&b, dir, test_n, te, err, errlen);
  dataset_free(&a);
  dataset_free(&b);
  if (rc) {
    svm_data_free(tr);
    svm_data_free(te);
    return -1;
  }
  return 0;
}

static void centre_rows(svm_set_t *s, const double *mean) {
  for (int i = 0; i < s->n; ++i) {
    float *row = s->x + (size_t)i * s->d;
    for (int k = 0; k < s->d; ++k) row[k] = (float)(row[k] - mean[k]);
  }
  rbf_sqnorms(s->x, s->n, s->d, s->sq);
}

int svm_data_centre(svm_set_t *s, svm_set_t *other) {
  double *mean = calloc((size_t)s->d + 1, sizeof(double));
  if (!mean) return -1;
  for (int i = 0; i < s->n; ++i) {
    const float *row = s->x + (size_t)i * s->d;
    for (int k = 0; k < s->d; ++k) mean[k] += row[k];
  }
  for (int k = 0; k < s->d; ++k) mean[k] /= s->n > 0 ? s->n : 1;
  centre_rows(s, mean);
  if (other) centre_rows(other, mean);
  free(mean);
  return 0;
}

int svm_data_subset(const svm_set_t *s, const int *idx, int m, svm_set_t *out) {
  memset(out, 0, sizeof *out);
  out->n = m;
  out->d = s->d;
  out->ncls = s->ncls;
  out->x = malloc((size_t)m * s->d * sizeof(float) + 1);
  out->sq = malloc((size_t)m * sizeof(float) + 1);
  out->y = malloc((size_t)m + 1);
  if (!out->x || !out->sq || !out->y) {
    svm_data_free(out);
    return -1;
  }
  for (int r = 0; r < m; ++r) {
    memcpy(out->x + (size_t)r * s->d, s->x + (size_t)idx[r] * s->d, (size_t)s->d * sizeof(float));
    out->sq[r] = s->sq[idx[r]];
    out->y[r] = s->y[idx[r]];
  }
  return 0;
}

void svm_data_free(svm_set_t *s) {
  if (!s) return;
  free(s->x);
  free(s->sq);
  free(s->y);
  memset(s, 0, sizeof *s);
}
