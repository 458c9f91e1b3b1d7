/* test_data_mnist.c: the MNIST IDX loader reads the embedded subset with the known
 * counts, labels and pixel sums (computed independently with Python's gzip), and
 * rejects truncated, oversized, wrong-magic, bad-label and mismatched files with a
 * message naming the file and the fault. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "data_mnist.h"

static char tmpdir[256];

static void write_file(const char *name, const uint8_t *data, size_t n, int gz) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  if (gz) {
    gzFile f = gzopen(path, "wb");
    gzwrite(f, data, (unsigned)n);
    gzclose(f);
  } else {
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, n, f);
    fclose(f);
  }
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

/* A valid pair of n images of 2x3 and n labels, plain. */
static void write_valid(int n) {
  uint8_t img[16 + 6 * 8], lab[8 + 8];
  put_be32(img, 2051);
  put_be32(img + 4, (uint32_t)n);
  put_be32(img + 8, 2);
  put_be32(img + 12, 3);
  for (int i = 0; i < 6 * n; i++) img[16 + i] = (uint8_t)(i * 7);
  put_be32(lab, 2049);
  put_be32(lab + 4, (uint32_t)n);
  for (int i = 0; i < n; i++) lab[8 + i] = (uint8_t)(i % 10);
  write_file("train-images-idx3-ubyte", img, 16 + 6 * (size_t)n, 0);
  write_file("train-labels-idx1-ubyte", lab, 8 + (size_t)n, 0);
}

static void expect_error(const char *what, const char *file, const char *text) {
  dataset_t ds;
  char err[512] = "";
  int rc = dataset_load_mnist(tmpdir, "train", &ds, err, sizeof err);
  if (rc != -1) fprintf(stderr, "case '%s' was accepted\n", what);
  CHECK(rc == -1);
  CHECK(ds.pixels == NULL && ds.labels == NULL && ds.n == 0);
  CHECK_CONTAINS(err, file);
  CHECK_CONTAINS(err, text);
}

static void test_embedded(void) {
  dataset_t tr, te;
  char err[512];
  const char *dir = dataset_default_mnist_dir();
  CHECK(dataset_load_mnist(dir, "train", &tr, err, sizeof err) == 0);
  CHECK(dataset_load_mnist(dir, "test", &te, err, sizeof err) == 0);
  if (!tr.pixels || !te.pixels) {
    fprintf(stderr, "cannot load %s: %s\n", dir, err);
    check_failures++;
    return;
  }
  CHECK_EQ_INT(tr.n, 8000);
  CHECK_EQ_INT(te.n, 2000);
  CHECK(tr.c == 1 && tr.h == 28 && tr.w == 28 && tr.num_classes == 10);
  const uint8_t first_train[10] = {0, 5, 9, 0, 2, 8, 6, 3, 4, 7};
  const uint8_t first_test[10] = {3, 3, 4, 2, 2, 4, 6, 7, 7, 7};
  CHECK(memcmp(tr.labels, first_train, 10) == 0);
  CHECK(memcmp(te.labels, first_test, 10) == 0);
  long long s0 = 0, s = 0, t0 = 0, t = 0;
  for (int i = 0; i < 784; i++) s0 += tr.pixels[i], t0 += te.pixels[i];
  for (size_t i = 0; i < (size_t)tr.n * 784; i++) s += tr.pixels[i];
  for (size_t i = 0; i < (size_t)te.n * 784; i++) t += te.pixels[i];
  CHECK_EQ_INT(s0, 38909);
  CHECK_EQ_INT(s, 209680240);
  CHECK_EQ_INT(t0, 48733);
  CHECK_EQ_INT(t, 52466360);
  int count[10] = {0};
  for (int i = 0; i < te.n; i++) count[te.labels[i]]++;
  CHECK_EQ_INT(count[0], 208);
  CHECK_EQ_INT(count[9], 187);
  dataset_t sl;
  CHECK(dataset_slice(&tr, 1, 3, &sl, err, sizeof err) == 0);
  CHECK(sl.n == 2 && sl.labels[0] == 5 && memcmp(sl.pixels, tr.pixels + 784, 2 * 784) == 0);
  dataset_free(&sl);
  CHECK(dataset_slice(&tr, 5, 9000, &sl, err, sizeof err) == -1);
  CHECK(sl.pixels == NULL);
  dataset_free(&tr);
  dataset_free(&te);
  dataset_free(&te); /* twice is harmless */
}

