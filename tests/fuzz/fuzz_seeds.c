/* fuzz_seeds.c: writes the generated seed corpus of tests/fuzz (corpus/<target>/seed-*):
 * tiny valid inputs of each reader, made by the real writers where the project has
 * one (checkpoint_save, cifar_report_write_csv) and each checked by loading it back
 * with the real reader first, so that every seed starts the fuzzer inside the format.
 * Regression seeds (corpus/<target>/regress-*) are inputs that once crashed a reader;
 * this program leaves them alone.
 * Usage: fuzz_seeds CORPUS_DIR   (from the source tree: fuzz_seeds tests/fuzz/corpus) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "checkpoint.h"
#include "cifar_report.h"
#include "data_cifar.h"
#include "data_mnist.h"
#include "file_read.h"
#include "fuzz_util.h"

static const char *corpus;

static void die(const char *what, const char *err) {
  fprintf(stderr, "fuzz_seeds: %s: %s\n", what, err);
  exit(1);
}

/* corpus/target/seed-name = prefix (plen bytes) + body. */
static void seed(const char *target, const char *name, const uint8_t *prefix, size_t plen,
                 const uint8_t *body, size_t blen) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", corpus, target);
  mkdir(path, 0777);
  snprintf(path, sizeof path, "%s/%s/seed-%s", corpus, target, name);
  FILE *f = fopen(path, "wb");
  if (!f || (plen && fwrite(prefix, 1, plen, f) != plen) ||
      (blen && fwrite(body, 1, blen, f) != blen) || fclose(f) != 0)
    die(path, "cannot write");
}

/* An argv seed: the arguments joined with NUL bytes, after a first byte when
 * first >= 0 (hvbench's rank count). */
/* A seed of a one-byte prefix (the target's flags) and the file a real writer made. */
static void seed_file(const char *target, const char *name, const uint8_t *prefix, const char *path) {
  uint8_t *data;
  size_t size;
  char err[512];
  if (file_read_all(path, 1 << 20, &data, &size, err, sizeof err)) die(name, err);
  seed(target, name, prefix, 1, data, size);
  free(data);
}

