/* grad_scaler.c: dynamic loss scaling (grad_scaler.h), PyTorch's
 * _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_ on the CPU; the GPU
 * trainer's kernel (gpu_unscale_check) is checked against grad_scaler_unscale. */
#include "grad_scaler.h"

#include <math.h>

void grad_scaler_init(grad_scaler_t *s) {
  s->scale = 65536.0f;
  s->growth_factor = 2.0f;
  s->backoff_factor = 0.5f;
  s->growth_interval = 2000;
  s->growth_tracker = 0;
}

int grad_scaler_unscale(const grad_scaler_t *s, real_t *grads, size_t n) {
  /* PyTorch: inv_scale = scale.double().reciprocal().float() */
  const float inv = (float)(1.0 / (double)s->scale);
  int found = 0;
  for (size_t i = 0; i < n; i++) {
    found |= !isfinite(grads[i]); /* the scaled value, as PyTorch checks it */
    grads[i] = grads[i] * (real_t)inv;
  }
  return found;
}

void grad_scaler_update(grad_scaler_t *s, int found_inf) {
  if (found_inf) {
    s->scale *= s->backoff_factor;
    s->growth_tracker = 0;
    return;
  }
  if (++s->growth_tracker == s->growth_interval) {
    const float grown = s->scale * s->growth_factor;
    if (isfinite(grown)) s->scale = grown;
    s->growth_tracker = 0;
  }
}
