/* optim.h: SGD with momentum, Nesterov and weight decay over a model's flat
 * parameters (torch.optim.SGD's rule, see kernels/sgd.h), and learning-rate
 * schedules (constant, step, cosine) with linear warm-up and the linear scaling rule
 * (Goyal et al. 2017: lr = base_lr * global_batch / base_batch). */
#ifndef HV_TRAINER_OPTIM_H
#define HV_TRAINER_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef struct sgd {
  double lr, momentum, weight_decay;
  int nesterov;
  size_t n;              /* parameters */
  real_t *momentum_buf;  /* (n), created by the first step as PyTorch does */
  int has_buf;           /* 0 until the first step with momentum != 0 */
  const struct device_ops *dev; /* the model's device: momentum_buf is its memory (device.h) */
  int64_t steps;
} sgd_t;

/* 0, or -1 with a message (Nesterov needs momentum > 0, as in PyTorch). */
int sgd_init(sgd_t *opt, const model_t *m, double lr, double momentum, double weight_decay,
             int nesterov, char *err, size_t errlen);
void sgd_free(sgd_t *opt);
/* params -= lr * update(grads), with opt->lr (set it from a schedule before). */
void sgd_step(sgd_t *opt, model_t *m);

typedef enum lr_kind { LR_CONSTANT = 0, LR_STEP = 1, LR_COSINE = 2 } lr_kind_t;

typedef struct lr_schedule {
  lr_kind_t kind;
  double base_lr;        /* for base_batch images per step */
  int base_batch;        /* reference batch of base_lr (0: no scaling) */
  int global_batch;      /* images per step over all ranks */
  double warmup_epochs;  /* linear ramp from base_lr to the scaled lr (Goyal et al.) */
  double total_epochs;   /* cosine: lr reaches 0 here */
  double step_gamma;     /* step: multiply by gamma at each milestone */
  int n_milestones;
  double milestones[8];  /* epochs, ascending */
} lr_schedule_t;

/* The learning rate at fractional epoch t (epoch + step / steps_per_epoch). During
 * warm-up it rises linearly from base_lr to the scaled peak; afterwards the schedule
 * applies to the peak (its own clock starts at 0, as warm-up wrappers do). */
double lr_at(const lr_schedule_t *s, double epoch);
/* base_lr * global_batch / base_batch, or base_lr without a base batch. */
double lr_peak(const lr_schedule_t *s);
/* Parses "constant", "step" or "cosine"; -1 if none. */
int lr_kind_parse(const char *name, lr_kind_t *kind);

#endif /* HV_TRAINER_OPTIM_H */
