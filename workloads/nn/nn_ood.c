/* nn_ood.c: the shipped out-of-distribution letter and a small PGM reader (see
 * nn_ood.h). The letter is drawn in text so it can be read and changed here; '#' is
 * full ink, '+' half ink, like the anti-aliased strokes of MNIST digits. */
#include "nn_ood.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const letter_a[28] = {
    "............................", "............................",
    "............................", "............................",
    "............+##+............", "...........+####+...........",
    "...........######...........", "..........+##++##+..........",
    "..........###..###..........", ".........+##+..+##+.........",
    ".........###....###.........", "........+##+....+##+........",
    "........###......###........", ".......+##+......+##+.......",
    ".......##############.......", "......+##############+......",
    "......###..........###......", ".....+##+..........+##+.....",
    ".....###............###.....", "....+##+............+##+....",
    "....###..............###....", "...+##+..............+##+...",
    "............................", "............................",
    "............................", "............................",
    "............................", "............................"};

void nn_ood_default(uint8_t *px) {
  for (int r = 0; r < 28; ++r)
    for (int c = 0; c < 28; ++c) {
      const char ch = letter_a[r][c];
      px[r * 28 + c] = ch == '#' ? 255 : ch == '+' ? 128 : 0;
    }
}

/* Next whitespace-separated integer of a PGM header, skipping # comments. */
static int pgm_int(FILE *f, int *v) {
  int ch;
  for (;;) {
    ch = fgetc(f);
    if (ch == '#')
      while (ch != '\n' && ch != EOF) ch = fgetc(f);
    if (ch == EOF) return -1;
    if (!isspace(ch)) break;
  }
  if (!isdigit(ch)) return -1;
  long x = 0;
  while (ch != EOF && isdigit(ch)) {
    x = x * 10 + (ch - '0');
    if (x > 1000000) return -1;
    ch = fgetc(f);
  }
  *v = (int)x;
  return 0;
}

int nn_ood_load_pgm(const char *path, uint8_t *px, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "--ood-image %s: %s", path, strerror(errno));
    return -1;
  }
  char magic[3] = {0};
  int w = 0, h = 0, maxv = 0, rc = -1;
  if (fread(magic, 1, 2, f) != 2 || magic[0] != 'P' || (magic[1] != '2' && magic[1] != '5')) {
    snprintf(err, errlen, "--ood-image %s: not a PGM file (expected P2 or P5)", path);
    goto out;
  }
  if (pgm_int(f, &w) || pgm_int(f, &h) || pgm_int(f, &maxv) || maxv < 1 || maxv > 255) {
    snprintf(err, errlen, "--ood-image %s: bad PGM header (width, height, maxval 1..255)",
             path);
    goto out;
  }
  if (w != 28 || h != 28) {
    snprintf(err, errlen, "--ood-image %s: %dx%d pixels, need 28x28", path, w, h);
    goto out;
  }
  for (int i = 0; i < 28 * 28; ++i) {
    int v = 0;
    if (magic[1] == '5') {
      v = fgetc(f);
      if (v == EOF) v = -1;
    } else if (pgm_int(f, &v)) {
      v = -1;
    }
    if (v < 0 || v > maxv) {
      snprintf(err, errlen, "--ood-image %s: pixel %d missing or above maxval %d", path, i, maxv);
      goto out;
    }
    px[i] = (uint8_t)(v * 255 / maxv);
  }
  rc = 0;
out:
  fclose(f);
  return rc;
}
