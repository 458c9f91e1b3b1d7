/* cifar_train.c: the training step, the epoch loop and validation of cifar_ddp (see
 * cifar_train.h).
 *
 * One step on each rank: the local batch (global / ranks images of this rank's
 * sampler shard) is split into --micro-batches K parts; each part runs forward, loss
 * with gradient scale 1/local_batch, and backward, accumulating; the last backward
 * hands the gradient buckets to hv as they complete (DDP), then SGD steps. Micro-batch
 * u takes the local batch's positions u, u+K, u+2K...: the same striding as the
 * sampler's rank shards, so R ranks x K micro-batches see exactly the batches (and
 * batch-norm groups) of R*K ranks x 1 - the property the 1-rank-vs-4-ranks test uses.
 * The last incomplete global batch of an epoch is dropped (drop_last), so every step
 * has the same global batch and learning-rate scaling. */
#include "cifar_train.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "clock.h"
#include "model_gpu.h"
#include "models.h"

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cifar_train_agree(hv_comm_t *comm, int ok, int *first_bad) {
  int size, rank;
  hv_comm_size(comm, &size);
  hv_comm_rank(comm, &rank);
  int32_t v = ok ? size : rank, r;
  if (hv_allreduce(comm, "cifar.agree", &v, &r, 1, HV_INT32, HV_MIN, NULL) != HV_SUCCESS)
    return -1;
  if (first_bad) *first_bad = r;
  return r == size;
}

int cifar_train_init(cifar_train_t *t, const cifar_args_t *a, hv_comm_t *comm,
                     const dataset_t *train, const dataset_t *test, const float *mean,
                     const float *std, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  t->args = a;
  t->comm = comm;
  hv_comm_rank(comm, &t->rank);
  hv_comm_size(comm, &t->size);
  t->train_set = train;
  t->test_set = test;
  t->local_batch = a->batch_size / t->size;
  if (t->local_batch < a->micro_batches) {
    snprintf(err, errlen, "--micro-batches %d is more than the %d images per rank and step",
             a->micro_batches, t->local_batch);
    return -1;
  }
  t->micro_max = (t->local_batch + a->micro_batches - 1) / a->micro_batches;
  /* Every rank computes the same sizes, so every rank stops here with the same line. */
  if (a->sync_bn && t->local_batch / a->micro_batches < 2) {
    snprintf(err, errlen,
             "--sync-bn needs at least 2 images per rank and forward pass: --batch-size %d over %d ranks%s "
             "gives %d (SyncBatchNorm with a batch of 1 per rank); use --batch-size >= %d",
             a->batch_size, t->size, a->micro_batches > 1 ? " in micro-batches" : "",
             t->local_batch / a->micro_batches, 2 * t->size * a->micro_batches);
    return -1;
  }
  /* Same seed on every rank: identical initial parameters even before DDP's broadcast. */
  t->model = model_wrn_create(a->depth, a->widen, train->num_classes, a->dropout, train->c,
                              train->h, train->w, t->micro_max, a->seed, err, errlen);
  if (!t->model) return -1;
  if (!strcmp(a->device, "cuda")) {
    if (model_to_gpu(t->model)) {
      snprintf(err, errlen, "%s", t->model->err);
      return -1;
    }
    t->amp = a->amp;
    grad_scaler_init(&t->scaler);
    if (t->amp && model_gpu_enable_amp(t->model)) {
      snprintf(err, errlen, "%s", t->model->err);
      return -1;
    }
  }
  if (device_batch_init(&t->batch, t->model, t->local_batch)) {
    snprintf(err, errlen, "out of device memory for a batch of %d images", t->local_batch);
    return -1;
  }
  if (sgd_init(&t->opt, t->model, a->base_lr, a->momentum, a->weight_decay, a->nesterov, err,
               errlen))
    return -1;
  lr_schedule_t *s = &t->sched;
  lr_kind_parse(a->lr_schedule, &s->kind);
  s->base_lr = a->base_lr;
  /* --base-lr is for one worker of local_batch images: linear scaling multiplies it by
   * the number of ranks, as the PyTorch example does. */
  s->base_batch = a->lr_linear_scaling ? t->local_batch : 0;
  s->global_batch = t->local_batch * t->size;
  s->warmup_epochs = a->warmup_epochs;
  s->total_epochs = a->epochs;
  s->step_gamma = 0.1;
  s->n_milestones = 2;
  s->milestones[0] = 0.5 * a->epochs;
  s->milestones[1] = 0.75 * a->epochs;

  if (sampler_init(&t->train_sampler, train->n, t->rank, t->size, a->uneven ? SAMPLER_TRAIN_UNEVEN : SAMPLER_TRAIN,
                   1, a->seed, err, errlen) ||
      sampler_init(&t->test_sampler, test->n, t->rank, t->size, SAMPLER_EVAL, 0, a->seed, err,
                   errlen))
    return -1;
  /* --uneven: every image once, the last batch partial; the schedule runs on the
   * longest shard's steps, the same on every rank. */
  t->my_steps = a->uneven ? (t->train_sampler.count + t->local_batch - 1) / t->local_batch
                          : t->train_sampler.count / t->local_batch;
  t->steps_per_epoch = t->my_steps;
  if (a->uneven) {
    int32_t most[2] = {t->my_steps, -t->my_steps};
    if (hv_allreduce(comm, "cifar.uneven.steps", most, most, 2, HV_INT32, HV_MAX, NULL) != HV_SUCCESS) {
      snprintf(err, errlen, "%s", hv_comm_last_error(comm));
      return -1;
    }
    if (-most[1] < 1) { /* the same line on every rank */
      snprintf(err, errlen, "--uneven: %d training images leave some of the %d ranks without one; use fewer ranks",
               train->n, t->size);
      return -1;
    }
    t->steps_per_epoch = most[0];
  }
  if (t->my_steps < 1 && !a->uneven) {
    snprintf(err, errlen,
             "--batch-size %d is larger than the training set (%d images): not one step per "
             "epoch; lower --batch-size",
             a->batch_size, train->n);
    return -1;
  }
  t->train_tf = (batch_transform_t){.mean = mean, .std = std};
  if (a->augment) {
    t->train_tf.crop_pad = 4;
    t->train_tf.flip = 1;
  }
  t->test_tf = (batch_transform_t){.mean = mean, .std = std};
  t->order = malloc(sizeof(int) * ((size_t)t->local_batch * t->my_steps + 1));
  if (!t->order) {
    snprintf(err, errlen, "out of memory for the epoch's index order");
    return -1;
  }
  t->train_dl = dataloader_create(train, t->local_batch, !a->uneven, &t->train_tf, a->prefetch, err,
                                  errlen);
  if (!t->train_dl) return -1;
  t->test_dl = dataloader_create(test, t->micro_max, 0, &t->test_tf, a->prefetch, err, errlen);
  if (!t->test_dl) return -1;
  return 0;
}

