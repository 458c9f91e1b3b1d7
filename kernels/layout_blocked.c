/* layout_blocked.c: conversions between NCHW and the channel-blocked layout
 * (layout_blocked.h). Used where a blocked tensor meets code that only knows NCHW
 * (the im2col fallback of a convolution oneDNN refused) and by tests. */
#include "layout_blocked.h"

void layout_to_blocked(int n, int c, int hw, const real_t *src, real_t *dst) {
  for (int i = 0; i < n; i++)
    for (int ch = 0; ch < c; ch++) {
      const real_t *p = src + ((size_t)i * c + ch) * hw;
      real_t *q = dst + blocked_index(c, hw, i, ch, 0);
      for (int j = 0; j < hw; j++) q[(size_t)j * CHANNEL_BLOCK] = p[j];
    }
}

void layout_from_blocked(int n, int c, int hw, const real_t *src, real_t *dst) {
  for (int i = 0; i < n; i++)
    for (int ch = 0; ch < c; ch++) {
      const real_t *p = src + blocked_index(c, hw, i, ch, 0);
      real_t *q = dst + ((size_t)i * c + ch) * hw;
      for (int j = 0; j < hw; j++) q[j] = p[(size_t)j * CHANNEL_BLOCK];
    }
}