static void seed_args(const char *target, const char *name, int first, const char *const *args) {
  uint8_t buf[1024];
  size_t n = 0;
  if (first >= 0) buf[n++] = (uint8_t)first;
  for (int i = 0; args[i]; i++) {
    const size_t len = strlen(args[i]);
    if (n + len + 1 > sizeof buf) die(name, "too long");
    memcpy(buf + n, args[i], len);
    n += len;
    if (args[i + 1]) buf[n++] = '\0';
  }
  seed(target, name, NULL, 0, buf, n);
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* IDX images file of n images of rows x cols; returns its size. */
static size_t make_images(uint8_t *buf, uint32_t n, uint32_t rows, uint32_t cols) {
  put_be32(buf, MNIST_IMAGES_MAGIC), put_be32(buf + 4, n), put_be32(buf + 8, rows),
      put_be32(buf + 12, cols);
  for (size_t i = 0; i < (size_t)n * rows * cols; i++) buf[16 + i] = (uint8_t)(i * 37);
  return 16 + (size_t)n * rows * cols;
}

static size_t make_labels(uint8_t *buf, uint32_t n) {
  put_be32(buf, MNIST_LABELS_MAGIC), put_be32(buf + 4, n);
  for (uint32_t i = 0; i < n; i++) buf[8 + i] = (uint8_t)(i * 7 % 10);
  return 8 + n;
}

/* flags | images length (2 bytes) | images | labels: fuzz_mnist's input (and
 * fuzz_cifar's Fashion-MNIST payload after its own flags byte). */
static void mnist_seed(const char *target, const char *name, uint8_t flags, int cifar,
                       uint32_t n, uint32_t rows, uint32_t cols) {
  static uint8_t img[16 + 4 * 28 * 28], lab[8 + 4], body[sizeof img + sizeof lab];
  const size_t il = make_images(img, n, rows, cols), ll = make_labels(lab, n);
  const char *dir = fuzz_tmpdir();
  char ip[4200], lp[4200], err[512];
  snprintf(ip, sizeof ip, "%s/i", dir);
  snprintf(lp, sizeof lp, "%s/l", dir);
  fuzz_write_file(ip, img, il, 0);
  fuzz_write_file(lp, lab, ll, 0);
  dataset_t ds;
  if (dataset_load_idx_pair(ip, lp, &ds, err, sizeof err)) die(name, err);
  dataset_free(&ds);
  /* fuzz_cifar's Fashion-MNIST mode is its flag bit 4, then the same layout. */
  const uint8_t prefix[3] = {(uint8_t)(cifar ? 0x10 | flags : flags), (uint8_t)(il >> 8),
                             (uint8_t)il};
  memcpy(body, img, il);
  memcpy(body + il, lab, ll);
  seed(target, name, prefix, 3, body, il + ll);
}

/* Headers that promise more than the file holds (the reader must refuse them before
 * allocating): checked to be refused with the expected words, then written. */
static void limit_seed(const char *name, uint8_t flags, const uint8_t *img, size_t il,
                       const char *want) {
  uint8_t lab[8 + 1];
  const size_t ll = make_labels(lab, 1);
  const char *dir = fuzz_tmpdir();
  char ip[4200], lp[4200], err[512] = "";
  snprintf(ip, sizeof ip, "%s/i", dir);
  snprintf(lp, sizeof lp, "%s/l", dir);
  fuzz_write_file(ip, img, il, flags & 1);
  fuzz_write_file(lp, lab, ll, 0);
  dataset_t ds;
  if (dataset_load_idx_pair(ip, lp, &ds, err, sizeof err) == 0 || !strstr(err, want))
    die(name, err[0] ? err : "accepted");
  static uint8_t body[64 + 16];
  memcpy(body, img, il);
  memcpy(body + il, lab, ll);
  const uint8_t prefix[3] = {flags, (uint8_t)(il >> 8), (uint8_t)il};
  seed("mnist", name, prefix, 3, body, il + ll);
}

static void limit_seeds(void) {
  uint8_t img[16 + 48] = {0};
  /* 2^20 images of 1024 x 1024: 2^40 bytes asked, gzip and plain. */
  put_be32(img, MNIST_IMAGES_MAGIC), put_be32(img + 4, 1u << 20), put_be32(img + 8, 1024),
      put_be32(img + 12, 1024);
  limit_seed("limit-gz-asks-2p40", 0x01, img, sizeof img, "implausible header");
  limit_seed("limit-plain-asks-2p40", 0x00, img, sizeof img, "implausible header");
  /* 10^6 images of 28 x 28 (within the format's bound) from a tiny gzip file. */
  put_be32(img + 4, 1000000), put_be32(img + 8, 28), put_be32(img + 12, 28);
  limit_seed("limit-gz-784mb-in-tiny", 0x01, img, sizeof img, "gzip file can hold");
  /* 1 image of 2 x 3 followed by 42 bytes it did not announce. */
  put_be32(img + 4, 1), put_be32(img + 8, 2), put_be32(img + 12, 3);
  limit_seed("limit-gz-trailing", 0x01, img, sizeof img, "oversized (trailing bytes)");
}

static void mnist_seeds(void) {
  mnist_seed("mnist", "idx-2x28x28", 0x00, 0, 2, 28, 28);
  mnist_seed("mnist", "idx-2x28x28-gz", 0x03, 0, 2, 28, 28);
  mnist_seed("mnist", "dir-test-gz-1x3x3", 0x0f, 0, 1, 3, 3);
  mnist_seed("mnist", "dir-train-4x2x5", 0x04, 0, 4, 2, 5);
  /* A gzip stream as the reader sees it on disk: fuzzed compressed bytes. */
  uint8_t img[16 + 9], lab[9], gz[256];
  const size_t il = make_images(img, 1, 3, 3), ll = make_labels(lab, 1);
  uLongf gl = sizeof gz;
  z_stream zs = {0};
  if (deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) die("gz", "init");
  zs.next_in = img, zs.avail_in = (uInt)il, zs.next_out = gz, zs.avail_out = (uInt)gl;
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) die("gz", "deflate");
  gl = zs.total_out;
  deflateEnd(&zs);
  uint8_t body[sizeof gz + sizeof lab];
  memcpy(body, gz, gl);
  memcpy(body + gl, lab, ll);
  const uint8_t prefix[3] = {0x00, (uint8_t)(gl >> 8), (uint8_t)gl};
  seed("mnist", "raw-gzip-1x3x3", prefix, 3, body, gl + ll);
  limit_seeds();
}

