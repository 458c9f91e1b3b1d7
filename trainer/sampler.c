/* sampler.c: per-epoch permutation from (seed, epoch), padding and striding. */
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

int sampler_init(sampler_t *s, int n, int rank, int size, sampler_mode_t mode, int shuffle,
                 uint64_t seed, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  if (n < 0 || size < 1 || rank < 0 || rank >= size) {
    snprintf(err, errlen, "sampler: rank %d of %d ranks over %d samples is inconsistent", rank,
             size, n);
    return -1;
  }
  s->n = n;
  s->rank = rank;
  s->size = size;
  s->mode = mode;
  s->shuffle = shuffle && mode == SAMPLER_TRAIN;
  s->seed = seed;
  s->indices = malloc(sizeof(int) * ((size_t)n / size + 2));
  s->perm = s->mode == SAMPLER_EVAL ? NULL : malloc(sizeof(int) * ((size_t)n + 1));
  if (!s->indices || (s->mode != SAMPLER_EVAL && !s->perm)) {
    sampler_free(s);
    snprintf(err, errlen, "sampler: out of memory for %d samples", n);
    return -1;
  }
  sampler_set_epoch(s, 0);
  return 0;
}

void sampler_set_epoch(sampler_t *s, int epoch) {
  s->epoch = epoch;
  const int n = s->n;
  if (s->mode == SAMPLER_EVAL) {
    s->count = 0;
    for (int i = s->rank; i < n; i += s->size) s->indices[s->count++] = i;
    return;
  }
  /* Made at init: an epoch's order cannot fail (keeping the previous order on one rank
   * would part the ranks' shards, and a first epoch has none). */
  int *perm = s->perm;
  for (int i = 0; i < n; i++) perm[i] = i;
  if (s->shuffle) {
    rng_t r;
    /* Same permutation on every rank: it depends on seed and epoch only. */
    rng_seed(&r, s->seed * 0x9e3779b97f4a7c15ull + (uint64_t)epoch);
    rng_shuffle(&r, perm, n);
  }
  int per_rank = n ? (n + s->size - 1) / s->size : 0;
  if (s->mode == SAMPLER_TRAIN_UNEVEN) per_rank = s->rank < n ? (n - s->rank + s->size - 1) / s->size : 0;
  s->count = per_rank;
  for (int k = 0; k < per_rank; k++) {
    int pos = s->rank + k * s->size;
    s->indices[k] = perm[pos % n]; /* positions past the end wrap to the head: padding */
  }
}

void sampler_free(sampler_t *s) {
  free(s->indices);
  free(s->perm);
  memset(s, 0, sizeof *s);
}
