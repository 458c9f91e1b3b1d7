/* cifar_train.h: one rank's share of cifar_ddp's training and evaluation: the model
 * wrapped in DDP, SGD with the learning-rate schedule, the distributed samplers and
 * data loaders. Every function here is collective (all ranks call it in step). */
#ifndef HV_CIFAR_TRAIN_H
#define HV_CIFAR_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "cifar_args.h"
#include "cifar_report.h"
#include "dataloader.h"
#include "dataset.h"
#include "ddp.h"
#include "device.h"
#include "grad_scaler.h"
#include "model.h"
#include "optim.h"
#include "sampler.h"

typedef struct cifar_train {
  const cifar_args_t *args;
  hv_comm_t *comm;
  int rank, size;
  const dataset_t *train_set, *test_set;
  model_t *model;
  ddp_t *ddp;
  sgd_t opt;
  lr_schedule_t sched;
  sampler_t train_sampler, test_sampler;
  dataloader_t *train_dl, *test_dl;
  batch_transform_t train_tf, test_tf;
  int local_batch;      /* images per step on this rank */
  int micro_max;        /* largest micro-batch: the model's max_batch */
  int steps_per_epoch;  /* the schedule's steps per epoch (with --uneven: the most any rank has) */
  int my_steps;         /* this rank's steps per epoch (--uneven: its shard's batches, the last partial) */
  int *order;           /* (local_batch * my_steps) micro-batch-major indices */
  long long step;       /* optimiser steps taken, in all */
  device_batch_t batch; /* the batch where the model reads it (local_batch images) */
  int amp;              /* --amp on the GPU: float16 compute, dynamic loss scaling */
  grad_scaler_t scaler;
  long long amp_skipped; /* steps skipped for inf/NaN gradients, in all */
  /* Called after every optimiser step with this rank's sums of the epoch so far
   * (loss, correct, images, cpu seconds): the peer checkpoints (cifar_peer.h). */
  int (*after_step)(void *ctx, struct cifar_train *t, int epoch, const double partial[4], char *err,
                    size_t errlen);
  void *after_step_ctx;
  /* --eval-every: called after every N-th optimiser step of an epoch but its last (the
   * epoch's own validation follows that one); setting *stop ends the run after this
   * step. Its time is left out of the epoch's training seconds. */
  int (*mid_eval)(void *ctx, struct cifar_train *t, int epoch, int *stop, char *err, size_t errlen);
  void *mid_eval_ctx;
  int stop_requested;
  double validation_s, validation_cpu_s; /* wall and CPU seconds in cifar_train_evaluate so far
                                            (none before training starts) */
  /* The sums the resumed epoch starts from (a peer checkpoint's), used once. */
  double resume_partial[4];
  int has_resume_partial;
} cifar_train_t;

/* Builds the model (seeded identically on every rank; moved to the current GPU with
 * --device cuda), the optimiser and the data pipeline; the model is not yet wrapped in
 * DDP (cifar_train_start_ddp), so that rank 0 can load a checkpoint first. 0, or -1
 * with a message. */
int cifar_train_init(cifar_train_t *t, const cifar_args_t *a, hv_comm_t *comm,
                     const dataset_t *train, const dataset_t *test, const float *mean,
                     const float *std, char *err, size_t errlen);
/* Wraps the model in DDP, which broadcasts rank 0's parameters and buffers, and
 * broadcasts rank 0's momentum and *step (after a resume). 0, or -1 with a message. */
int cifar_train_start_ddp(cifar_train_t *t, char *err, size_t errlen);
void cifar_train_free(cifar_train_t *t);

/* Trains epoch `epoch` (0-based) from its step `first` until its end or until the run
 * has taken max_steps steps (0: no limit). Fills loss/accuracy sums over all ranks in
 * *e (epoch, train_loss, train_acc, seconds, images, images_per_s, lr, steps).
 * Returns the steps taken in this call, or -1 with a message. */
int cifar_train_epoch(cifar_train_t *t, int epoch, int first, long long max_steps,
                      cifar_progress_t *progress, cifar_epoch_t *e, char *err, size_t errlen);

/* Validation over the whole test set, each image once over all ranks, with rank 0's
 * batch-norm running statistics. Sets e->val_loss and e->val_acc; adds its time to
 * t->validation_s and t->validation_cpu_s. */
int cifar_train_evaluate(cifar_train_t *t, cifar_epoch_t *e, char *err, size_t errlen);

/* 1 on every rank if ok is 1 on every rank; else 0, and *first_bad is the lowest
 * failing rank (it prints its message, the others stay quiet). -1 if hv fails. */
int cifar_train_agree(hv_comm_t *comm, int ok, int *first_bad);

#endif /* HV_CIFAR_TRAIN_H */
