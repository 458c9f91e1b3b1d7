/* test_checkpoint.c: checkpoint round trip is bit-exact (parameters, buffers,
 * momentum, epoch, step, lr, RNG states); damaged files (flipped byte, truncation,
 * wrong magic, other architecture) are rejected with the file named; and a training
 * run killed with SIGKILL after step 5 and resumed from its checkpoint produces the
 * same per-step losses and final parameters, bit for bit, as an uninterrupted run. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "data_cifar.h"
#include "checkpoint.h"
#include "data_mnist.h"
#include "dataloader.h"
#include "evaluate.h"
#include "optim.h"
#include "sampler.h"

enum { BATCH = 16, STEPS = 10, IMAGES = 64 };

static char dir[256], path[512];
static mode_t test_umask;

/* Entries of folder d other than . and .. */
static int count_entries(const char *d) {
  DIR *h = opendir(d);
  int n = 0;
  for (struct dirent *e; h && (e = readdir(h));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (h) closedir(h);
  return n;
}
static const char *self_exe;
static dataset_t data;

static model_t *build(uint64_t seed) {
  model_t *m = model_create(1, 28, 28);
  int id = model_add_conv2d(m, "conv", -1, 4, 5, 2, 0, 1);
  id = model_add_batchnorm2d(m, "bn", id);
  id = model_add_relu(m, "relu", id);
  id = model_add_dropout(m, "drop", id, (real_t)0.2);
  id = model_add_linear(m, "hidden", id, 16, 1);
  id = model_add_relu(m, "relu2", id);
  model_add_linear(m, "out", id, 10, 1);
  if (model_finalize(m, BATCH, INIT_PYTORCH_DEFAULT, seed)) {
    fprintf(stderr, "build: %s\n", m->err);
    exit(2);
  }
  return m;
}

/* Steps [from, to) of a run; checkpoints after every step when save, and dies by
 * SIGKILL right after the checkpoint of step kill_after (when >= 0). */
static void train(model_t *m, sgd_t *opt, checkpoint_meta_t *meta, int from, int to,
                  double *losses, int save, int kill_after) {
  const batch_transform_t t = {.mean = mnist_mean, .std = mnist_std};
  char err[256];
  sampler_t s;
  sampler_init(&s, IMAGES, 0, 1, SAMPLER_TRAIN, 1, 99, err, sizeof err);
  dataloader_t *dl = dataloader_create(&data, BATCH, 1, &t, 1, err, sizeof err);
  const int per_epoch = IMAGES / BATCH;
  int epoch = -1;
  for (int step = from; step < to; step++) {
    if (step / per_epoch != epoch) {
      epoch = step / per_epoch;
      sampler_set_epoch(&s, epoch);
      dataloader_start_epoch(dl, s.indices, s.count, 1000 + (uint64_t)epoch);
      dataloader_seek(dl, step % per_epoch);
    }
    const real_t *x;
    const uint8_t *y;
    int n = dataloader_next(dl, &x, &y);
    model_forward(m, x, n, 1);
    losses[step] = model_loss(m, y, (real_t)1.0 / n, NULL) / n;
    model_zero_grad(m);
    model_backward(m, NULL, NULL);
    opt->lr = 0.05 * (1 + step % 3);
    sgd_step(opt, m);
    meta->step = step + 1;
    meta->epoch = (step + 1) / per_epoch;
    meta->lr = opt->lr;
    if (save && checkpoint_save(path, m, opt, meta, err, sizeof err)) {
      fprintf(stderr, "save: %s\n", err);
      exit(3);
    }
    if (step == kill_after) raise(SIGKILL);
  }
  dataloader_free(dl);
  sampler_free(&s);
}

static void test_round_trip(void) {
  char err[512];
  model_t *a = build(1), *b = build(2);
  sgd_t oa, ob;
  sgd_init(&oa, a, 0.1, 0.9, 5e-4, 1, err, sizeof err);
  sgd_init(&ob, b, 0.1, 0.9, 5e-4, 1, err, sizeof err);
  checkpoint_meta_t ma = {.epoch = 3, .step = 77, .lr = 0.0123}, mb = {0};
  rng_seed(&ma.rng, 31337);
  double losses[STEPS];
  train(a, &oa, &ma, 0, 2, losses, 0, -1);
  CHECK(checkpoint_save(path, a, &oa, &ma, err, sizeof err) == 0);
  CHECK(checkpoint_load(path, b, &ob, &mb, err, sizeof err) == 0);
  CHECK(memcmp(a->params, b->params, sizeof(real_t) * a->n_params) == 0);
  CHECK(memcmp(a->buffers, b->buffers, sizeof(real_t) * a->n_buffers) == 0);
  CHECK(memcmp(oa.momentum_buf, ob.momentum_buf, sizeof(real_t) * a->n_params) == 0);
  CHECK(memcmp(&a->rng, &b->rng, sizeof a->rng) == 0);
  CHECK(memcmp(&ma, &mb, sizeof ma) == 0);
  CHECK(ob.has_buf == 1 && ob.steps == ma.step);
  /* No temporary file is left behind, and the checkpoint has the umask's mode. */
  CHECK(count_entries(dir) == 1);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~test_umask));

  /* Damage: one flipped byte in the parameters. */
  FILE *f = fopen(path, "r+b");
  fseek(f, 300, SEEK_SET);
  int c = fgetc(f);
  fseek(f, 300, SEEK_SET);
  fputc(c ^ 0x10, f);
  fclose(f);
  CHECK(checkpoint_load(path, b, &ob, &mb, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "checksum");
  CHECK_CONTAINS(err, path);
  checkpoint_save(path, a, &oa, &ma, err, sizeof err);
  CHECK(truncate(path, 1000) == 0);
  CHECK(checkpoint_load(path, b, &ob, &mb, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "truncated");
  f = fopen(path, "r+b");
  fputc('X', f);
  fclose(f);
  CHECK(checkpoint_load(path, b, &ob, &mb, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "wrong magic");
  /* Another architecture. */
  checkpoint_save(path, a, &oa, &ma, err, sizeof err);
  model_t *other = model_create(1, 28, 28);
  model_add_linear(other, "fc", -1, 10, 1);
  model_finalize(other, 1, INIT_PYTORCH_DEFAULT, 1);
  CHECK(checkpoint_load(path, other, NULL, NULL, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "another architecture");
  model_free(other);
  CHECK(checkpoint_load("/nonexistent/ckpt", b, NULL, NULL, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "/nonexistent/ckpt");
  sgd_free(&oa);
  sgd_free(&ob);
  model_free(a);
  model_free(b);
}

static void test_kill_resume(void) {
  char err[512];
  double ref[STEPS], got[STEPS];
  checkpoint_meta_t meta = {0};
  model_t *m = build(5);
  sgd_t opt;
  sgd_init(&opt, m, 0.05, 0.9, 1e-4, 1, err, sizeof err);
  train(m, &opt, &meta, 0, STEPS, ref, 0, -1);
  real_t *final = malloc(sizeof(real_t) * m->n_params);
  memcpy(final, m->params, sizeof(real_t) * m->n_params);
  sgd_free(&opt);
  model_free(m);

  unlink(path);
  fflush(NULL);
  /* The interrupted run is a fresh process (fork + exec): a forked child of a process
   * whose OpenMP pool (oneDNN) is running would hang in libgomp. */
  pid_t pid = fork();
  if (pid == 0) {
    execl(self_exe, self_exe, "--child", dir, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  m = build(12345); /* different init: everything must come from the checkpoint */
  sgd_init(&opt, m, 0.05, 0.9, 1e-4, 1, err, sizeof err);
  CHECK(checkpoint_load(path, m, &opt, &meta, err, sizeof err) == 0);
  CHECK_EQ_INT(meta.step, 5);
  train(m, &opt, &meta, (int)meta.step, STEPS, got, 0, -1);
  for (int s = 5; s < STEPS; s++) {
    if (got[s] != ref[s]) fprintf(stderr, "step %d: resumed %.17g vs %.17g\n", s, got[s], ref[s]);
    CHECK(got[s] == ref[s]);
  }
  CHECK(memcmp(final, m->params, sizeof(real_t) * m->n_params) == 0);
  /* The losses moved: the run really trained. */
  CHECK(ref[STEPS - 1] != ref[0]);
  /* Evaluation: running statistics, no dropout, every image once; equals a
   * hand-rolled loop over the same 4 batches. */
  {
    int idx[IMAGES];
    for (int i = 0; i < IMAGES; i++) idx[i] = IMAGES - 1 - i;
    const batch_transform_t t = {.mean = mnist_mean, .std = mnist_std, .flip = 1};
    eval_result_t r;
    CHECK(model_evaluate(m, &data, idx, IMAGES - 3, &t, &r) == 0);
    CHECK(r.count == IMAGES - 3 && r.correct >= 0 && r.correct <= r.count);
    real_t *x = malloc(sizeof(real_t) * BATCH * 784);
    uint8_t y[BATCH];
    double loss = 0;
    int right = 0;
    const batch_transform_t plain = {.mean = mnist_mean, .std = mnist_std};
    for (int i = 0; i < IMAGES - 3; i += BATCH) {
      int n = IMAGES - 3 - i < BATCH ? IMAGES - 3 - i : BATCH, c;
      batch_fill(&data, idx + i, n, &plain, NULL, x, y);
      model_forward(m, x, n, 0);
      loss += model_loss(m, y, 0, &c);
      right += c;
    }
    CHECK(r.loss_sum == loss && r.correct == right);
    free(x);
  }
  free(final);
  sgd_free(&opt);
  model_free(m);
}

/* The child: trains with a checkpoint after every step and SIGKILLs itself after
 * step 4, so the checkpoint holds 5 steps. */
static int child_main(void) {
  char err[256];
  double losses[STEPS];
  model_t *cm = build(5);
  sgd_t co;
  checkpoint_meta_t cmeta = {0};
  sgd_init(&co, cm, 0.05, 0.9, 1e-4, 1, err, sizeof err);
  train(cm, &co, &cmeta, 0, STEPS, losses, 1, 4);
  return 0; /* not reached */
}

int main(int argc, char **argv) {
  char err[512];
  self_exe = argv[0];
  if (argc == 3 && strcmp(argv[1], "--child") == 0) {
    snprintf(dir, sizeof dir, "%s", argv[2]);
  } else {
    snprintf(dir, sizeof dir, "/tmp/hv_test_ckpt_XXXXXX");
    if (!mkdtemp(dir)) return 2;
  }
  snprintf(path, sizeof path, "%s/model.ckpt", dir);
  test_umask = umask(022);
  umask(test_umask);
  dataset_t full;
  if (dataset_load_mnist(dataset_default_mnist_dir(), "train", &full, err, sizeof err) ||
      dataset_slice(&full, 0, IMAGES, &data, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  dataset_free(&full);
  if (argc == 3) return child_main();
  test_round_trip();
  test_kill_resume();
  unlink(path);
  rmdir(dir);
  dataset_free(&data);
  CHECK_RETURN();
}
