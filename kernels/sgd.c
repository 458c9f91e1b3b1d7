/* sgd.c: the fused SGD update loop. The operations and their order are PyTorch's,
 * so float32 results agree with torch.optim.SGD to the last rounding. */
#include "sgd.h"

void sgd_update(size_t n, real_t *param, const real_t *grad, real_t *momentum_buf, real_t lr,
                real_t momentum, real_t weight_decay, int nesterov, int first) {
  for (size_t i = 0; i < n; i++) {
    real_t g = grad[i];
    if (weight_decay != 0) g = g + weight_decay * param[i];
    if (momentum != 0) {
      real_t b = first ? g : momentum * momentum_buf[i] + g;
      momentum_buf[i] = b;
      g = nesterov ? g + momentum * b : b;
    }
    param[i] = param[i] - lr * g;
  }
}
