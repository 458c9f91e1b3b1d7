/* batch.h: turning uint8 images into a float batch: normalisation per channel
 * ((pixel/255 - mean) / std, as ToTensor + Normalize) and the CIFAR augmentation
 * (random crop of the image zero-padded by `pad` pixels, random horizontal flip). */
#ifndef HV_TRAINER_BATCH_H
#define HV_TRAINER_BATCH_H

#include <stdint.h>

#include "dataset.h"
#include "real.h"
#include "rng.h"

typedef struct batch_transform {
  const float *mean, *std;  /* (C) each; NULL: pixel/255 only */
  int crop_pad;             /* > 0: random crop after padding by this many pixels */
  int flip;                 /* random horizontal flip with probability 1/2 */
} batch_transform_t;

/* x (n, C, H, W) and y (n) from images idx[0..n); rng drives the augmentation (may be
 * NULL when the transform has none). Padding pixels are raw 0 before normalisation,
 * as torchvision's RandomCrop(padding=4) pads the PIL image with black. */
void batch_fill(const dataset_t *ds, const int *idx, int n, const batch_transform_t *t,
                rng_t *rng, real_t *x, uint8_t *y);

/* batch_fill's two halves, for a device that does the pixels itself (gpu_batch_pixels):
 * the per-channel table from byte to normalised value (channels past the fourth use
 * the fourth's), and one image's augmentation drawn from rng as batch_fill draws it:
 * aug = {row shift, column shift, flip}. */
void batch_build_lut(const batch_transform_t *t, int c, real_t lut[4][256]);
void batch_draw_augment(const batch_transform_t *t, rng_t *rng, int aug[3]);

#endif /* HV_TRAINER_BATCH_H */
