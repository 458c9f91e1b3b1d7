/* cifar_data.c: finding and loading the data of cifar_ddp (see cifar_data.h).
 * The CIFAR directory loader is ours rather than trainer's dataset_load_cifar, which
 * insists on the standard record counts: we accept subsets of whole records, so that
 * a user's slice and the tests' tiny files train through the same path. */
#include "cifar_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data_cifar.h"
#include "data_dirs.h"
#include "data_mnist.h"
#include "file_read.h"

/* Fashion-MNIST training-set statistics of pixel/255 (the values torchvision users
 * normalise with). */
static const float fashion_mean[1] = {0.2860f};
static const float fashion_std[1] = {0.3530f};

static int dir_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* path of name in dir, preferring name.gz; "" when neither exists. */
static void find_data_file(const char *dir, const char *name, char *path, size_t len) {
  snprintf(path, len, "%s/%s.gz", dir, name);
  if (file_exists(path)) return;
  snprintf(path, len, "%s/%s", dir, name);
  if (file_exists(path)) return;
  path[0] = '\0';
}

static const char *cifar_howto(int classes) {
  return classes == 10
             ? "get cifar-10-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html, "
               "unpack it and pass --data-dir .../cifar-10-batches-bin"
             : "get cifar-100-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html, "
               "unpack it and pass --data-dir .../cifar-100-binary";
}

static int append(dataset_t *all, const dataset_t *part, char *err, size_t errlen) {
  const size_t img = (size_t)part->c * part->h * part->w;
  uint8_t *p = realloc(all->pixels, ((size_t)all->n + part->n) * img);
  if (p) all->pixels = p;
  uint8_t *l = realloc(all->labels, (size_t)all->n + part->n);
  if (l) all->labels = l;
  if (!p || !l) {
    snprintf(err, errlen, "out of memory loading CIFAR");
    return -1;
  }
  memcpy(all->pixels + (size_t)all->n * img, part->pixels, (size_t)part->n * img);
  memcpy(all->labels + all->n, part->labels, (size_t)part->n);
  all->n += part->n;
  return 0;
}

/* Loads the files of one split, each checked for whole records and label range. */
static int load_cifar_split(const char *dir, int classes, int train, dataset_t *out,
                            char *note, size_t notelen, char *err, size_t errlen) {
  static const char *const train10[] = {"data_batch_1.bin", "data_batch_2.bin",
                                        "data_batch_3.bin", "data_batch_4.bin",
                                        "data_batch_5.bin", NULL};
  static const char *const test10[] = {"test_batch.bin", NULL};
  static const char *const train100[] = {"train.bin", NULL};
  static const char *const test100[] = {"test.bin", NULL};
  const char *const *names = classes == 10 ? (train ? train10 : test10)
                                           : (train ? train100 : test100);
  const int standard = classes == 100 && train ? 50000 : 10000;
  memset(out, 0, sizeof *out);
  out->c = 3, out->h = out->w = 32, out->num_classes = classes;
  for (int f = 0; names[f]; f++) {
    char path[4200];
    find_data_file(dir, names[f], path, sizeof path);
    if (!path[0]) {
      snprintf(err, errlen, "%s/%s: no such file (CIFAR-%d binary version): %s", dir, names[f],
               classes, cifar_howto(classes));
      dataset_free(out);
      return -1;
    }
    dataset_t part;
    if (dataset_load_cifar_file(path, classes, 0, &part, err, errlen)) {
      const size_t used = strlen(err);
      snprintf(err + used, errlen - used, " (%s)", cifar_howto(classes));
      dataset_free(out);
      return -1;
    }
    if (part.n != standard && !note[0]) {
      snprintf(note, notelen, "%.300s holds %d records, the standard file %d: training on a subset",
               path, part.n, standard);
    }
    int rc = append(out, &part, err, errlen);
    dataset_free(&part);
    if (rc) {
      dataset_free(out);
      return -1;
    }
  }
  return 0;
}

int cifar_data_pad(dataset_t *ds, int pad, char *err, size_t errlen) {
  const int h = ds->h + 2 * pad, w = ds->w + 2 * pad;
  uint8_t *p = calloc((size_t)ds->n * ds->c * h * w, 1);
  if (!p) {
    snprintf(err, errlen, "out of memory padding %d images to %dx%d", ds->n, h, w);
    return -1;
  }
  for (int i = 0; i < ds->n; i++) {
    for (int c = 0; c < ds->c; c++) {
      for (int y = 0; y < ds->h; y++) {
        const uint8_t *src = ds->pixels + (((size_t)i * ds->c + c) * ds->h + y) * ds->w;
        uint8_t *dst = p + (((size_t)i * ds->c + c) * h + y + pad) * w + pad;
        memcpy(dst, src, (size_t)ds->w);
      }
    }
  }
  free(ds->pixels);
  ds->pixels = p;
  ds->h = h;
  ds->w = w;
  return 0;
}

