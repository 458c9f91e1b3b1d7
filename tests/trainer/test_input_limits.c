/* test_input_limits.c: the readers judge a file by its header before they allocate its
 * body, so a small file that asks for gigabytes fails at once with a message naming it
 * and the fault, within a fixed memory budget:
 *  - MNIST IDX, gzip: a header asking for 2^40 bytes in front of 256 MiB of zeros
 *    (a 260 KB file); a header announcing 4 images of 2 x 3 followed by those 256 MiB;
 *    a header asking for 784 MB from a 33-byte file; plain: a 1 GiB (sparse) labels
 *    file whose header says 4 labels;
 *  - CIFAR binary (no header): a 1 GiB (sparse) file;
 *  - checkpoints: truncated, padded to 1 GiB (sparse), a header claiming 2^61
 *    parameters, a momentum flag that is neither 0 nor 1;
 * each read runs in a child whose address space is limited to what it has plus 96 MiB
 * (ulimit -v), where reading the body first would fail with "out of memory" instead.
 * Also: dataset_check_pair (train/test shape, classes, labels) and the trainer's HV_*
 * settings, refused by model_finalize with the variable, the value and the range
 * (garbage, trailing characters, blanks, negative, zero, beyond the range, overflow). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "checkpoint.h"
#include "data_cifar.h"
#include "data_mnist.h"

static char tmpdir[256];

static char *path_of(const char *name) {
  static char path[8][512];
  static int next;
  char *p = path[next++ % 8];
  snprintf(p, 512, "%s/%s", tmpdir, name);
  return p;
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* n bytes as one gzip member into a malloc'ed buffer of *len bytes. */
static uint8_t *gzip_member(const uint8_t *data, size_t n, size_t *len) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY) != Z_OK) abort();
  const size_t cap = deflateBound(&z, (uLong)n);
  uint8_t *out = malloc(cap);
  z.next_in = (Bytef *)data, z.avail_in = (uInt)n, z.next_out = out, z.avail_out = (uInt)cap;
  if (!out || deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
  *len = cap - z.avail_out;
  deflateEnd(&z);
  return out;
}

/* A gzip file: head, then zero_mib MiB of zeros as that many copies of one member of
 * 1 MiB (about 1 KB each: the file stays small however much it inflates to). */
static void write_gz(const char *path, const uint8_t *head, size_t n, int zero_mib) {
  FILE *f = fopen(path, "wb");
  size_t len;
  uint8_t *m = gzip_member(head, n, &len);
  fwrite(m, 1, len, f);
  free(m);
  uint8_t *zeros = calloc(1, 1 << 20);
  m = gzip_member(zeros, 1 << 20, &len);
  for (int i = 0; i < zero_mib; i++) fwrite(m, 1, len, f);
  free(m);
  free(zeros);
  fclose(f);
}

/* head, then zeros up to `size` bytes in all, as a sparse file (no disk, no time). */
static void write_sparse(const char *path, const uint8_t *head, size_t n, off_t size) {
  FILE *f = fopen(path, "wb");
  fwrite(head, 1, n, f);
  fclose(f);
  if (truncate(path, size) != 0) abort();
}

static void idx_images_header(uint8_t *h, uint32_t n, uint32_t rows, uint32_t cols) {
  put_be32(h, MNIST_IMAGES_MAGIC), put_be32(h + 4, n), put_be32(h + 8, rows), put_be32(h + 12, cols);
}

/* The process's address space now, in bytes (/proc/self/statm, first field). */
static size_t vm_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (!f || fscanf(f, "%lu", &pages) != 1) abort();
  fclose(f);
  return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

typedef int (*reader_fn)(const void *arg, char *err, size_t errlen);

/* Runs reader in a child limited to its address space plus 96 MiB; checks that it fails
 * within 10 s with a message containing each of want[]. */
