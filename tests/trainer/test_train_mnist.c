/* test_train_mnist.c: end to end on the embedded MNIST subset: sampler, prefetching
 * loader, the bagging-study net, SGD with Nesterov momentum and a warm-up cosine
 * schedule, evaluation. One epoch over the 8,000 training images must reach at
 * least 90% accuracy on the 2,000 test images (a broken gradient, update or loader
 * stays near 10%), and the training loss must fall. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "data_cifar.h"
#include "data_mnist.h"
#include "dataloader.h"
#include "evaluate.h"
#include "models.h"
#include "optim.h"
#include "sampler.h"

int main(void) {
  char err[512];
  dataset_t train, test;
  const char *dir = dataset_default_mnist_dir();
  if (dataset_load_mnist(dir, "train", &train, err, sizeof err) ||
      dataset_load_mnist(dir, "test", &test, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  enum { BATCH = 50 };
  model_t *m = model_mnist_net_create(8, 5, 32, BATCH, 7, err, sizeof err);
  sgd_t opt;
  sampler_t s;
  CHECK(m && sgd_init(&opt, m, 0.05, 0.9, 1e-4, 1, err, sizeof err) == 0);
  CHECK(sampler_init(&s, train.n, 0, 1, SAMPLER_TRAIN, 1, 3, err, sizeof err) == 0);
  const batch_transform_t t = {.mean = mnist_mean, .std = mnist_std};
  dataloader_t *dl = dataloader_create(&train, BATCH, 1, &t, 1, err, sizeof err);
  lr_schedule_t sched = {.kind = LR_COSINE, .base_lr = 0.05, .warmup_epochs = 0.1,
                         .total_epochs = 1.0};
  dataloader_start_epoch(dl, s.indices, s.count, 11);
  const int steps = dataloader_num_batches(dl);
  const real_t *x;
  const uint8_t *y;
  double first = 0, last = 0;
  int n, step = 0;
  while ((n = dataloader_next(dl, &x, &y)) > 0) {
    model_forward(m, x, n, 1);
    double loss = model_loss(m, y, (real_t)1.0 / n, NULL) / n;
    if (step < 10) first += loss / 10;
    if (step >= steps - 10) last += loss / 10;
    model_zero_grad(m);
    model_backward(m, NULL, NULL);
    opt.lr = lr_at(&sched, (double)step / steps);
    sgd_step(&opt, m);
    step++;
  }
  CHECK_EQ_INT(step, 160);
  sampler_t e;
  sampler_init(&e, test.n, 0, 1, SAMPLER_EVAL, 0, 0, err, sizeof err);
  eval_result_t r;
  CHECK(model_evaluate(m, &test, e.indices, e.count, &t, &r) == 0);
  const double acc = r.correct / r.count;
  printf("1 epoch: train loss %.3f -> %.3f, test accuracy %.2f%%, test loss %.3f\n", first, last,
         100 * acc, r.loss_sum / r.count);
  CHECK(r.count == 2000);
  CHECK(acc >= 0.90);
  CHECK(last < 0.5 * first);
  sampler_free(&e);
  sampler_free(&s);
  dataloader_free(dl);
  sgd_free(&opt);
  model_free(m);
  dataset_free(&train);
  dataset_free(&test);
  CHECK_RETURN();
}