static int load_fashion(const char *dir, cifar_data_t *d, char *err, size_t errlen) {
  static const char *const names[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                      "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
  const char *howto = strcmp(dir, FASHION_MNIST_DIR)
                          ? "put the four Fashion-MNIST IDX files (.gz or plain) there"
                          : "install it with: apt-get install dataset-fashion-mnist";
  for (int f = 0; f < 4; f++) {
    char path[4200];
    find_data_file(dir, names[f], path, sizeof path);
    if (!path[0]) {
      snprintf(err, errlen, "%s/%s.gz: no such file (Fashion-MNIST): %s", dir, names[f], howto);
      return -1;
    }
  }
  if (dataset_load_mnist(dir, "train", &d->train, err, errlen) ||
      dataset_load_mnist(dir, "test", &d->test, err, errlen)) {
    const size_t used = strlen(err);
    snprintf(err + used, errlen - used, " (corrupt Fashion-MNIST file: %s)", howto);
    return -1;
  }
  char tr_images[4096], te_images[4096], labels[4096];
  if (dataset_mnist_paths(dir, "train", tr_images, labels, sizeof labels, err, errlen) ||
      dataset_mnist_paths(dir, "test", te_images, labels, sizeof labels, err, errlen) ||
      dataset_check_pair(&d->train, tr_images, &d->test, te_images, err, errlen))
    return -1;
  if (d->train.c != 1 || d->train.h != 28 || d->train.w != 28) {
    snprintf(err, errlen, "%s: Fashion-MNIST images are 1x28x28, these are %dx%dx%d", tr_images,
             d->train.c, d->train.h, d->train.w);
    return -1;
  }
  /* 28 + 2 * 2 = 32: the CIFAR geometry, so the WRN's strides give 8x8 last maps. */
  if (cifar_data_pad(&d->train, 2, err, errlen) || cifar_data_pad(&d->test, 2, err, errlen))
    return -1;
  d->mean = fashion_mean;
  d->std = fashion_std;
  return 0;
}

int cifar_data_load(const char *dataset, const char *dir, cifar_data_t *d, char *err,
                    size_t errlen) {
  memset(d, 0, sizeof *d);
  int rc;
  if (!strcmp(dataset, "fashion-mnist")) {
    snprintf(d->dir, sizeof d->dir, "%s", dir ? dir : FASHION_MNIST_DIR);
    rc = load_fashion(d->dir, d, err, errlen);
  } else {
    const int classes = !strcmp(dataset, "cifar100") ? 100 : 10;
    const char *sub = classes == 10 ? "cifar-10-batches-bin" : "cifar-100-binary";
    const char *base = dir ? dir : "data";
    if (!dir_exists(base)) {
      snprintf(err, errlen, "--data-dir %s: no such directory (CIFAR-%d binary version): %s",
               base, classes, cifar_howto(classes));
      cifar_data_free(d);
      return -1;
    }
    /* The folder the tarball unpacks to, when the user named its parent. */
    char probe[4200], probe_gz[4210];
    snprintf(probe, sizeof probe, "%s/%s/%s", base, sub,
             classes == 10 ? "test_batch.bin" : "test.bin");
    snprintf(probe_gz, sizeof probe_gz, "%s.gz", probe);
    if (file_exists(probe) || file_exists(probe_gz))
      snprintf(d->dir, sizeof d->dir, "%s/%s", base, sub);
    else snprintf(d->dir, sizeof d->dir, "%s", base);
    char *note = d->note;
    const size_t nl = sizeof d->note;
    rc = load_cifar_split(d->dir, classes, 1, &d->train, note, nl, err, errlen);
    if (!rc) rc = load_cifar_split(d->dir, classes, 0, &d->test, note, nl, err, errlen);
    if (!rc) {
      /* The loader fixes both at 3x32x32 and the same classes; checked all the same,
       * as for Fashion-MNIST, so no set reaches training unchecked. */
      char tr_name[4200], te_name[4200];
      snprintf(tr_name, sizeof tr_name, "%s/%s", d->dir,
               classes == 10 ? "data_batch_{1..5}.bin" : "train.bin");
      snprintf(te_name, sizeof te_name, "%s/%s", d->dir, classes == 10 ? "test_batch.bin" : "test.bin");
      rc = dataset_check_pair(&d->train, tr_name, &d->test, te_name, err, errlen);
    }
    d->mean = classes == 10 ? cifar10_mean : cifar100_mean;
    d->std = classes == 10 ? cifar10_std : cifar100_std;
  }
  if (rc) {
    cifar_data_free(d);
    return -1;
  }
  return 0;
}

void cifar_data_free(cifar_data_t *d) {
  dataset_free(&d->train);
  dataset_free(&d->test);
}

static int limit(dataset_t *ds, int n, char *err, size_t errlen) {
  if (n <= 0 || n >= ds->n) return 0;
  dataset_t part;
  if (dataset_slice(ds, 0, n, &part, err, errlen)) return -1;
  dataset_free(ds);
  *ds = part;
  return 0;
}

int cifar_data_limit(cifar_data_t *d, int train_size, int test_size, char *err, size_t errlen) {
  return limit(&d->train, train_size, err, errlen) || limit(&d->test, test_size, err, errlen)
             ? -1
             : 0;
}
