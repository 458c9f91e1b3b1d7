/* grad_scaler.h: dynamic loss scaling for mixed-precision training, with the semantics
 * of PyTorch's torch.cuda.amp.GradScaler (defaults: initial scale 2^16, growth factor
 * 2, backoff factor 0.5, growth interval 2000):
 *   loss * scale is backpropagated; before the optimiser step the gradients are
 *   multiplied by 1/scale (the float32 reciprocal of the scale, as PyTorch computes
 *   it) and checked: any inf or NaN skips the step; then
 *   update: inf/NaN found -> scale *= backoff, run of good steps = 0;
 *           else run += 1, and when it reaches the interval: scale *= growth
 *           (unless that overflows), run = 0.
 * Under DDP the gradients are averaged before unscaling, so an inf on one rank is an
 * inf on every rank and all ranks skip the same steps. */
#ifndef HV_TRAINER_GRAD_SCALER_H
#define HV_TRAINER_GRAD_SCALER_H

#include <stddef.h>

#include "real.h"

typedef struct grad_scaler {
  float scale;
  float growth_factor, backoff_factor;
  int growth_interval;
  int growth_tracker; /* good steps since the last change of scale */
} grad_scaler_t;

/* PyTorch's defaults. */
void grad_scaler_init(grad_scaler_t *s);
/* grads *= 1/scale in place; returns 1 when any gradient is inf or NaN (the step
 * must then be skipped), else 0. */
int grad_scaler_unscale(const grad_scaler_t *s, real_t *grads, size_t n);
/* After the step (taken or skipped): the new scale. */
void grad_scaler_update(grad_scaler_t *s, int found_inf);

#endif /* HV_TRAINER_GRAD_SCALER_H */
