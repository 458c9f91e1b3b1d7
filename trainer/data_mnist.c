/* data_mnist.c: MNIST IDX loader (idx3 images, idx1 labels), plain or gzip.
 * Each file's header is read and checked first (magic, dimensions, the size it
 * promises against the file's: exact for a plain file, possible for a gzip one), and
 * only then is the body allocated and read (file_read.h), so a truncated or padded
 * file is reported with the byte counts that were expected and found, and a small
 * file whose header asks for gigabytes costs nothing. */
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
#define MNIST_MAX_BYTES ((unsigned long long)2 << 30)

static uint32_t read_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Checks the size the header promises (want bytes with the header, described by
 * what) against the file before the body is allocated: a plain file must have exactly
 * that size, a gzip file must be able to hold it. 0, or -1 with a message. */
static int check_promise(const file_stream_t *s, const char *what, unsigned long long want,
                         char *err, size_t errlen) {
  if (want > MNIST_MAX_BYTES) {
    snprintf(err, errlen, "%s: implausible header: %s = %llu bytes, more than the %llu an IDX "
             "file may have", s->path, what, want, MNIST_MAX_BYTES);
    return -1;
  }
  if (!s->gzip && s->bytes != want) {
    snprintf(err, errlen, "%s: %s: header says %s = %llu bytes with the header, file has %llu",
             s->path, s->bytes < want ? "truncated" : "oversized (trailing bytes)", what, want,
             s->bytes);
    return -1;
  }
  if (s->gzip && want > file_stream_capacity(s)) {
    snprintf(err, errlen, "%s: truncated or corrupt: header says %s = %llu bytes, more than a "
             "%llu-byte gzip file can hold", s->path, what, want, s->bytes);
    return -1;
  }
  return 0;
}

/* Reads the body of `body` bytes after a header of `head` bytes; a short or long
 * gzip stream is reported like a plain file of the wrong size. */
static int read_body(file_stream_t *s, const char *what, size_t head, size_t body,
                     uint8_t **data, char *err, size_t errlen) {
  size_t got;
  int trailing;
  if (file_stream_read_body(s, body, data, &got, &trailing, err, errlen)) return -1;
  if (got < body || trailing) {
    if (trailing)
      snprintf(err, errlen, "%s: oversized (trailing bytes): header says %s = %zu bytes with "
               "the header, file has more", s->path, what, head + body);
    else
      snprintf(err, errlen, "%s: truncated: header says %s = %zu bytes with the header, file "
               "has %zu", s->path, what, head + body, head + got);
    free(*data);
    *data = NULL;
    return -1;
  }
  return 0;
}

static int load_images(const char *path, dataset_t *out, char *err, size_t errlen) {
  file_stream_t s;
  if (file_stream_open(&s, path, err, errlen)) return -1;
  int rc = -1;
  uint8_t head[16];
  size_t got;
  if (file_stream_read(&s, head, sizeof head, &got, err, errlen)) goto done;
  if (got < sizeof head) {
    snprintf(err, errlen, "%s: truncated: %zu bytes, an IDX image header needs 16", path, got);
    goto done;
  }
  uint32_t magic = read_be32(head), n = read_be32(head + 4), rows = read_be32(head + 8),
           cols = read_be32(head + 12);
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
  /* At most 2^30 * 2^12 * 2^12 = 2^54: no overflow in 64 bits. */
  const unsigned long long want = 16 + (unsigned long long)n * rows * cols;
  char what[96];
  snprintf(what, sizeof what, "%u images of %u x %u", n, rows, cols);
  if (check_promise(&s, what, want, err, errlen)) goto done;
  uint8_t *pixels;
  if (read_body(&s, what, 16, (size_t)want - 16, &pixels, err, errlen)) goto done;
  out->n = (int)n;
  out->c = 1;
  out->h = (int)rows;
  out->w = (int)cols;
  out->pixels = pixels;
  rc = 0;
done:
  file_stream_close(&s);
  return rc;
}

static int load_labels(const char *path, dataset_t *out, char *err, size_t errlen) {
  file_stream_t s;
  if (file_stream_open(&s, path, err, errlen)) return -1;
  int rc = -1;
  uint8_t head[8], *data = NULL;
  size_t got;
  if (file_stream_read(&s, head, sizeof head, &got, err, errlen)) goto done;
  if (got < sizeof head) {
    snprintf(err, errlen, "%s: truncated: %zu bytes, an IDX label header needs 8", path, got);
    goto done;
  }
  uint32_t magic = read_be32(head), n = read_be32(head + 4);
  if (magic != MNIST_LABELS_MAGIC) {
    snprintf(err, errlen,
             "%s: wrong magic 0x%08x at byte 0 (IDX labels have 0x%08x = %u); is this a "
             "labels file%s?",
             path, magic, MNIST_LABELS_MAGIC, MNIST_LABELS_MAGIC,
             magic == MNIST_IMAGES_MAGIC ? " (this one holds images)" : "");
    goto done;
  }
  char what[64];
  snprintf(what, sizeof what, "%u labels", n);
  if (check_promise(&s, what, 8 + (unsigned long long)n, err, errlen)) goto done;
  if (read_body(&s, what, 8, n, &data, err, errlen)) goto done;
  for (uint32_t i = 0; i < n; i++) {
    if (data[i] > 9) {
      snprintf(err, errlen, "%s: label %u at byte %u is %u, outside 0..9", path, i, 8 + i,
               data[i]);
      goto done;
    }
  }
  out->labels = data;
  out->n = (int)n;
  data = NULL;
  rc = 0;
done:
  free(data);
  file_stream_close(&s);
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

int dataset_mnist_paths(const char *dir, const char *split, char *images, char *labels,
                        size_t len, char *err, size_t errlen) {
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
  char name[64];
  snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
  find_file(dir, name, images, len);
  snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
  find_file(dir, name, labels, len);
  return 0;
}

int dataset_load_mnist(const char *dir, const char *split, dataset_t *out, char *err,
                       size_t errlen) {
  memset(out, 0, sizeof *out);
  char images[4096], labels[4096];
  if (dataset_mnist_paths(dir, split, images, labels, sizeof images, err, errlen)) return -1;
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
