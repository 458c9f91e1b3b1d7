/* data_mnist.c: MNIST IDX loader (idx3 images, idx1 labels), plain or gzip.
 * Files are read whole (file_read.c) and then checked field by field, so a truncated
 * or padded file is reported with the byte counts that were expected and found. */
#include "data_mnist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_read.h"

#ifndef HV_MNIST_SOURCE_DIR
#define HV_MNIST_SOURCE_DIR ""
#endif
#ifndef HV_MNIST_INSTALL_DIR
#define HV_MNIST_INSTALL_DIR ""
#endif

/* The largest sensible IDX file: 1M images of 28x28 is 784 MB; allow up to 2 GiB. */
#define MNIST_MAX_BYTES ((size_t)2 << 30)

static uint32_t read_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int load_images(const char *path, dataset_t *out, char *err, size_t errlen) {
  uint8_t *data;
  size_t size;
  if (file_read_all(path, MNIST_MAX_BYTES, &data, &size, err, errlen)) return -1;
  int rc = -1;
  if (size < 16) {
    snprintf(err, errlen, "%s: truncated: %zu bytes, an IDX image header needs 16", path, size);
    goto done;
  }
  uint32_t magic = read_be32(data), n = read_be32(data + 4), rows = read_be32(data + 8),
           cols = read_be32(data + 12);
  if (magic != MNIST_IMAGES_MAGIC) {
    snprintf(err, errlen,
             "%s: wrong magic 0x%08x at byte 0 (IDX images have 0x%08x = %u); is this an "
             "images file%s?",
             path, magic, MNIST_IMAGES_MAGIC, MNIST_IMAGES_MAGIC,
             magic == MNIST_LABELS_MAGIC ? " (this one holds labels)" : "");
    goto done;
  }
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096 || n > (1u << 30)) {
    snprintf(err, errlen, "%s: implausible header: %u images of %u x %u (bytes 4..15)", path,
             n, rows, cols);
    goto done;
  }
  size_t want = 16 + (size_t)n * rows * cols;
  if (size != want) {
    snprintf(err, errlen,
             "%s: %s: header says %u images of %u x %u = %zu bytes with the header, file "
             "has %zu",
             path, size < want ? "truncated" : "oversized (trailing bytes)", n, rows, cols,
             want, size);
    goto done;
  }
  out->n = (int)n;
  out->c = 1;
  out->h = (int)rows;
  out->w = (int)cols;
  /* Shift the pixels to the front of the buffer and keep it: no second copy. */
  memmove(data, data + 16, want - 16);
  out->pixels = data;
  data = NULL;
  rc = 0;
done:
  free(data);
  return rc;
}

static int load_labels(const char *path, dataset_t *out, char *err, size_t errlen) {
  uint8_t *data;
  size_t size;
  if (file_read_all(path, MNIST_MAX_BYTES, &data, &size, err, errlen)) return -1;
  int rc = -1;
  if (size < 8) {
    snprintf(err, errlen, "%s: truncated: %zu bytes, an IDX label header needs 8", path, size);
    goto done;
  }
  uint32_t magic = read_be32(data), n = read_be32(data + 4);
  if (magic != MNIST_LABELS_MAGIC) {
    snprintf(err, errlen,
             "%s: wrong magic 0x%08x at byte 0 (IDX labels have 0x%08x = %u); is this a "
             "labels file%s?",
             path, magic, MNIST_LABELS_MAGIC, MNIST_LABELS_MAGIC,
             magic == MNIST_IMAGES_MAGIC ? " (this one holds images)" : "");
    goto done;
  }
  if ((size_t)n + 8 != size) {
    snprintf(err, errlen, "%s: %s: header says %u labels = %zu bytes with the header, file has %zu",
             path, size < (size_t)n + 8 ? "truncated" : "oversized (trailing bytes)", n,
             (size_t)n + 8, size);
    goto done;
  }
  for (uint32_t i = 0; i < n; i++) {
    if (data[8 + i] > 9) {
      snprintf(err, errlen, "%s: label %u at byte %u is %u, outside 0..9", path, i, 8 + i,
               data[8 + i]);
      goto done;
    }
  }
  memmove(data, data + 8, n);
  out->labels = data;
  out->n = (int)n;
  data = NULL;
  rc = 0;
done:
  free(data);
  return rc;
}

int dataset_load_idx_pair(const char *images_path, const char *labels_path, dataset_t *out,
                          char *err, size_t errlen) {
  dataset_t img = {0}, lab = {0};
  memset(out, 0, sizeof *out);
  if (load_images(images_path, &img, err, errlen)) return -1;
  if (load_labels(labels_path, &lab, err, errlen)) {
    dataset_free(&img);
    return -1;
  }
  if (img.n != lab.n) {
    snprintf(err, errlen, "%s has %d images but %s has %d labels", images_path, img.n,
             labels_path, lab.n);
    dataset_free(&img);
    dataset_free(&lab);
    return -1;
  }
  *out = img;
  out->labels = lab.labels;
  out->num_classes = 10;
  return 0;
}

/* dir/name.gz if it exists, else dir/name (whose absence the loader reports). */
static void find_file(const char *dir, const char *name, char *path, size_t len) {
  snprintf(path, len, "%s/%s.gz", dir, name);
  if (file_exists(path)) return;
  snprintf(path, len, "%s/%s", dir, name);
}

int dataset_load_mnist(const char *dir, const char *split, dataset_t *out, char *err,
                       size_t errlen) {
  memset(out, 0, sizeof *out);
  const char *prefix;
  if (!dir || !split) {
    snprintf(err, errlen, "dataset_load_mnist: dir and split must not be NULL");
    return -1;
  }
  if (strcmp(split, "train") == 0) {
    prefix = "train";
  } else if (strcmp(split, "test") == 0) {
    prefix = "t10k";
  } else {
    snprintf(err, errlen, "dataset_load_mnist: split '%s' is neither 'train' nor 'test'", split);
    return -1;
  }
  char images[4096], labels[4096], name[64];
  snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
  find_file(dir, name, images, sizeof images);
  snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
  find_file(dir, name, labels, sizeof labels);
  return dataset_load_idx_pair(images, labels, out, err, errlen);
}

const char *dataset_default_mnist_dir(void) {
  const char *env = getenv("HV_MNIST_DIR");
  if (env && *env) return env;
  static const char *const candidates[] = {HV_MNIST_SOURCE_DIR, HV_MNIST_INSTALL_DIR};
  char probe[4096];
  for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
    if (!candidates[i][0]) continue;
    snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte.gz", candidates[i]);
    if (file_exists(probe)) return candidates[i];
  }
  /* Neither exists: name the installed location so the loader's error points there. */
  return HV_MNIST_INSTALL_DIR[0] ? HV_MNIST_INSTALL_DIR : "workloads/data/mnist-10k";
}
