/* layout_blocked.h: the channel-blocked activation layout that oneDNN's CPU
 * convolutions compute in (nChw16c, oneDNN's aBcd16b): channels in blocks of 16,
 * element (n, c, y, x) of an (N, C, H, W) tensor at
 *   ((n * C/16 + c/16) * H*W + y*W + x) * 16 + c%16,
 * for C a multiple of 16. A model that keeps its activations in it between
 * convolutions skips the reorders into and out of every convolution (16% of a
 * WRN-10-1 training step in plain NCHW). With H = W = 1 it is the same memory as NCHW. */
#ifndef HV_KERNELS_LAYOUT_BLOCKED_H
#define HV_KERNELS_LAYOUT_BLOCKED_H

#include <stddef.h>

#include "real.h"

#define CHANNEL_BLOCK 16

/* Index of element (n, ch, j) of an (n, c, hw) tensor in the blocked layout. */
static inline size_t blocked_index(int c, int hw, int n, int ch, int j) {
  return (((size_t)n * (c / CHANNEL_BLOCK) + ch / CHANNEL_BLOCK) * hw + j) * CHANNEL_BLOCK + ch % CHANNEL_BLOCK;
}

/* NCHW -> blocked and back; c must be a multiple of CHANNEL_BLOCK. */
void layout_to_blocked(int n, int c, int hw, const real_t *src, real_t *dst);
void layout_from_blocked(int n, int c, int hw, const real_t *src, real_t *dst);

#endif /* HV_KERNELS_LAYOUT_BLOCKED_H */
