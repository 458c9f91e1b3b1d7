/* alloc_trainer.c: the readers-and-trainer program of the out-of-memory sweep (issue
 * 27, tests/faults/alloc_sweep.sh trainer). No MPI, so one run costs milliseconds and
 * every allocation of it can be failed in turn: it writes tiny MNIST (IDX) and CIFAR-10
 * files into DIR, loads them (dataset_load_idx_pair, dataset_load_cifar_file) and the
 * shipped MNIST test split (gzip), slices a data set, builds a small CNN, trains two
 * steps through a sampler and the prefetching data loader with SGD, evaluates, saves a
 * checkpoint and loads it into a second model.
 *
 * Under HV_FAIL_ALLOC=K (libhv_alloc_faults.so) one of those allocations fails; the
 * trainer's functions must then return their error with a message, which this program
 * prints as one line, "alloc_trainer: <step>: <message>", before freeing what it holds
 * and exiting 1. A clean run prints "OK" and exits 0. Usage: alloc_trainer DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "data_cifar.h"
#include "data_mnist.h"
#include "dataloader.h"
#include "evaluate.h"
#include "models.h"
#include "optim.h"
#include "sampler.h"

enum { IMAGES = 12, BATCH = 4, CIFAR_RECORDS = 3 };

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, n, f);
  return (fclose(f) != 0 || w != n) ? -1 : 0;
}

/* Big-endian 32-bit, as IDX headers are. */
static void be32(unsigned char *p, unsigned v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8),
  p[3] = (unsigned char)v;
}

/* The data files; static buffers, so this program's own allocations are none. */
static int make_files(const char *dir, char *images, char *labels, char *cifar, char *ckpt) {
  static unsigned char img[16 + IMAGES * 28 * 28], lab[8 + IMAGES], rec[CIFAR_RECORDS * 3073];
  be32(img, 0x803), be32(img + 4, IMAGES), be32(img + 8, 28), be32(img + 12, 28);
  be32(lab, 0x801), be32(lab + 4, IMAGES);
  for (int i = 0; i < IMAGES; i++) {
    lab[8 + i] = (unsigned char)(i % 10);
    for (int p = 0; p < 28 * 28; p++) img[16 + i * 28 * 28 + p] = (unsigned char)((p * 7 + i * 13) & 255);
  }
  for (int r = 0; r < CIFAR_RECORDS; r++) {
    rec[r * 3073] = (unsigned char)r;
    for (int p = 1; p < 3073; p++) rec[r * 3073 + p] = (unsigned char)(p + r);
  }
  snprintf(images, 512, "%s/alloc-images-idx3-ubyte", dir);
  snprintf(labels, 512, "%s/alloc-labels-idx1-ubyte", dir);
  snprintf(cifar, 512, "%s/alloc_cifar.bin", dir);
  snprintf(ckpt, 512, "%s/alloc.ckpt", dir);
  return write_file(images, img, sizeof img) || write_file(labels, lab, sizeof lab) ||
         write_file(cifar, rec, sizeof rec);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: alloc_trainer DIR\n");
    return 2;
  }
  static char images[512], labels[512], cifar_path[512], ckpt[512];
  if (make_files(argv[1], images, labels, cifar_path, ckpt)) {
    fprintf(stderr, "alloc_trainer: cannot write the data files in %s\n", argv[1]);
    return 2;
  }
  char err[512] = "";
  const char *step = NULL;
  dataset_t mnist = {0}, part = {0}, cifar = {0}, shipped = {0};
  sampler_t sampler = {0};
  int have_sampler = 0;
  model_t *m = NULL, *m2 = NULL;
  sgd_t opt, opt2;
  int have_opt = 0, have_opt2 = 0;
  dataloader_t *dl = NULL;

  if (dataset_load_idx_pair(images, labels, &mnist, err, sizeof err)) { step = "load MNIST"; goto out; }
  if (dataset_load_mnist(dataset_default_mnist_dir(), "test", &shipped, err, sizeof err)) { step = "load shipped MNIST"; goto out; }
  if (dataset_slice(&mnist, 2, 10, &part, err, sizeof err)) { step = "slice"; goto out; }
  if (dataset_load_cifar_file(cifar_path, 10, CIFAR_RECORDS, &cifar, err, sizeof err)) { step = "load CIFAR"; goto out; }
  if (!(m = model_mnist_net_create(2, 3, 8, BATCH, 7, err, sizeof err))) { step = "model"; goto out; }
  if (sgd_init(&opt, m, 0.05, 0.9, 1e-4, 1, err, sizeof err)) { step = "sgd_init"; goto out; }
  have_opt = 1;
  const batch_transform_t t = {.mean = mnist_mean, .std = mnist_std};
  if (!(dl = dataloader_create(&part, BATCH, 1, &t, 1, err, sizeof err))) { step = "dataloader_create"; goto out; }
  if (sampler_init(&sampler, part.n, 0, 1, SAMPLER_TRAIN, 1, 3, err, sizeof err)) { step = "sampler_init"; goto out; }
  have_sampler = 1;
  if (dataloader_start_epoch(dl, sampler.indices, sampler.count, 3)) {
    step = "dataloader_start_epoch";
    snprintf(err, sizeof err, "out of memory"); /* its only failure */
    goto out;
  }
  const real_t *x;
  const uint8_t *y;
  int n;
  while ((n = dataloader_next(dl, &x, &y)) > 0) {
    model_forward(m, x, n, 1);
    model_loss(m, y, (real_t)1.0 / n, NULL);
    model_zero_grad(m);
    model_backward(m, NULL, NULL);
    sgd_step(&opt, m);
  }
  if (n < 0) { step = "dataloader_next"; snprintf(err, sizeof err, "failed"); goto out; }
  eval_result_t r;
  if (model_evaluate(m, &part, sampler.indices, sampler.count, &t, &r)) {
    step = "model_evaluate";
    snprintf(err, sizeof err, "%s", m->err);
    goto out;
  }
  checkpoint_meta_t meta = {.epoch = 1, .step = 2, .lr = 0.05};
  if (checkpoint_save(ckpt, m, &opt, &meta, err, sizeof err)) { step = "checkpoint_save"; goto out; }
  if (!(m2 = model_mnist_net_create(2, 3, 8, BATCH, 9, err, sizeof err))) { step = "second model"; goto out; }
  if (sgd_init(&opt2, m2, 0.05, 0.9, 1e-4, 1, err, sizeof err)) { step = "second sgd_init"; goto out; }
  have_opt2 = 1;
  checkpoint_meta_t back;
  if (checkpoint_load(ckpt, m2, &opt2, &back, err, sizeof err)) { step = "checkpoint_load"; goto out; }
  if (back.step != 2) { step = "checkpoint_load"; snprintf(err, sizeof err, "step %lld, not 2", (long long)back.step); }

out:
  if (step) printf("alloc_trainer: %s: %s\n", step, err);
  else printf("OK\n");
  dataloader_free(dl);
  if (have_opt2) sgd_free(&opt2);
  if (have_opt) sgd_free(&opt);
  model_free(m2);
  model_free(m);
  if (have_sampler) sampler_free(&sampler);
  dataset_free(&shipped);
  dataset_free(&cifar);
  dataset_free(&part);
  dataset_free(&mnist);
  return step ? 1 : 0;
}
