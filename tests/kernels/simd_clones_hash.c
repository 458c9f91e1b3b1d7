/* simd_clones_hash.c: a hash of every output of the CPU batch norm kernels (blocked and
 * NCHW, training and evaluation, with and without the fused ReLU, forward and backward)
 * on fixed data. Built twice, against hvkernels (AVX-512/AVX2 clones chosen at run
 * time, simd_clones.h) and from the same sources with -DHV_NO_SIMD_CLONES (the
 * baseline code alone): kernels.simd_clones_same_bits checks that both print the same
 * hash, i.e. every clone this machine runs gives the baseline's bits. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "batchnorm.h"
static uint64_t h = 1469598103934665603ull; /* FNV-1a */
static void eat(const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
}
int main(void) {
  int n = 8, c = 48, hw = 37; size_t len = (size_t)n * c * hw; unsigned s = 5;
  float *x = malloc(len * 4), *dy = malloc(len * 4), *y = malloc(len * 4), *dx = malloc(len * 4);
  float g[48], b[48], st[48 * 8], coef[96];
  double *sc = malloc(batchnorm_blocked_scratch(n, c) * sizeof(double));
  if (!x || !dy || !y || !dx || !sc) {
    fprintf(stderr, "simd_clones_hash: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < len; i++) { s = s * 1103515245u + 12345u; x[i] = ((s >> 8) & 0xffff) / 32768.0f - 0.7f; s = s * 1103515245u + 12345u; dy[i] = ((s >> 8) & 0xffff) / 32768.0f - 1.0f; }
  for (int k = 0; k < c; k++) g[k] = 1 + k * 0.01f, b[k] = k * 0.003f - 0.05f;
  for (int relu = 0; relu <= 1; relu++) for (int train = 0; train <= 1; train++) {
    for (int k = 0; k < c; k++) st[k] = 0, st[c + k] = 1;
    if (train) batchnorm_forward_train_blocked(n, c, hw, x, g, b, 1e-5f, 0.1f, st, st + c, st + 2 * c, st + 3 * c, y, relu, sc);
    else batchnorm_forward_eval_blocked(n, c, hw, x, g, b, 1e-5f, st, st + c, st + 2 * c, st + 3 * c, y, relu, sc);
    eat(y, len * 4); eat(st, 4 * c * 4);
    for (int k = 0; k < 2 * c; k++) st[4 * c + k] = 0;
    batchnorm_backward_blocked(n, c, hw, train, x, dy, g, st + 2 * c, st + 3 * c, dx, 1, st + 4 * c, st + 5 * c, relu, sc);
    eat(dx, len * 4); eat(st + 4 * c, 2 * c * 4);
    if (train && relu) { batchnorm_forward_train_relu(n, c, hw, x, g, b, 1e-5f, 0.1f, st, st + c, st + 2 * c, st + 3 * c, y, coef);
      batchnorm_backward_relu(n, c, hw, 1, x, dy, g, st + 2 * c, st + 3 * c, dx, 1, st + 4 * c, st + 5 * c, coef); eat(y, len * 4); eat(dx, len * 4); }
    if (train && !relu) { batchnorm_forward_train(n, c, hw, x, g, b, 1e-5f, 0.1f, st, st + c, st + 2 * c, st + 3 * c, y);
      batchnorm_backward(n, c, hw, 1, x, dy, g, st + 2 * c, st + 3 * c, dx, 1, st + 4 * c, st + 5 * c); eat(y, len * 4); eat(dx, len * 4); }
  }
  printf("%016llx\n", (unsigned long long)h);
  free(x), free(dy), free(y), free(dx), free(sc);
  return 0;
}
