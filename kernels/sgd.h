/* sgd.h: the SGD update of PyTorch's torch.optim.SGD (momentum, dampening 0,
 * Nesterov, weight decay) over a flat parameter array. */
#ifndef HV_KERNELS_SGD_H
#define HV_KERNELS_SGD_H

#include <stddef.h>

#include "real.h"

/* For each i, exactly as torch.optim.SGD (foreach=False) does it:
 *   g = grad + weight_decay * param
 *   if momentum != 0: buf = first ? g : momentum * buf + g   (dampening 0)
 *                     g = nesterov ? g + momentum * buf : buf
 *   param -= lr * g
 * first: the momentum buffer does not exist yet (PyTorch clones g into it). */
void sgd_update(size_t n, real_t *param, const real_t *grad, real_t *momentum_buf, real_t lr,
                real_t momentum, real_t weight_decay, int nesterov, int first);

#endif /* HV_KERNELS_SGD_H */