int cifar_train_start_ddp(cifar_train_t *t, char *err, size_t errlen) {
  t->ddp = ddp_create(t->comm, t->model, NULL, err, errlen);
  if (!t->ddp) return -1;
  ddp_set_sync_bn(t->ddp, t->args->sync_bn);
  const ddp_hook_spec_t *h = &t->args->hook;
  /* On a GPU model: the allreduce, PowerSGD (cuBLAS, cuSOLVER) and int8 (device
   * kernels); fp16/bf16 run on host memory only (on the GPU: --compression). */
  if ((h->kind == DDP_HOOK_FP16 || h->kind == DDP_HOOK_BF16) && t->model->dev->kind != DEVICE_CPU) {
    snprintf(err, errlen, "--comm-hook %s runs on CPU models only (on the GPU: --compression fp16 for 16-bit "
             "buckets; allreduce, powersgd and int8 hooks)", t->args->comm_hook);
    return -1;
  }
  ddp_comm_hook_t hook;
  if (ddp_hook_make(h, &hook, err, errlen)) return -1;
  if (ddp_register_comm_hook(t->ddp, &hook)) {
    snprintf(err, errlen, "%s", ddp_error(t->ddp));
    return -1;
  }
  /* Optimiser state and step count of rank 0 (non-zero after a resume). */
  int64_t st[2] = {t->opt.has_buf, t->step};
  hv_result_t r = hv_broadcast(t->comm, "cifar.resume.state", st, 2, HV_INT64, 0);
  if (r == HV_SUCCESS && st[0]) {
    if (ddp_broadcast_array(t->ddp, "cifar.resume.momentum", t->opt.momentum_buf, t->opt.n)) {
      snprintf(err, errlen, "broadcast of the optimiser momentum failed: %s", ddp_error(t->ddp));
      return -1;
    }
  }
  if (r != HV_SUCCESS) {
    snprintf(err, errlen, "broadcast of the optimiser state failed: %s (%s)", hv_strerror(r),
             hv_comm_last_error(t->comm));
    return -1;
  }
  t->opt.has_buf = (int)st[0];
  t->step = st[1];
  t->opt.steps = st[1];
  ddp_set_step(t->ddp, t->step); /* a hook's warm-up counts from the run's first step */
  return 0;
}

