/* cifar_target.h: cifar_ddp's progress towards --target-accuracy, fed by every
 * validation (after each epoch and, with --eval-every N, every N steps): the
 * early-stopping streak (validations in a row at or above the target; --patience of
 * them stop the run) and the time to accuracy (when validation first reached it, in
 * seconds of the run's wall clock, with and without the validations). */
#ifndef HV_CIFAR_TARGET_H
#define HV_CIFAR_TARGET_H

typedef struct cifar_target {
  double target;
  int patience;
  int streak;
  double t_start;         /* the run's training start (now_s) */
  double reached_s;       /* seconds after t_start when first reached; -1: not yet */
  double reached_train_s; /* the same without validation_s */
  long long reached_step; /* optimiser steps taken then */
} cifar_target_t;

/* streak: what a resumed run's checkpoint history already holds. */
void cifar_target_start(cifar_target_t *g, double target, int patience, int streak, double t_start);

/* One validation's accuracy after `step` steps, at time `now`, when validate_s of the
 * seconds since t_start were spent validating. Returns 1 when the
 * streak has reached --patience (stop), else 0. */
int cifar_target_feed(cifar_target_t *g, double val_acc, long long step, double now, double validate_s);

#endif /* HV_CIFAR_TARGET_H */
