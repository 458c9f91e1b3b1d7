/* sampler.h: the distributed sampler (PyTorch DistributedSampler semantics).
 * Training: every epoch the index list 0..n-1 is shuffled from (seed, epoch), the
 * same on every rank; it is padded by repeating its head until it divides by the
 * number of ranks, and rank r takes positions r, r+size, r+2*size...: equal shards,
 * each sample once per epoch over all ranks (plus at most size-1 repeats).
 * Evaluation: no shuffle and no padding; rank r takes r, r+size, ... so every
 * sample is counted exactly once over all ranks (shards may differ by one). */
#ifndef HV_TRAINER_SAMPLER_H
#define HV_TRAINER_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

/* SAMPLER_TRAIN_UNEVEN: as SAMPLER_TRAIN without the padding: rank r takes the
 * shuffled positions r, r+size, ... below n, so shards differ by one sample (for
 * training that joins, ddp_join, instead of repeating samples). */
typedef enum sampler_mode { SAMPLER_TRAIN = 0, SAMPLER_EVAL = 1, SAMPLER_TRAIN_UNEVEN = 2 } sampler_mode_t;

typedef struct sampler {
  int n;             /* samples in the data set */
  int rank, size;
  sampler_mode_t mode;
  int shuffle;       /* training only */
  uint64_t seed;
  int epoch;
  int count;         /* this rank's samples this epoch */
  int *indices;      /* (count) */
  int *perm;         /* (n + 1) scratch of sampler_set_epoch, made at init: it cannot fail */
} sampler_t;

/* 0, or -1 with a message when rank/size/n are inconsistent or memory runs out. */
int sampler_init(sampler_t *s, int n, int rank, int size, sampler_mode_t mode, int shuffle,
                 uint64_t seed, char *err, size_t errlen);
/* Recomputes this rank's indices for epoch (set it before each epoch, as PyTorch's
 * set_epoch; otherwise every epoch has the same order). */
void sampler_set_epoch(sampler_t *s, int epoch);
void sampler_free(sampler_t *s);

#endif /* HV_TRAINER_SAMPLER_H */
