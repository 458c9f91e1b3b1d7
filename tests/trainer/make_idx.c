/* make_idx.c: writes a tiny MNIST-format directory (plain IDX files) for the workloads'
 * bad-input tests: training and test sets of chosen sizes and image shapes, optionally
 * one test label out of range, or a gzip training-images file whose header asks for
 * 2^40 bytes in front of 64 MiB of zeros (a 70 KB file).
 * Usage: make_idx DIR TRAIN_N TRAIN_ROWSxCOLS TEST_N TEST_ROWSxCOLS [label=L | bomb] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void put_be32(FILE *f, uint32_t v) {
  const uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  fwrite(b, 1, 4, f);
}

static FILE *open_file(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  return f;
}

/* n images of rows x cols (a learnable pattern: label-dependent bright rows) and
 * their labels i % 10, bad_label replacing label 2 when >= 0. */
static void write_split(const char *dir, const char *prefix, int n, int rows, int cols,
                        int bad_label) {
  char name[64];
  snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
  FILE *f = open_file(dir, name);
  put_be32(f, 2051), put_be32(f, (uint32_t)n), put_be32(f, (uint32_t)rows), put_be32(f, (uint32_t)cols);
  for (int i = 0; i < n; i++)
    for (int p = 0; p < rows * cols; p++) fputc(p / cols == i % 10 ? 255 : (i * 7 + p) % 64, f);
  fclose(f);
  snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
  f = open_file(dir, name);
  put_be32(f, 2049), put_be32(f, (uint32_t)n);
  for (int i = 0; i < n; i++) fputc(i == 2 && bad_label >= 0 ? bad_label : i % 10, f);
  fclose(f);
}

/* train-images-idx3-ubyte.gz: a header of 2^20 images of 1024 x 1024, then 64
 * gzip members of 1 MiB of zeros each. */
static void write_bomb(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  gzFile g = gzopen(path, "wb9");
  const uint8_t head[16] = {0, 0, 8, 3, 0, 0x10, 0, 0, 0, 0, 4, 0, 0, 0, 4, 0};
  gzwrite(g, head, sizeof head);
  gzclose(g);
  /* One member of zeros, appended 64 times. */
  snprintf(path, sizeof path, "%s/zeros.gz", dir);
  g = gzopen(path, "wb9");
  uint8_t *zeros = calloc(1, 1 << 20);
  gzwrite(g, zeros, 1 << 20);
  gzclose(g);
  free(zeros);
  FILE *z = fopen(path, "rb");
  static uint8_t member[1 << 16];
  const size_t len = fread(member, 1, sizeof member, z);
  fclose(z);
  remove(path);
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  FILE *f = fopen(path, "ab");
  if (!f) {
    perror(path);
    exit(1);
  }
  for (int i = 0; i < 64; i++) fwrite(member, 1, len, f);
  fclose(f);
}

int main(int argc, char **argv) {
  int trn, trr, trc, ten, ter, tec, bad = -1;
  if (argc < 6 || sscanf(argv[2], "%d", &trn) != 1 || sscanf(argv[3], "%dx%d", &trr, &trc) != 2 ||
      sscanf(argv[4], "%d", &ten) != 1 || sscanf(argv[5], "%dx%d", &ter, &tec) != 2) {
    fprintf(stderr, "usage: make_idx DIR TRAIN_N RxC TEST_N RxC [label=L | bomb]\n");
    return 2;
  }
  if (argc > 6 && strncmp(argv[6], "label=", 6) == 0) bad = atoi(argv[6] + 6);
  write_split(argv[1], "train", trn, trr, trc, -1);
  write_split(argv[1], "t10k", ten, ter, tec, bad);
  if (argc > 6 && strcmp(argv[6], "bomb") == 0) write_bomb(argv[1]);
  return 0;
}
