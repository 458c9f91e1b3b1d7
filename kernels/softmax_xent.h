/* softmax_xent.h: softmax cross-entropy loss, mean over the batch (PyTorch
 * F.cross_entropy with reduction='mean'). */
#ifndef HV_KERNELS_SOFTMAX_XENT_H
#define HV_KERNELS_SOFTMAX_XENT_H

#include <stdint.h>

#include "real.h"

/* Returns the summed (not mean) loss over the n rows, in double, and writes
 * dlogits = grad_scale * (softmax - onehot) (pass 1/N_global for a mean). *correct
 * counts rows whose largest logit is the label (first index on ties). probs (N, K) may
 * be NULL; else it receives the softmax. */
double softmax_xent(int n, int k, const real_t *logits /* (N, K) */,
                    const uint8_t *labels /* (N) */, real_t grad_scale,
                    real_t *dlogits /* (N, K) or NULL */, real_t *probs, int *correct);

#endif /* HV_KERNELS_SOFTMAX_XENT_H */