static void expect_refused(const char *what, reader_fn reader, const void *arg,
                           const char *const *want) {
  int pipefd[2];
  if (pipe(pipefd)) abort();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    const rlim_t limit = (rlim_t)vm_bytes() + ((rlim_t)96 << 20);
    struct rlimit rl = {limit, limit};
    if (setrlimit(RLIMIT_AS, &rl)) _exit(3);
    char err[1024] = "";
    const int rc = reader(arg, err, sizeof err);
    if (write(pipefd[1], err, strlen(err) + 1) < 0) _exit(4);
    _exit(rc == -1 ? 0 : 2);
  }
  close(pipefd[1]);
  char err[1024] = "";
  size_t len = 0;
  for (ssize_t r; len < sizeof err - 1 && (r = read(pipefd[0], err + len, sizeof err - 1 - len)) > 0;)
    len += (size_t)r;
  err[len] = '\0';
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("%-28s %.3f s: %s\n", what, secs, err);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the read did not fail cleanly (status 0x%x)",
        what, status);
  CHECK(secs < 10, "%s: %.1f s", what, secs);
  for (int i = 0; want[i]; i++) CHECK(strstr(err, want[i]) != NULL, "%s: '%s' not in: %s", what, want[i], err);
}

/* ---- MNIST ---------------------------------------------------------------------- */

static int read_idx_pair(const void *arg, char *err, size_t errlen) {
  const char *const *paths = arg;
  dataset_t ds;
  const int rc = dataset_load_idx_pair(paths[0], paths[1], &ds, err, errlen);
  dataset_free(&ds);
  return rc;
}

static void test_mnist(void) {
  uint8_t h[16];
  /* 2^20 images of 1024 x 1024: 2^40 bytes, then 256 MiB of zeros that a reader
   * inflating before it looks would try to hold. */
  idx_images_header(h, 1u << 20, 1024, 1024);
  char *bomb = path_of("bomb-images-idx3-ubyte.gz");
  write_gz(bomb, h, sizeof h, 256);
  const char *pair1[] = {bomb, path_of("none")};
  expect_refused("mnist gzip asks 2^40", read_idx_pair, pair1,
                 (const char *const[]){"bomb-images-idx3-ubyte.gz", "implausible header",
                                       "1048576 images of 1024 x 1024 = 1099511627792 bytes", NULL});

  /* A sound header (4 images of 2 x 3) followed by 256 MiB it did not announce. */
  idx_images_header(h, 4, 2, 3);
  uint8_t body[16 + 24] = {0};
  memcpy(body, h, 16);
  char *tail = path_of("tail-images-idx3-ubyte.gz");
  write_gz(tail, body, sizeof body, 256);
  const char *pair2[] = {tail, path_of("none")};
  expect_refused("mnist gzip trailing 256 MiB", read_idx_pair, pair2,
                 (const char *const[]){"tail-images-idx3-ubyte.gz", "oversized (trailing bytes)",
                                       "4 images of 2 x 3 = 40 bytes", NULL});

  /* A header within the format's bounds (10^6 images of 28 x 28 = 784 MB) in a file of
   * a few dozen bytes: no deflate stream that short holds that much. */
  idx_images_header(h, 1000000, 28, 28);
  char *small = path_of("small-images-idx3-ubyte.gz");
  write_gz(small, h, sizeof h, 0);
  const char *pair3[] = {small, path_of("none")};
  expect_refused("mnist gzip too small", read_idx_pair, pair3,
                 (const char *const[]){"small-images-idx3-ubyte.gz", "784000016 bytes",
                                       "gzip file can hold", NULL});

  /* Plain: a good images file, then a labels file of 1 GiB whose header says 4. */
  char *images = path_of("ok-images-idx3-ubyte");
  FILE *f = fopen(images, "wb");
  fwrite(body, 1, sizeof body, f);
  fclose(f);
  uint8_t lh[8];
  put_be32(lh, MNIST_LABELS_MAGIC), put_be32(lh + 4, 4);
  char *labels = path_of("big-labels-idx1-ubyte");
  write_sparse(labels, lh, sizeof lh, (off_t)1 << 30);
  const char *pair4[] = {images, labels};
  expect_refused("mnist plain labels 1 GiB", read_idx_pair, pair4,
                 (const char *const[]){"big-labels-idx1-ubyte", "oversized (trailing bytes)",
                                       "file has 1073741824", NULL});
}

/* ---- CIFAR ---------------------------------------------------------------------- */

static int read_cifar(const void *arg, char *err, size_t errlen) {
  dataset_t ds;
  const int rc = dataset_load_cifar_file(arg, 10, 0, &ds, err, errlen);
  dataset_free(&ds);
  return rc;
}

