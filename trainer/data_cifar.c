/* data_cifar.c: CIFAR binary files read whole (file_read.c) under a limit of records,
 * checked for whole records and label ranges, and concatenated (five CIFAR-10
 * training batches). */
#include "data_cifar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_read.h"

const float cifar10_mean[3] = {0.4914f, 0.4822f, 0.4465f};
const float cifar10_std[3] = {0.2470f, 0.2435f, 0.2616f};
const float cifar100_mean[3] = {0.5071f, 0.4865f, 0.4409f};
const float cifar100_std[3] = {0.2673f, 0.2564f, 0.2762f};
/* The values of the PyTorch MNIST examples: Normalize((0.1307,), (0.3081,)). */
const float mnist_mean[1] = {0.1307f};
const float mnist_std[1] = {0.3081f};

#define CIFAR_PIXELS 3072
/* The largest standard file (CIFAR-100's train.bin): a file of any split may hold
 * fewer records (a subset), never more. */
#define CIFAR_MAX_RECORDS 50000

int dataset_load_cifar_file(const char *path, int num_classes, int expected_records,
                            dataset_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (num_classes != 10 && num_classes != 100) {
    snprintf(err, errlen, "%s: CIFAR has 10 or 100 classes, not %d", path, num_classes);
    return -1;
  }
  const size_t label_bytes = num_classes == 10 ? 1 : 2, rec = label_bytes + CIFAR_PIXELS;
  /* The format has no header: the bound is the record count. A plain file over it is
   * refused by its size, a gzip one after inflating one byte past it, never more. */
  const int max_records = expected_records ? expected_records : CIFAR_MAX_RECORDS;
  const size_t max_bytes = (size_t)max_records * rec;
  uint8_t *data;
  size_t size;
  if (file_read_all(path, max_bytes, &data, &size, err, errlen)) {
    if (strstr(err, "larger than")) {
      snprintf(err, errlen, "%s: oversized: more than the %d records of %zu bytes a CIFAR-%d "
               "file of this split holds", path, max_records, rec, num_classes);
    }
    return -1;
  }
  const size_t n = size / rec;
  if (size == 0 || size % rec != 0) {
    snprintf(err, errlen,
             "%s: truncated or not CIFAR-%d binary: %zu bytes is not a whole number of %zu-byte "
             "records (last record incomplete at byte %zu)",
             path, num_classes, size, rec, n * rec);
    free(data);
    return -1;
  }
  if (expected_records && n != (size_t)expected_records) {
    snprintf(err, errlen, "%s: truncated: %zu records, CIFAR-%d files of this split hold %d",
             path, n, num_classes, expected_records);
    free(data);
    return -1;
  }
  out->pixels = malloc(n * CIFAR_PIXELS);
  out->labels = malloc(n);
  if (!out->pixels || !out->labels) {
    free(data);
    dataset_free(out);
    snprintf(err, errlen, "%s: out of memory for %zu images", path, n);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    const uint8_t *r = data + i * rec;
    uint8_t label = r[label_bytes - 1];
    if (label >= num_classes || (label_bytes == 2 && r[0] >= 20)) {
      snprintf(err, errlen, "%s: record %zu: label %u at byte %zu outside 0..%d", path, i,
               label_bytes == 2 && r[0] >= 20 ? r[0] : label,
               i * rec + (label_bytes == 2 && r[0] >= 20 ? 0 : label_bytes - 1),
               label_bytes == 2 && r[0] >= 20 ? 19 : num_classes - 1);
      free(data);
      dataset_free(out);
      return -1;
    }
    out->labels[i] = label;
    memcpy(out->pixels + i * CIFAR_PIXELS, r + label_bytes, CIFAR_PIXELS);
  }
  free(data);
  out->n = (int)n;
  out->c = 3;
  out->h = out->w = 32;
  out->num_classes = num_classes;
  return 0;
}

static int append(dataset_t *all, const dataset_t *part, char *err, size_t errlen) {
  uint8_t *p = realloc(all->pixels, ((size_t)all->n + part->n) * CIFAR_PIXELS);
  if (p) all->pixels = p;
  uint8_t *l = realloc(all->labels, (size_t)all->n + part->n);
  if (l) all->labels = l;
  if (!p || !l) {
    snprintf(err, errlen, "CIFAR: out of memory");
    return -1;
  }
  memcpy(all->pixels + (size_t)all->n * CIFAR_PIXELS, part->pixels, (size_t)part->n * CIFAR_PIXELS);
  memcpy(all->labels + all->n, part->labels, (size_t)part->n);
  all->n += part->n;
  return 0;
}

int dataset_load_cifar(const char *dir, int num_classes, const char *split, dataset_t *out,
                       char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  int train;
  if (!strcmp(split, "train")) train = 1;
  else if (!strcmp(split, "test")) train = 0;
  else {
    snprintf(err, errlen, "CIFAR: split '%s' is neither 'train' nor 'test'", split);
    return -1;
  }
  const char *names10[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                           "data_batch_4.bin", "data_batch_5.bin"};
  const char *test10[] = {"test_batch.bin"}, *train100[] = {"train.bin"},
             *test100[] = {"test.bin"};
  const char **names;
  int files, records;
  if (num_classes == 10) {
    names = train ? names10 : test10;
    files = train ? 5 : 1;
    records = 10000;
  } else {
    names = train ? train100 : test100;
    files = 1;
    records = train ? 50000 : 10000;
  }
  out->c = 3, out->h = out->w = 32, out->num_classes = num_classes;
  for (int f = 0; f < files; f++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.gz", dir, names[f]);
    if (!file_exists(path)) snprintf(path, sizeof path, "%s/%s", dir, names[f]);
    dataset_t part;
    if (dataset_load_cifar_file(path, num_classes, records, &part, err, errlen) ||
        append(out, &part, err, errlen)) {
      dataset_free(&part);
      dataset_free(out);
      return -1;
    }
    dataset_free(&part);
  }
  return 0;
}
