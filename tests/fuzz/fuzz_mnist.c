/* fuzz_mnist.c: libFuzzer target of the MNIST IDX reader (trainer/data_mnist.c, through
 * file_read.c), plain and gzip.
 * Input: flags (1 byte) | images length L (2 bytes, big-endian) | L bytes of images
 * file | the rest: labels file. Flags: bit 0 / bit 1 gzip-compress the images / labels
 * file before the reader sees it (valid gzip around fuzzed IDX; raw inputs with the
 * gzip magic reach the corrupt-stream paths); bit 2 goes through dataset_load_mnist
 * (a directory of the standard names, .gz preferred) instead of dataset_load_idx_pair;
 * bit 3 picks its split "test" instead of "train". */
#include <stdio.h>
#include <string.h>

#include "data_mnist.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  const unsigned flags = data[0];
  size_t images_len = (size_t)data[1] << 8 | data[2];
  data += 3, size -= 3;
  if (images_len > size) images_len = size;
  const int gz_images = flags & 1, gz_labels = (flags >> 1) & 1, by_dir = (flags >> 2) & 1;
  const char *prefix = (flags >> 3) & 1 ? "t10k" : "train";

  fuzz_tmpdir_clear();
  const char *dir = fuzz_tmpdir();
  char images[4200], labels[4200];
  snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte%s", dir, prefix, gz_images ? ".gz" : "");
  snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte%s", dir, prefix, gz_labels ? ".gz" : "");
  fuzz_write_file(images, data, images_len, gz_images);
  fuzz_write_file(labels, data + images_len, size - images_len, gz_labels);

  /* Garbage in *out and err: the contract says a failure zeroes *out (freeing the
   * pattern below would crash) and leaves a message. */
  dataset_t ds;
  memset(&ds, 0xa5, sizeof ds);
  char err[512] = "";
  const char *split = (flags >> 3) & 1 ? "test" : "train";
  int rc = by_dir ? dataset_load_mnist(dir, split, &ds, err, sizeof err)
                  : dataset_load_idx_pair(images, labels, &ds, err, sizeof err);
  if (rc == 0) {
    /* Touch every byte the reader claims to have: ASan checks the sizes it returned. */
    const size_t pixels = (size_t)ds.n * ds.c * ds.h * ds.w;
    volatile unsigned sum = 0;
    for (size_t i = 0; i < pixels; i++) sum += ds.pixels[i];
    for (int i = 0; i < ds.n; i++) sum += ds.labels[i];
    (void)sum;
  } else if (err[0] == '\0') {
    __builtin_trap(); /* a failure must say why */
  }
  dataset_free(&ds);
  return 0;
}