static void test_cifar(void) {
  uint8_t rec[3073] = {0};
  char *big = path_of("data_batch_1.bin");
  write_sparse(big, rec, sizeof rec, (off_t)1 << 30);
  expect_refused("cifar plain 1 GiB", read_cifar, big,
                 (const char *const[]){"data_batch_1.bin", "oversized", "50000 records", NULL});
}

/* ---- checkpoints ---------------------------------------------------------------- */

static model_t *small_model(void) {
  model_t *m = model_create(1, 4, 4);
  model_add_linear(m, "out", -1, 3, 1);
  char err[256];
  if (model_finalize(m, 2, INIT_PYTORCH_DEFAULT, 1)) {
    snprintf(err, sizeof err, "%s", m->err);
    fprintf(stderr, "small_model: %s\n", err);
    exit(2);
  }
  return m;
}

static model_t *g_model;

static int read_ckpt(const void *arg, char *err, size_t errlen) {
  return checkpoint_load(arg, g_model, NULL, NULL, err, errlen);
}

/* The bytes of a file. */
static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(*n);
  if (fread(b, 1, *n, f) != *n) abort();
  fclose(f);
  return b;
}

static void put_file(const char *path, const uint8_t *b, size_t n) {
  FILE *f = fopen(path, "wb");
  fwrite(b, 1, n, f);
  fclose(f);
}

static void test_checkpoint(void) {
  g_model = small_model();
  char err[512] = "";
  char *good = path_of("good.hvckpt");
  CHECK(checkpoint_save(good, g_model, NULL, NULL, err, sizeof err) == 0, "save: %s", err);
  CHECK(checkpoint_load(good, g_model, NULL, NULL, err, sizeof err) == 0, "load: %s", err);
  size_t n;
  uint8_t *b = slurp(good, &n);
  CHECK(n == 128 + (3 * 16 + 3) * sizeof(real_t) + 4, "checkpoint of %zu bytes", n);

  char *trunc = path_of("trunc.hvckpt");
  put_file(trunc, b, n / 2);
  expect_refused("checkpoint truncated", read_ckpt, trunc,
                 (const char *const[]){"trunc.hvckpt", "truncated", NULL});

  char *padded = path_of("padded.hvckpt");
  write_sparse(padded, b, n, (off_t)1 << 30);
  expect_refused("checkpoint padded to 1 GiB", read_ckpt, padded,
                 (const char *const[]){"padded.hvckpt", "oversized: 1073741824 bytes", NULL});

  /* n_params (bytes 16..23) of 2^61: 2^64 bytes of float, an overflow for a reader that
   * sized the body before comparing with the model. */
  uint8_t *huge = malloc(n);
  memcpy(huge, b, n);
  const uint64_t big = (uint64_t)1 << 61;
  memcpy(huge + 16, &big, 8);
  char *claims = path_of("huge.hvckpt");
  put_file(claims, huge, n);
  expect_refused("checkpoint claims 2^61", read_ckpt, claims,
                 (const char *const[]){"huge.hvckpt", "holds 2305843009213693952 parameters", NULL});

  /* has_momentum (bytes 32..35) of 7 with the size of a file without momentum. */
  memcpy(huge, b, n);
  const uint32_t seven = 7;
  memcpy(huge + 32, &seven, 4);
  char *flag = path_of("flag.hvckpt");
  put_file(flag, huge, n);
  expect_refused("checkpoint momentum flag 7", read_ckpt, flag,
                 (const char *const[]){"flag.hvckpt", "momentum flag 7", NULL});
  free(huge);
  free(b);
  model_free(g_model);
}

/* ---- training and test sets agree ---------------------------------------------- */

