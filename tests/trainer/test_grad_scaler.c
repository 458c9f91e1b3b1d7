/* test_grad_scaler.c: dynamic loss scaling against PyTorch's GradScaler rules (the
 * update of torch._amp_update_scale_, the check-and-unscale of
 * _amp_foreach_non_finite_check_and_unscale_), with a growth interval of 3: the scale
 * doubles after 3 good steps in a row, halves at an inf or a NaN and the run starts
 * over, never grows to infinity; unscaling multiplies by the float reciprocal (exact
 * for a power-of-two scale) and reports inf, -inf and NaN wherever they are. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "grad_scaler.h"

int main(void) {
  grad_scaler_t s;
  grad_scaler_init(&s);
  CHECK(s.scale == 65536.0f && s.growth_factor == 2.0f && s.backoff_factor == 0.5f && s.growth_interval == 2000);
  s.growth_interval = 3;
  /* good, good, good -> x2; good, inf -> /2 (run reset); good x3 -> x2 */
  const int found[] = {0, 0, 0, 0, 1, 0, 0, 0};
  const float want[] = {65536, 65536, 131072, 131072, 65536, 65536, 65536, 131072};
  for (int i = 0; i < 8; i++) {
    grad_scaler_update(&s, found[i]);
    CHECK(s.scale == want[i]);
  }
  CHECK_EQ_INT(s.growth_tracker, 0);
  /* Growth that would overflow float keeps the scale. */
  s.scale = 3e38f;
  s.growth_tracker = 2;
  grad_scaler_update(&s, 0);
  CHECK(s.scale == 3e38f && s.growth_tracker == 0);

  s.scale = 1024.0f;
  real_t g[5] = {1024.0f, -2048.0f, 1.0f, 0.0f, 3072.0f};
  CHECK_EQ_INT(grad_scaler_unscale(&s, g, 5), 0);
  CHECK(g[0] == 1.0f && g[1] == -2.0f && g[2] == 1.0f / 1024 && g[3] == 0.0f && g[4] == 3.0f);
  const real_t bad[3] = {INFINITY, -INFINITY, NAN};
  for (int b = 0; b < 3; b++) {
    real_t h[4] = {1, 2, 3, 4};
    h[b + 1] = bad[b];
    CHECK_EQ_INT(grad_scaler_unscale(&s, h, 4), 1);
    CHECK(h[0] == 1.0f / 1024); /* the rest is still unscaled */
  }
  CHECK_RETURN();
}