void cifar_train_free(cifar_train_t *t) {
  if (t->ddp) ddp_free(t->ddp);
  if (t->train_dl) dataloader_free(t->train_dl);
  if (t->test_dl) dataloader_free(t->test_dl);
  sampler_free(&t->train_sampler);
  sampler_free(&t->test_sampler);
  if (t->model) sgd_free(&t->opt);
  device_batch_free(&t->batch);
  model_free(t->model);
  free(t->order);
  memset(t, 0, sizeof *t);
}

/* --uneven, after this rank's last step: waits for the others (ddp_join: the ranks
 * still running average without it), then takes the model, momentum and step count of
 * the rank that ran longest, and the epoch's step count on the schedule. */
static int cifar_train_join(cifar_train_t *t, int *taken, char *err, size_t errlen) {
  int last = 0;
  if (ddp_join(t->ddp, &last) ||
      (t->opt.has_buf && ddp_broadcast_array_from(t->ddp, "cifar.join.momentum", t->opt.momentum_buf, t->opt.n, last))) {
    snprintf(err, errlen, "%s", ddp_error(t->ddp));
    return -1;
  }
  int64_t most[2] = {t->step, *taken};
  if (hv_allreduce(t->comm, "cifar.join.steps", most, most, 2, HV_INT64, HV_MAX, NULL) != HV_SUCCESS) {
    snprintf(err, errlen, "%s", hv_comm_last_error(t->comm));
    return -1;
  }
  t->step = most[0];
  t->opt.steps = most[0];
  *taken = (int)most[1];
  return 0;
}

/* Micro-batch-major order within each local batch (see the file comment). */
static void order_epoch(cifar_train_t *t) {
  const int L = t->local_batch, K = t->args->micro_batches;
  const int *src = t->train_sampler.indices, count = t->train_sampler.count;
  for (int b = 0; b < t->my_steps; b++) {
    int *dst = t->order + (size_t)b * L;
    for (int u = 0, o = 0; u < K; u++)
      for (int j = u; j < L && b * L + j < count; j += K) dst[o++] = src[(size_t)b * L + j];
  }
}

/* Test hook: HV_CIFAR_CRASH_AT_STEP=k kills rank 0 with SIGKILL right after step k,
 * as a node failure would, so tests can check resume-after-kill without racing a
 * timer; HV_CIFAR_CRASH_RANK picks another rank. Only in the first attempt of a job
 * that hvrun --restarts relaunches (HV_RESTART 0 or unset). Read once. */
static long long crash_step(int *rank) {
  static long long v = -2;
  static int who = 0;
  if (v == -2) {
    /* main's check_env refused a bad value before training: parsed the same way. */
    const char *s = getenv("HV_CIFAR_CRASH_AT_STEP"), *r = getenv("HV_CIFAR_CRASH_RANK"),
               *attempt = getenv("HV_RESTART");
    long long victim = 0;
    if (!s || !*s || parse_int("HV_CIFAR_CRASH_AT_STEP", s, 0, (long long)1 << 40, &v, NULL, 0) ||
        (attempt && strcmp(attempt, "0") != 0))
      v = -1;
    if (r && *r && parse_int("HV_CIFAR_CRASH_RANK", r, 0, 1 << 24, &victim, NULL, 0)) v = -1;
    who = (int)victim;
  }
  *rank = who;
  return v;
}