static void cifar_seed(const char *name, uint8_t flags, int n) {
  const int classes = flags & 1 ? 100 : 10;
  const size_t rec = classes == 10 ? 3073 : 3074;
  uint8_t *buf = malloc(rec * (size_t)n);
  if (!buf) die(name, "out of memory");
  for (int i = 0; i < n; i++) {
    uint8_t *r = buf + rec * (size_t)i;
    const int label = (i * 7 + 3) % classes;
    size_t k = 0;
    if (classes == 100) r[k++] = (uint8_t)(label / 5);
    r[k++] = (uint8_t)label;
    for (; k < rec; k++) r[k] = (uint8_t)(k * 13 + (size_t)i);
  }
  char path[4200], err[512];
  snprintf(path, sizeof path, "%s/c", fuzz_tmpdir());
  fuzz_write_file(path, buf, rec * (size_t)n, 0);
  dataset_t ds;
  if (dataset_load_cifar_file(path, classes, n, &ds, err, sizeof err)) die(name, err);
  dataset_free(&ds);
  seed("cifar", name, &flags, 1, buf, rec * (size_t)n);
  free(buf);
}

static void cifar_seeds(void) {
  cifar_seed("cifar10-file-2", 0x00, 2);
  cifar_seed("cifar100-file-expect2", 0x03, 2);
  cifar_seed("cifar10-dir-1", 0x04, 1);
  cifar_seed("cifar100-dir-sub-gz-1", 0x0f, 1);
  mnist_seed("cifar", "fashion-2x28x28", 0x00, 1, 2, 28, 28);
  mnist_seed("cifar", "fashion-gz-1x28x28", 0x08, 1, 1, 28, 28);
}

static void checkpoint_seeds(void) {
  model_t *m = fuzz_ckpt_model(), *back = fuzz_ckpt_model();
  sgd_t opt, opt_back;
  char err[512], path[4200];
  if (sgd_init(&opt, m, 0.1, 0.9, 5e-4, 0, err, sizeof err) ||
      sgd_init(&opt_back, back, 0.1, 0.9, 5e-4, 0, err, sizeof err))
    die("sgd_init", err);
  /* Momentum as after a first step, so the momentum section is in the file. */
  opt.has_buf = 1;
  for (size_t i = 0; i < opt.n; i++) opt.momentum_buf[i] = (real_t)0.001 * (real_t)i;
  checkpoint_meta_t meta = {.epoch = 2, .step = 14, .lr = 0.05}, meta_back;
  rng_seed(&meta.rng, 99);
  snprintf(path, sizeof path, "%s/model.ckpt", fuzz_tmpdir());
  static const struct {
    const char *name;
    uint8_t flags;
    int momentum;
  } seeds[] = {{"momentum-opt-meta", 0x06, 1}, {"plain-fixcrc", 0x01, 0},
               {"momentum-all-gz", 0x0f, 1}, {"plain-opt", 0x02, 0}};
  for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
    if (checkpoint_save(path, m, seeds[s].momentum ? &opt : NULL, &meta, err, sizeof err) ||
        checkpoint_load(path, back, &opt_back, &meta_back, err, sizeof err))
      die(seeds[s].name, err);
    seed_file("checkpoint", seeds[s].name, &seeds[s].flags, path);
  }
  /* Headers the reader must refuse before allocating the body: 2^61 parameters
   * (bytes 16..23), and a file padded past the size its header implies. */
  if (checkpoint_save(path, m, NULL, &meta, err, sizeof err)) die("limit", err);
  FILE *f = fopen(path, "r+b");
  const uint64_t huge = (uint64_t)1 << 61;
  if (!f || fseek(f, 16, SEEK_SET) || fwrite(&huge, 8, 1, f) != 1 || fclose(f))
    die("limit-huge-params", "cannot patch");
  if (checkpoint_load(path, back, NULL, NULL, err, sizeof err) == 0 ||
      !strstr(err, "holds 2305843009213693952 parameters"))
    die("limit-huge-params", err);
  const uint8_t fixcrc = 0x01;
  seed_file("checkpoint", "limit-huge-params", &fixcrc, path);
  if (checkpoint_save(path, m, NULL, &meta, err, sizeof err)) die("limit", err);
  f = fopen(path, "ab");
  static const uint8_t pad[64];
  if (!f || fwrite(pad, 1, sizeof pad, f) != sizeof pad || fclose(f)) die("limit-padded", "cannot pad");
  if (checkpoint_load(path, back, NULL, NULL, err, sizeof err) == 0 || !strstr(err, "oversized"))
    die("limit-padded", err);
  const uint8_t plain = 0x00;
  seed_file("checkpoint", "limit-padded", &plain, path);
  sgd_free(&opt);
  sgd_free(&opt_back);
  model_free(m);
  model_free(back);
}

