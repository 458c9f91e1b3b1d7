/* batch.c: normalise and augment one batch. A lookup table per channel maps each of
 * the 256 byte values to its normalised float, so the inner loop is a gather. */
#include "batch.h"

#include <string.h>

void batch_build_lut(const batch_transform_t *t, int c, real_t lut[4][256]) {
  const int cl = c < 4 ? c : 4;
  for (int ch = 0; ch < cl; ch++) {
    for (int v = 0; v < 256; v++) {
      double f = v / 255.0;
      if (t && t->mean) f = (f - t->mean[ch]) / t->std[ch];
      lut[ch][v] = (real_t)f;
    }
  }
}

void batch_draw_augment(const batch_transform_t *t, rng_t *rng, int aug[3]) {
  const int pad = t ? t->crop_pad : 0;
  aug[0] = aug[1] = aug[2] = 0;
  /* The draws happen in a fixed order per image, so a batch depends only on the
   * rng state it starts from (not on threads or timing). */
  if (pad > 0 && rng) {
    aug[0] = (int)rng_below(rng, (uint64_t)(2 * pad + 1)) - pad;
    aug[1] = (int)rng_below(rng, (uint64_t)(2 * pad + 1)) - pad;
  }
  if (t && t->flip && rng) aug[2] = (int)(rng_next(rng) >> 63);
}

void batch_fill(const dataset_t *ds, const int *idx, int n, const batch_transform_t *t,
                rng_t *rng, real_t *x, uint8_t *y) {
  const int C = ds->c, H = ds->h, W = ds->w;
  real_t lut[4][256];
  batch_build_lut(t, C, lut);
  for (int i = 0; i < n; i++) {
    const uint8_t *img = dataset_image(ds, idx[i]);
    real_t *out = x + (size_t)i * C * H * W;
    y[i] = ds->labels[idx[i]];
    int aug[3];
    batch_draw_augment(t, rng, aug);
    const int dy = aug[0], dx = aug[1], flip = aug[2];
    for (int c = 0; c < C; c++) {
      const real_t *lc = lut[c < 4 ? c : 3];
      const uint8_t *src = img + (size_t)c * H * W;
      real_t *dst = out + (size_t)c * H * W;
      if (!dy && !dx && !flip) {
        for (int j = 0; j < H * W; j++) dst[j] = lc[src[j]];
        continue;
      }
      for (int r = 0; r < H; r++) {
        const int sr = r + dy;
        for (int col = 0; col < W; col++) {
          /* Output column col shows crop column (flip ? W-1-col : col). */
          const int sc = (flip ? W - 1 - col : col) + dx;
          const int inside = sr >= 0 && sr < H && sc >= 0 && sc < W;
          dst[r * W + col] = lc[inside ? src[sr * W + sc] : 0];
        }
      }
    }
  }
}