int cifar_train_epoch(cifar_train_t *t, int epoch, int first, long long max_steps,
                      cifar_progress_t *progress, cifar_epoch_t *e, char *err, size_t errlen) {
  const cifar_args_t *a = t->args;
  const int L = t->local_batch, K = a->micro_batches;
  const size_t img = (size_t)t->train_set->c * t->train_set->h * t->train_set->w;
  sampler_set_epoch(&t->train_sampler, epoch);
  order_epoch(t);
  /* Augmentation differs per epoch and rank, and is reproducible after a resume. */
  const uint64_t seed = a->seed * 0x9e3779b97f4a7c15ull + (uint64_t)epoch * 1000003u +
                        (uint64_t)t->rank * 0x632be59bd9b4e019ull;
  const int order_len = a->uneven ? t->train_sampler.count : L * t->my_steps;
  if (dataloader_start_epoch(t->train_dl, t->order, order_len, seed)) {
    snprintf(err, errlen, "dataloader: cannot start epoch %d: out of memory", epoch + 1);
    return -1;
  }
  if (first > 0) dataloader_seek(t->train_dl, first);
  /* A resumed epoch goes on from the sums its peer checkpoint holds, in the same
   * order of additions as the uninterrupted run. */
  const double *base = first > 0 && t->has_resume_partial ? t->resume_partial : NULL;
  t->has_resume_partial = 0;
  double loss_sum = base ? base[0] : 0, correct_sum = base ? base[1] : 0;
  const double images_before = base ? base[2] : 0, cpu_before = base ? base[3] : 0;
  long long images = 0;
  int taken = 0;
  const double t0 = now_s(), cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  long long local_images = 0; /* --uneven: the last batch is partial */
  /* --eval-every's validations inside the epoch are not training time */
  const double val0 = t->validation_s, val_cpu0 = t->validation_cpu_s;
  for (int s = first; s < t->my_steps; s++) {
    if (max_steps > 0 && t->step >= max_steps) break;
    const real_t *x;
    const uint8_t *y;
    const int n = dataloader_next(t->train_dl, &x, &y);
    if (n != L && !(a->uneven && s == t->my_steps - 1 && n > 0)) {
      snprintf(err, errlen, "dataloader: batch %d of epoch %d has %d images, expected %d", s,
               epoch + 1, n, L);
      return -1;
    }
    if (!(x = device_batch_put(&t->batch, x, n))) {
      snprintf(err, errlen, "copying batch %d of epoch %d to the GPU failed", s, epoch + 1);
      return -1;
    }
    t->opt.lr = lr_at(&t->sched, epoch + (double)s / t->steps_per_epoch);
    model_zero_grad(t->model);
    for (int u = 0, off = 0; u < K; u++) {
      const int nu = n / K + (u < n % K);
      if (!model_forward(t->model, x + (size_t)off * img, nu, 1)) {
        snprintf(err, errlen, "forward: %s", t->model->err);
        return -1;
      }
      int correct = 0;
      /* --amp: the loss scaled, as GradScaler.scale(loss).backward() */
      loss_sum += model_loss(t->model, y + off, (real_t)((t->amp ? t->scaler.scale : 1.0f) / n), &correct);
      correct_sum += correct;
      if (ddp_backward(t->ddp, u == K - 1)) {
        snprintf(err, errlen, "%s", ddp_error(t->ddp));
        return -1;
      }
      off += nu;
    }
    if (ddp_wait(t->ddp)) {
      snprintf(err, errlen, "%s", ddp_error(t->ddp));
      return -1;
    }
    /* GradScaler.step/update: the averaged gradients unscaled and checked (the same on
     * every rank after the allreduce), the step skipped on inf/NaN. */
    int found_inf = 0;
    if (t->amp) {
      if (model_gpu_unscale(t->model, (float)(1.0 / (double)t->scaler.scale), &found_inf)) {
        snprintf(err, errlen, "%s", t->model->err);
        return -1;
      }
      grad_scaler_update(&t->scaler, found_inf);
      t->amp_skipped += found_inf;
    }
    if (!found_inf) sgd_step(&t->opt, t->model);
    t->step++;
    taken++;
    images += (long long)L * t->size;
    local_images += n;
    int crash_rank;
    if (t->step == crash_step(&crash_rank) && t->rank == crash_rank) raise(SIGKILL);
    if (t->after_step && s + 1 < t->steps_per_epoch) { /* an epoch's end: cifar_peer_after_epoch */
      const double partial[4] = {loss_sum, correct_sum, images_before + (double)local_images,
                                 cpu_before + clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0};
      if (t->after_step(t->after_step_ctx, t, epoch, partial, err, errlen)) return -1;
    }
    if (t->mid_eval && a->eval_every > 0 && t->step % a->eval_every == 0 && s + 1 < t->steps_per_epoch) {
      if (t->mid_eval(t->mid_eval_ctx, t, epoch, &t->stop_requested, err, errlen)) return -1;
      if (t->stop_requested) break;
    }
    cifar_progress_update(progress, s + 1, loss_sum / (images_before + (double)local_images), images, now_s());
  }
  if (a->uneven && cifar_train_join(t, &taken, err, errlen)) return -1;
  const double secs = now_s() - t0 - (t->validation_s - val0),
               cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0 - (t->validation_cpu_s - val_cpu0);
  double sums[4] = {loss_sum, correct_sum, images_before + (double)local_images, cpu_before + cpu};
  if (ddp_allreduce_sum(t->ddp, "cifar.train.metrics", sums, 4)) {
    snprintf(err, errlen, "%s", ddp_error(t->ddp));
    return -1;
  }
  if (a->uneven) images = (long long)sums[2]; /* every rank's images, counted */
  e->epoch = epoch + 1;
  e->train_loss = sums[2] > 0 ? sums[0] / sums[2] : NAN;
  e->train_acc = sums[2] > 0 ? sums[1] / sums[2] : 0;
  e->seconds = secs;
  e->images = images + (long long)images_before * t->size; /* the resumed epoch's whole count */
  e->images_per_s = secs > 0 ? (double)images / secs : 0;
  e->lr = t->opt.lr;
  e->steps = t->step;
  e->cpu_seconds = sums[3];
  if (taken > 0 && !isfinite(e->train_loss)) {
    snprintf(err, errlen,
             "training diverged in epoch %d (loss %g): lower --base-lr or add --warmup-epochs",
             epoch + 1, e->train_loss);
    return -1;
  }
  return taken;
}