static void csv_seeds(void) {
  cifar_epoch_t e[3] = {
      {1, 2.1, 0.25, 1.9, 0.31, 12.5, 640.0, 0.01, 16, 8000, 24.0},
      {2, 1.4, 0.52, 1.3, 0.55, 12.1, 661.2, 0.01, 32, 8000, 23.5},
      {3, 0.9, 0.71, 1.0, 0.66, 11.9, 672.3, 0.005, 48, 8000, 23.1},
  };
  char path[4200], err[512];
  snprintf(path, sizeof path, "%s/results.csv", fuzz_tmpdir());
  static const struct {
    const char *name;
    uint8_t cap;
    int n;
  } seeds[] = {{"two-epochs-cap4", 4, 2}, {"three-epochs-cap1", 1, 3}, {"header-only", 8, 0}};
  for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
    cifar_epoch_t back[8];
    if (cifar_report_write_csv(path, e, seeds[s].n, err, sizeof err) ||
        cifar_report_read_csv(path, back, seeds[s].cap, err, sizeof err) < 0)
      die(seeds[s].name, err);
    seed_file("cifar_csv", seeds[s].name, &seeds[s].cap, path);
  }
}

static void args_seeds(void) {
  static const char *const cifar1[] = {"--epochs", "2", "--batch-size", "64", "--dataset",
                                       "cifar10", "--data-dir", "data", "--model", "wrn-16-4",
                                       "--lr-schedule", "cosine", "--warmup-epochs", "1", NULL};
  static const char *const cifar2[] = {"--checkpoint-dir", "ck", "--resume", "--nesterov",
                                       "--momentum", "0.9", "--compression", "fp16",
                                       "--max-steps", "10", "--results", "r", "--no-plots",
                                       "--train-size", "100", "--micro-batches", "2", NULL};
  static const char *const cifar3[] = {"--seed", "7", "--base-lr", "0.1", "--lr-scaling", "none",
                                       "--target-accuracy", "0.5", "--patience", "3",
                                       "--dropout", "0.3", "--amp", "--quiet", "--no-augment",
                                       "--no-prefetch", "--weight-decay", "1e-4",
                                       "--test-size", "50", NULL};
  seed_args("cifar_args", "typical", -1, cifar1);
  seed_args("cifar_args", "resume", -1, cifar2);
  seed_args("cifar_args", "flags", -1, cifar3);
  static const char *const svm1[] = {"--train-size", "600", "--test-size", "300", "--folds",
                                     "5", "--log-c-min", "-1", "--log-c-max", "3", "4", NULL};
  static const char *const svm2[] = {"--dataset", "fashion-mnist", "--multiclass", "ovo",
                                     "--device", "cpu", "--seed", "3", "--eps", "1e-4",
                                     "--mem-mb", "64", "--no-refit", "--no-plots", "--verbose",
                                     "--log-gamma-min", "-4", "--log-gamma-max", "-3",
                                     "--results", "out", "--data-dir", "d", "2", NULL};
  seed_args("svm_args", "grid", -1, svm1);
  seed_args("svm_args", "all-flags", -1, svm2);
  static const char *const nn1[] = {"--train-size", "500", "--test-size", "100",
                                    "--max-epochs", "2", "--batch", "32", "--folds", "3",
                                    "4", "2", NULL};
  static const char *const nn2[] = {"--dataset", "fashion-mnist", "--seed", "5", "--conv-min",
                                    "2", "--conv-max", "8", "--kernel-min", "3",
                                    "--kernel-max", "6", "--hidden-min", "10", "--hidden-max",
                                    "50", "--log-lr-min", "-3", "--log-lr-max", "-2",
                                    "--log-momentum-min", "-1", "--log-momentum-max", "0",
                                    "--tolerance", "0.5", "--poll-ms", "10", "--plot-first",
                                    "5", "--no-plots", "--write-plan", "--verbose",
                                    "--device", "cpu", "--ood-image", "x.pgm", "--results",
                                    "r", "--data-dir", "d", "3", "1", NULL};
  seed_args("nn_args", "small", -1, nn1);
  seed_args("nn_args", "all-flags", -1, nn2);
  /* hvbench: the first byte is the rank count - 1. */
  static const char *const b1[] = {"allreduce", "-b", "8", "-e", "128M", "-f", "2", "-n",
                                   "10", "-w", "2", "-c", "1", "-d", "all", "-o", "all",
                                   "--algo", "all", "--tensors", "4", "--json", "o.json", NULL};
  static const char *const b2[] = {"broadcast", "--minbytes=1K", "--maxbytes=1MiB",
                                   "--stepbytes=4KB", "--root=2", "--datatype=bfloat16",
                                   "--no-peer", "--csv", "o.csv", "--plot", "p.png",
                                   "--min-busbw", "0.5", NULL};
  static const char *const b3[] = {"reducescatter", "-b1M", "-e1G", "-dfloat", "-oavg",
                                   "--compression", "none", "--no-engine", "--algo", "mpi",
                                   "--device", "cpu", "--engine", "--iters=3", NULL};
  seed_args("bench_options", "allreduce-all", 1, b1);
  seed_args("bench_options", "broadcast", 3, b2);
  seed_args("bench_options", "reducescatter-short", 0, b3);
}