static void test_pair(void) {
  uint8_t px[4 * 28 * 28] = {0}, lab[4] = {1, 2, 3, 9};
  dataset_t tr = {4, 1, 28, 28, 10, px, lab}, te = {4, 1, 14, 14, 10, px, lab};
  char err[512] = "";
  CHECK(dataset_check_pair(&tr, "a/train", &tr, "a/test", err, sizeof err) == 0, "%s", err);
  CHECK(dataset_check_pair(&tr, "a/train", &te, "a/t10k", err, sizeof err) == -1);
  CHECK_CONTAINS(err, "training set a/train has 1x28x28 images, test set a/t10k has 1x14x14");
  te = tr, te.c = 3;
  CHECK(dataset_check_pair(&tr, "a/train", &te, "a/t10k", err, sizeof err) == -1);
  CHECK_CONTAINS(err, "test set a/t10k has 3x28x28");
  te = tr, te.num_classes = 100;
  CHECK(dataset_check_pair(&tr, "a/train", &te, "a/t10k", err, sizeof err) == -1);
  CHECK_CONTAINS(err, "training set a/train has 10 classes, test set a/t10k has 100");
  /* Labels beyond the training set's classes (a reader that let them through). */
  uint8_t bad[4] = {1, 2, 12, 3};
  te = tr, te.labels = bad;
  CHECK(dataset_check_pair(&tr, "a/train", &te, "a/t10k", err, sizeof err) == -1);
  CHECK_CONTAINS(err, "test set a/t10k: label 12 of image 2 is outside the 10 classes (0..9)");
}

/* ---- the trainer's HV_* settings ---------------------------------------------- */

/* model_finalize under name=value: 0 built, -1 refused (message in err). */
static int build_with(const char *name, const char *value, char *err, size_t errlen) {
  setenv(name, value, 1);
  model_t *m = model_create(1, 8, 8);
  int id = model_add_conv2d(m, "conv", -1, 16, 3, 1, 1, 1);
  model_add_linear(m, "out", id, 3, 1);
  const int rc = model_finalize(m, 2, INIT_PYTORCH_DEFAULT, 1);
  snprintf(err, errlen, "%s", rc ? m->err : "");
  model_free(m);
  unsetenv(name);
  return rc;
}

static void test_settings(void) {
  static const struct {
    const char *name, *value, *want; /* want NULL: accepted */
  } cases[] = {
      {"HV_CONV_WS_KB", "64", NULL},
      {"HV_CONV_WS_KB", "16777216", NULL},
      {"HV_CONV_WS_KB", "12abc", "HV_CONV_WS_KB='12abc' is not valid: expected KiB of convolution "
                                 "workspace, a whole number from 1 to 16777216"},
      {"HV_CONV_WS_KB", "-5", "HV_CONV_WS_KB='-5' is not valid"},
      {"HV_CONV_WS_KB", "0", "HV_CONV_WS_KB='0' is not valid"},
      {"HV_CONV_WS_KB", "16777217", "HV_CONV_WS_KB='16777217' is not valid"},
      {"HV_CONV_WS_KB", "99999999999999999999", "HV_CONV_WS_KB='99999999999999999999' is not valid"},
      {"HV_CONV_WS_KB", " 64", "HV_CONV_WS_KB=' 64' is not valid"},
      {"HV_CONV_WS_KB", "1e3", "HV_CONV_WS_KB='1e3' is not valid"},
      {"HV_LAYOUT", "nchw", NULL},
      {"HV_LAYOUT", "auto", NULL},
      {"HV_LAYOUT", "NCHW ", "HV_LAYOUT='NCHW ' is not valid: expected auto or nchw"},
      {"HV_CONV", "im2col", NULL},
      {"HV_CONV", "cudnn", "HV_CONV='cudnn' is not valid: expected auto, dnnl or im2col"},
      {"HV_CONV_ALGO", "winograd", NULL},
      {"HV_CONV_ALGO", "fast", "HV_CONV_ALGO='fast' is not valid: expected auto, direct or winograd"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char err[512];
    const int rc = build_with(cases[i].name, cases[i].value, err, sizeof err);
    if (!cases[i].want) {
      CHECK(rc == 0, "%s='%s' refused: %s", cases[i].name, cases[i].value, err);
    } else {
      CHECK(rc == -1, "%s='%s' accepted", cases[i].name, cases[i].value);
      CHECK(strstr(err, cases[i].want) != NULL, "%s='%s': '%s' not in: %s", cases[i].name,
            cases[i].value, cases[i].want, err);
    }
  }
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/hv_input_limits_XXXXXX");
  if (!mkdtemp(tmpdir)) return 2;
  test_mnist();
  test_cifar();
  test_checkpoint();
  test_pair();
  test_settings();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  CHECK_RETURN();
}
