/* softmax_xent.c: numerically stable log-softmax (subtract the row maximum), loss
 * and gradient in one pass per row, computed in double. */
#include "softmax_xent.h"

#include <math.h>

double softmax_xent(int n, int k, const real_t *logits, const uint8_t *labels,
                    real_t grad_scale, real_t *dlogits, real_t *probs, int *correct) {
  double loss = 0;
  int right = 0;
  for (int i = 0; i < n; i++) {
    const real_t *z = logits + (size_t)i * k;
    int arg = 0;
    for (int j = 1; j < k; j++)
      if (z[j] > z[arg]) arg = j;
    if (arg == labels[i]) right++;
    const double zmax = z[arg];
    double sum = 0;
    for (int j = 0; j < k; j++) sum += exp((double)z[j] - zmax);
    const double lse = zmax + log(sum);
    loss += lse - z[labels[i]];
    for (int j = 0; j < k; j++) {
      double p = exp((double)z[j] - lse);
      if (probs) probs[(size_t)i * k + j] = (real_t)p;
      if (dlogits) dlogits[(size_t)i * k + j] = (real_t)(grad_scale * (p - (j == labels[i])));
    }
  }
  if (correct) *correct = right;
  return loss;
}
