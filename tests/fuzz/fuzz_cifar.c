/* fuzz_cifar.c: libFuzzer target of the CIFAR binary reader (trainer/data_cifar.c) and
 * of cifar_ddp's data loading around it (workloads/cifar/cifar_data.c: a directory of
 * CIFAR files or of Fashion-MNIST IDX files, padding to 32x32, --train-size limits).
 * Input: flags (1 byte) | payload. Flags: bit 0 CIFAR-100 (else CIFAR-10); bits 1-2:
 * 0 dataset_load_cifar_file (any whole number of records), 1 the same expecting 2
 * records, 2 cifar_data_load on a directory holding the payload under every file name
 * of the dataset, 3 the same one level down (cifar-10-batches-bin/...); bit 3 gzip
 * the files; bit 4 Fashion-MNIST instead: payload = images length L (2 bytes,
 * big-endian) | L bytes of images | labels, written as both splits' IDX files. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cifar_data.h"
#include "data_cifar.h"
#include "fuzz_util.h"

static void write_all(const char *dir, const char *const *names, const uint8_t *data,
                      size_t size, int gzip) {
  for (int i = 0; names[i]; i++) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s%s", dir, names[i], gzip ? ".gz" : "");
    fuzz_write_file(path, data, size, gzip);
  }
}

static void check_loaded(const dataset_t *ds) {
  const size_t pixels = (size_t)ds->n * ds->c * ds->h * ds->w;
  volatile unsigned sum = 0;
  for (size_t i = 0; i < pixels; i++) sum += ds->pixels[i];
  for (int i = 0; i < ds->n; i++) {
    if (ds->labels[i] >= ds->num_classes) __builtin_trap(); /* the reader checks labels */
    sum += ds->labels[i];
  }
  (void)sum;
}

static void fuzz_dir(const char *dataset, const char *dir, const char *files_dir,
                     const char *const *names, const uint8_t *data, size_t size, int gzip) {
  write_all(files_dir, names, data, size, gzip);
  cifar_data_t d;
  memset(&d, 0xa5, sizeof d);
  char err[1024] = "";
  if (cifar_data_load(dataset, dir, &d, err, sizeof err) == 0) {
    check_loaded(&d.train);
    check_loaded(&d.test);
    if (cifar_data_limit(&d, 1, 1, err, sizeof err) == 0) {
      check_loaded(&d.train);
      check_loaded(&d.test);
    }
  } else if (err[0] == '\0') {
    __builtin_trap(); /* a failure must say why */
  }
  cifar_data_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const unsigned flags = data[0];
  const int classes = flags & 1 ? 100 : 10, mode = (flags >> 1) & 3, gzip = (flags >> 3) & 1;
  data++, size--;
  fuzz_tmpdir_clear();
  const char *dir = fuzz_tmpdir();

  if ((flags >> 4) & 1) {
    if (size < 2) return 0;
    size_t images_len = (size_t)data[0] << 8 | data[1];
    data += 2, size -= 2;
    if (images_len > size) images_len = size;
    static const char *const images[] = {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte", NULL};
    static const char *const labels[] = {"train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte", NULL};
    write_all(dir, labels, data + images_len, size - images_len, gzip);
    fuzz_dir("fashion-mnist", dir, dir, images, data, images_len, gzip);
    return 0;
  }
  if (mode >= 2) {
    static const char *const names10[] = {"data_batch_1.bin", "data_batch_2.bin",
                                          "data_batch_3.bin", "data_batch_4.bin",
                                          "data_batch_5.bin", "test_batch.bin", NULL};
    static const char *const names100[] = {"train.bin", "test.bin", NULL};
    char sub[4300];
    snprintf(sub, sizeof sub, "%s/%s", dir,
             classes == 10 ? "cifar-10-batches-bin" : "cifar-100-binary");
    if (mode == 3 && mkdir(sub, 0700) != 0) __builtin_trap();
    fuzz_dir(classes == 10 ? "cifar10" : "cifar100", dir, mode == 3 ? sub : dir,
             classes == 10 ? names10 : names100, data, size, gzip);
    return 0;
  }
  char path[4300];
  snprintf(path, sizeof path, "%s/batch.bin%s", dir, gzip ? ".gz" : "");
  fuzz_write_file(path, data, size, gzip);
  dataset_t ds;
  memset(&ds, 0xa5, sizeof ds);
  char err[1024] = "";
  if (dataset_load_cifar_file(path, classes, mode == 1 ? 2 : 0, &ds, err, sizeof err) == 0)
    check_loaded(&ds);
  else if (err[0] == '\0')
    __builtin_trap();
  dataset_free(&ds);
  return 0;
}