int cifar_train_evaluate(cifar_train_t *t, cifar_epoch_t *e, char *err, size_t errlen) {
  /* Rank 0's running statistics everywhere: the model that is checkpointed is the one
   * that is evaluated, whichever rank holds which test shard. */
  if (ddp_broadcast_buffers(t->ddp)) {
    snprintf(err, errlen, "%s", ddp_error(t->ddp));
    return -1;
  }
  const double t0 = now_s(), cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  double sums[3] = {0, 0, 0};
  if (t->test_sampler.count > 0) {
    if (dataloader_start_epoch(t->test_dl, t->test_sampler.indices, t->test_sampler.count, 0)) {
      snprintf(err, errlen, "dataloader: cannot start validation: out of memory");
      return -1;
    }
    const real_t *x;
    const uint8_t *y;
    int n;
    while ((n = dataloader_next(t->test_dl, &x, &y)) > 0) {
      if (!(x = device_batch_put(&t->batch, x, n))) {
        snprintf(err, errlen, "copying a validation batch to the GPU failed");
        return -1;
      }
      if (!model_forward(t->model, x, n, 0)) {
        snprintf(err, errlen, "forward: %s", t->model->err);
        return -1;
      }
      int correct = 0;
      sums[0] += model_loss(t->model, y, 1, &correct);
      sums[1] += correct;
      sums[2] += n;
    }
  }
  if (ddp_allreduce_sum(t->ddp, "cifar.val.metrics", sums, 3)) {
    snprintf(err, errlen, "%s", ddp_error(t->ddp));
    return -1;
  }
  if (sums[2] != t->test_set->n) {
    snprintf(err, errlen, "validation counted %.0f images, the test set has %d", sums[2],
             t->test_set->n);
    return -1;
  }
  e->val_loss = sums[0] / sums[2];
  e->val_acc = sums[1] / sums[2];
  t->validation_s += now_s() - t0;
  t->validation_cpu_s += clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  return 0;
}
