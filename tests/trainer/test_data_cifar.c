/* test_data_cifar.c: the CIFAR binary loader on synthetic files (the real set is
 * not shipped): records, labels and pixels land where the format says; truncated,
 * oversized, bad-label and missing files are rejected with the file named. Also the
 * batch transform: normalisation values, crop offsets with zero padding, flips, and
 * the prefetching loader giving exactly the batches of the synchronous one. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "batch.h"
#include "check.h"
#include "data_cifar.h"
#include "dataloader.h"

static char dir[256];

static void write_records(const char *name, int n, int classes, int bad_at) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  for (int i = 0; i < n; i++) {
    if (classes == 100) fputc(i % 20, f);
    fputc(i == bad_at ? classes : i % classes, f);
    for (int j = 0; j < 3072; j++) fputc((i * 31 + j) & 255, f);
  }
  fclose(f);
}

static void test_loader(void) {
  dataset_t ds;
  char err[512], path[512];
  write_records("a.bin", 3, 10, -1);
  snprintf(path, sizeof path, "%s/a.bin", dir);
  CHECK(dataset_load_cifar_file(path, 10, 3, &ds, err, sizeof err) == 0);
  CHECK(ds.n == 3 && ds.c == 3 && ds.h == 32 && ds.num_classes == 10);
  CHECK(ds.labels[2] == 2 && ds.pixels[3072 + 5] == ((31 + 5) & 255));
  CHECK(ds.pixels[2 * 3072 + 3071] == ((62 + 3071) & 255));
  dataset_free(&ds);
  CHECK(dataset_load_cifar_file(path, 10, 2, &ds, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "a.bin");
  CHECK_CONTAINS(err, "oversized");
  CHECK(dataset_load_cifar_file(path, 10, 4, &ds, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "truncated");
  /* Cut inside a record. */
  CHECK(truncate(path, 3073 * 2 + 100) == 0);
  CHECK(dataset_load_cifar_file(path, 10, 0, &ds, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "truncated");
  CHECK_CONTAINS(err, "byte 6146");
  write_records("b.bin", 4, 10, 3);
  snprintf(path, sizeof path, "%s/b.bin", dir);
  CHECK(dataset_load_cifar_file(path, 10, 0, &ds, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "record 3: label 10 at byte 9219");
  write_records("c.bin", 2, 100, -1);
  snprintf(path, sizeof path, "%s/c.bin", dir);
  CHECK(dataset_load_cifar_file(path, 100, 0, &ds, err, sizeof err) == 0);
  CHECK(ds.n == 2 && ds.labels[1] == 1 && ds.pixels[3072] == 31);
  dataset_free(&ds);
  CHECK(dataset_load_cifar(dir, 10, "test", &ds, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "test_batch.bin");
  CHECK(ds.pixels == NULL && ds.n == 0);
  unlink(path);
  snprintf(path, sizeof path, "%s/a.bin", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/b.bin", dir);
  unlink(path);
}

static void test_transform(void) {
  /* One 1x4x4 image with pixel value 16*r + c + 1, label 7. */
  uint8_t px[16], lab[1] = {7};
  for (int i = 0; i < 16; i++) px[i] = (uint8_t)(i + 1);
  dataset_t ds = {.n = 1, .c = 1, .h = 4, .w = 4, .num_classes = 10, .pixels = px, .labels = lab};
  const float mean[1] = {0.5f}, std[1] = {0.25f};
  batch_transform_t t = {.mean = mean, .std = std};
  real_t x[16];
  uint8_t y;
  int idx = 0;
  batch_fill(&ds, &idx, 1, &t, NULL, x, &y);
  CHECK(y == 7);
  CHECK_NEAR(x[5], (6 / 255.0 - 0.5) / 0.25, 1e-6);
  /* Crop with padding 1 and flips: over many draws, every output must be either a
   * source pixel at offset (dy, dx) in [-1, 1]^2 (mirrored when flipped) or padding. */
  batch_transform_t a = {.mean = NULL, .std = NULL, .crop_pad = 1, .flip = 1};
  rng_t r;
  rng_seed(&r, 5);
  int seen_flip = 0, seen_shift = 0;
  for (int trial = 0; trial < 64; trial++) {
    batch_fill(&ds, &idx, 1, &a, &r, x, &y);
    int match = 0;
    for (int f = 0; f < 2 && !match; f++) {
      for (int dy = -1; dy <= 1 && !match; dy++) {
        for (int dx = -1; dx <= 1 && !match; dx++) {
          int ok = 1;
          for (int rr = 0; rr < 4; rr++) {
            for (int c = 0; c < 4; c++) {
              int sr = rr + dy, sc = (f ? 3 - c : c) + dx;
              double want = sr >= 0 && sr < 4 && sc >= 0 && sc < 4 ? px[sr * 4 + sc] / 255.0 : 0;
              if (fabs(x[rr * 4 + c] - want) > 1e-7) ok = 0;
            }
          }
          if (ok) {
            match = 1;
            seen_flip |= f;
            seen_shift |= dy != 0 || dx != 0;
          }
        }
      }
    }
    CHECK(match);
  }
  CHECK(seen_flip && seen_shift);
}

static void test_dataloader(void) {
  enum { N = 37 };
  uint8_t *px = malloc(N * 3 * 8 * 8), lab[N];
  for (int i = 0; i < N * 192; i++) px[i] = (uint8_t)(i * 13);
  for (int i = 0; i < N; i++) lab[i] = (uint8_t)(i % 10);
  dataset_t ds = {.n = N, .c = 3, .h = 8, .w = 8, .num_classes = 10, .pixels = px, .labels = lab};
  batch_transform_t t = {.mean = cifar10_mean, .std = cifar10_std, .crop_pad = 4, .flip = 1};
  char err[128];
  dataloader_t *sync = dataloader_create(&ds, 8, 0, &t, 0, err, sizeof err);
  dataloader_t *pre = dataloader_create(&ds, 8, 0, &t, 1, err, sizeof err);
  int idx[N];
  for (int i = 0; i < N; i++) idx[i] = (i * 7) % N;
  for (int epoch = 0; epoch < 3; epoch++) {
    dataloader_start_epoch(sync, idx, N, 100 + (uint64_t)epoch);
    dataloader_start_epoch(pre, idx, N, 100 + (uint64_t)epoch);
    CHECK_EQ_INT(dataloader_num_batches(pre), 5);
    int total = 0, n1, n2;
    const real_t *x1, *x2;
    const uint8_t *y1, *y2;
    while ((n1 = dataloader_next(sync, &x1, &y1)) > 0) {
      n2 = dataloader_next(pre, &x2, &y2);
      CHECK_EQ_INT(n1, n2);
      CHECK(memcmp(x1, x2, sizeof(real_t) * (size_t)n1 * 192) == 0);
      CHECK(memcmp(y1, y2, (size_t)n1) == 0);
      for (int i = 0; i < n1; i++) CHECK(y1[i] == lab[idx[total + i]]);
      total += n1;
    }
    CHECK(dataloader_next(pre, &x2, &y2) == 0);
    CHECK_EQ_INT(total, N);
  }
  /* Restarting in the middle of an epoch discards the prefetched batch. */
  dataloader_start_epoch(pre, idx, N, 1);
  const real_t *x;
  const uint8_t *y;
  dataloader_next(pre, &x, &y);
  dataloader_start_epoch(pre, idx + 8, 8, 1);
  CHECK(dataloader_next(pre, &x, &y) == 8 && y[0] == lab[idx[8]]);
  CHECK(dataloader_next(pre, &x, &y) == 0);
  dataloader_free(sync);
  dataloader_free(pre);
  free(px);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/hv_test_cifar_XXXXXX");
  if (!mkdtemp(dir)) return 2;
  test_loader();
  test_transform();
  test_dataloader();
  rmdir(dir);
  CHECK_RETURN();
}
