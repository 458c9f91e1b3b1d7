/* make_tiny_cifar.c: writes a tiny CIFAR-10 (or CIFAR-100) binary data set for the
 * cifar_ddp tests: data_batch_1..5.bin + test_batch.bin (train.bin + test.bin for 100
 * classes), each record a label and 3x32x32 pixels. The classes are learnable in a few
 * steps: class c brightens a band of rows (and a channel) chosen by c, over uniform
 * noise, so a working trainer's loss falls and a broken one's does not.
 * Usage: make_tiny_cifar DIR TRAIN_PER_FILE TEST [CLASSES] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t state = 0x2545f4914f6cdd1dull;

static unsigned next_byte(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (unsigned)(state >> 24) & 0xff;
}

static int write_file(const char *dir, const char *name, int n, int classes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    const int label = (int)(next_byte() % (unsigned)classes);
    uint8_t rec[2 + 3072];
    size_t k = 0;
    if (classes == 100) rec[k++] = (uint8_t)(label / 5); /* coarse label 0..19 */
    rec[k++] = (uint8_t)label;
    const int band = label % 8, channel = (label / 8) % 3;
    for (int c = 0; c < 3; c++)
      for (int y = 0; y < 32; y++)
        for (int x = 0; x < 32; x++) {
          unsigned v = next_byte() / 2;
          if (y / 4 == band && (classes <= 8 || c == channel)) v += 120;
          rec[k++] = (uint8_t)v;
        }
    if (fwrite(rec, 1, k, f) != k) {
      perror(path);
      fclose(f);
      return -1;
    }
  }
  return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: make_tiny_cifar DIR TRAIN_PER_FILE TEST [CLASSES]\n");
    return 2;
  }
  const int per = atoi(argv[2]), test = atoi(argv[3]), classes = argc > 4 ? atoi(argv[4]) : 10;
  if (per < 1 || test < 1 || (classes != 10 && classes != 100)) {
    fprintf(stderr, "make_tiny_cifar: bad sizes or classes (10 or 100)\n");
    return 2;
  }
  if (classes == 10) {
    char name[64];
    for (int b = 1; b <= 5; b++) {
      snprintf(name, sizeof name, "data_batch_%d.bin", b);
      if (write_file(argv[1], name, per, classes)) return 1;
    }
    return write_file(argv[1], "test_batch.bin", test, classes) ? 1 : 0;
  }
  if (write_file(argv[1], "train.bin", 5 * per, classes)) return 1;
  return write_file(argv[1], "test.bin", test, classes) ? 1 : 0;
}