static void test_rejections(void) {
  uint8_t buf[128];
  dataset_t ds;
  char err[512];

  write_valid(4);
  CHECK(dataset_load_mnist(tmpdir, "train", &ds, err, sizeof err) == 0);
  CHECK(ds.n == 4 && ds.h == 2 && ds.w == 3 && ds.pixels[7] == 49 && ds.labels[3] == 3);
  dataset_free(&ds);
  CHECK(dataset_load_mnist(tmpdir, "validation", &ds, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "validation");

  /* The same data gzip-compressed is preferred over the plain file and read alike. */
  put_be32(buf, 2051);
  put_be32(buf + 4, 4);
  put_be32(buf + 8, 2);
  put_be32(buf + 12, 3);
  for (int i = 0; i < 24; i++) buf[16 + i] = (uint8_t)(100 + i);
  write_file("train-images-idx3-ubyte.gz", buf, 40, 1);
  CHECK(dataset_load_mnist(tmpdir, "train", &ds, err, sizeof err) == 0);
  CHECK(ds.n == 4 && ds.pixels[23] == 123);
  dataset_free(&ds);
  /* A gzip stream cut in the middle. */
  {
    char path[512];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", tmpdir);
    FILE *f = fopen(path, "rb");
    uint8_t gzbuf[256];
    size_t n = fread(gzbuf, 1, sizeof gzbuf, f);
    fclose(f);
    write_file("train-images-idx3-ubyte.gz", gzbuf, n - 12, 0);
    expect_error("truncated gzip", "train-images-idx3-ubyte.gz", "truncated");
    unlink(path);
  }

  /* Truncated plain images: header says 4 images, 3.5 present. */
  write_valid(4);
  put_be32(buf, 2051);
  put_be32(buf + 4, 4);
  put_be32(buf + 8, 2);
  put_be32(buf + 12, 3);
  memset(buf + 16, 1, 24);
  write_file("train-images-idx3-ubyte", buf, 16 + 21, 0);
  expect_error("truncated", "train-images-idx3-ubyte", "truncated");
  /* Oversized: trailing bytes. */
  write_file("train-images-idx3-ubyte", buf, 16 + 24 + 5, 0);
  expect_error("oversized", "train-images-idx3-ubyte", "oversized");
  /* Header shorter than 16 bytes. */
  write_file("train-images-idx3-ubyte", buf, 10, 0);
  expect_error("short header", "train-images-idx3-ubyte", "truncated");
  /* Wrong magic: a labels file where images belong. */
  put_be32(buf, 2049);
  write_file("train-images-idx3-ubyte", buf, 40, 0);
  expect_error("wrong magic", "train-images-idx3-ubyte", "wrong magic 0x00000801");

  /* Labels: wrong magic, out-of-range label, count mismatch, missing file. */
  write_valid(4);
  put_be32(buf, 1234);
  put_be32(buf + 4, 4);
  write_file("train-labels-idx1-ubyte", buf, 12, 0);
  expect_error("label magic", "train-labels-idx1-ubyte", "wrong magic");
  put_be32(buf, 2049);
  buf[8] = 1, buf[9] = 2, buf[10] = 12, buf[11] = 0;
  write_file("train-labels-idx1-ubyte", buf, 12, 0);
  expect_error("label range", "train-labels-idx1-ubyte", "label 2 at byte 10 is 12");
  put_be32(buf + 4, 3);
  buf[10] = 0;
  write_file("train-labels-idx1-ubyte", buf, 11, 0);
  expect_error("count mismatch", "train-labels-idx1-ubyte", "4 images but");
  char path[512];
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", tmpdir);
  unlink(path);
  expect_error("missing", "train-labels-idx1-ubyte", "cannot open");
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", tmpdir);
  unlink(path);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/hv_test_mnist_XXXXXX");
  if (!mkdtemp(tmpdir)) return 2;
  test_embedded();
  test_rejections();
  rmdir(tmpdir);
  CHECK_RETURN();
}