static void config_seeds(void) {
  static const char *const c1 =
      "HV_FUSION_THRESHOLD=64M\nHV_CYCLE_TIME=0.5\nHV_SMALL_ALLREDUCE_BYTES=64K\n"
      "HV_RING_CHUNK_BYTES=1M\nHV_CACHE_CAPACITY=1024\nHV_ALLREDUCE_ALGO=ring\n";
  static const char *const c2 =
      "HV_STALL_CHECK_TIME=60\nHV_STALL_SHUTDOWN_TIME=0\nHV_SHM_SLOT_BYTES=4M\nHV_TIMEOUT=30\n"
      "HV_HIERARCHICAL_ALLREDUCE=auto\nHV_COMPRESSION=fp16\nHV_TIMELINE=/tmp/t.json\n"
      "HV_LOG_LEVEL=debug\n";
  static const char *const c3 = "HV_FUSION_THRESHOLD=1.5GB\nHV_ALLREDUCE_ALGO=SHM\n"
                                "HV_HIERARCHICAL_ALLREDUCE=off\nHV_COMPRESSION=bf16\n";
  seed("config", "engine", NULL, 0, (const uint8_t *)c1, strlen(c1));
  seed("config", "timeouts", NULL, 0, (const uint8_t *)c2, strlen(c2));
  seed("config", "forms", NULL, 0, (const uint8_t *)c3, strlen(c3));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fuzz_seeds CORPUS_DIR (e.g. tests/fuzz/corpus)\n");
    return 2;
  }
  corpus = argv[1];
  mkdir(corpus, 0777);
  mnist_seeds();
  cifar_seeds();
  checkpoint_seeds();
  csv_seeds();
  args_seeds();
  config_seeds();
  return 0;
}
