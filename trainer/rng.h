/* rng.h: the trainer's random numbers: xoshiro256** seeded by splitmix64. Small,
 * fast, and its whole state is four words, so checkpoints save it and a resumed run
 * draws exactly the numbers the uninterrupted run would have drawn. */
#ifndef HV_TRAINER_RNG_H
#define HV_TRAINER_RNG_H

#include <stdint.h>

typedef struct rng {
  uint64_t s[4];
} rng_t;

void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_next(rng_t *r);
/* Uniform in [0, 1) with 53 random bits. */
double rng_uniform(rng_t *r);
/* Uniform integer in [0, n), without modulo bias. n > 0. */
uint64_t rng_below(rng_t *r, uint64_t n);
/* Standard normal (Box-Muller, one value per call). */
double rng_normal(rng_t *r);
/* Fisher-Yates shuffle of idx[0..n). */
void rng_shuffle(rng_t *r, int *idx, int n);

#endif /* HV_TRAINER_RNG_H */
