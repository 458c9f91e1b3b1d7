/* models.h: the three model families of the workloads. Each returns a finalized
 * model (parameters initialised from seed), or NULL with a message in err. */
#ifndef HV_TRAINER_MODELS_H
#define HV_TRAINER_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* WideResNet-depth-k (Zagoruyko & Komodakis), pre-activation basic blocks
 * BN-ReLU-conv3x3-BN-ReLU-(dropout)-conv3x3, n = (depth-4)/6 blocks per group,
 * widths 16, 16k, 32k, 64k, strides 1, 2, 2, 1x1 conv shortcut where the width or
 * stride changes, then BN-ReLU-global average pool-linear. depth must be 6n+4.
 * Input (c, h, w), e.g. 3x32x32 for CIFAR. Init: kaiming normal fan_out on convs. */
model_t *model_wrn_create(int depth, int widen, int num_classes, double dropout, int c, int h,
                          int w, int max_batch, uint64_t seed, char *err, size_t errlen);

/* The MNIST network of the bagging study: conv(1 -> n_conv, kernel k, no padding,
 * bias) - ReLU - linear(n_conv*(28-k+1)^2 -> n_hidden) - ReLU - linear(-> 10). */
model_t *model_mnist_net_create(int n_conv, int kernel, int n_hidden, int max_batch,
                                uint64_t seed, char *err, size_t errlen);

/* The ConvNet of the classic PyTorch DDP MNIST tutorial: [conv5x5 pad 2 (1 -> 16) - BN -
 * ReLU - maxpool 2] - [conv5x5 pad 2 (16 -> 32) - BN - ReLU - maxpool 2] - linear(7*7*32
 * -> num_classes). with_bn 0 drops the batch norms (exact DDP equivalence tests). */
model_t *model_convnet_create(int num_classes, int with_bn, int max_batch, uint64_t seed,
                              char *err, size_t errlen);

#endif /* HV_TRAINER_MODELS_H */
