/* checkpoint.h: one file with the model (parameters and buffers), the optimiser
 * state (momentum buffers), epoch, step, learning rate and RNG states, so a resumed
 * run continues exactly where the interrupted one stopped.
 *
 * Layout (little-endian host order; the header records real_t's size):
 *   magic "HVCKPT\r\n" (8 bytes) | version u32 | real size u32 | n_params u64 |
 *   n_buffers u64 | has_momentum u32 | pad u32 | epoch i64 | step i64 | lr f64 |
 *   model rng 4 x u64 | user rng 4 x u64 |
 *   params | buffers | momentum (when has_momentum) | CRC-32 of all before (u32)
 * Written to an owner-only, unpredictably named temporary file next to path, flushed
 * and fsync'ed, then renamed over path (atomic_file.h): a crash leaves the old
 * checkpoint or the new one, never half of one. */
#ifndef HV_TRAINER_CHECKPOINT_H
#define HV_TRAINER_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "optim.h"
#include "rng.h"

#define CHECKPOINT_VERSION 1u

typedef struct checkpoint_meta {
  int64_t epoch;  /* epochs completed */
  int64_t step;   /* optimiser steps taken */
  double lr;
  rng_t rng;      /* the caller's RNG (data order, augmentation) */
} checkpoint_meta_t;

/* opt may be NULL (no optimiser state saved). 0, or -1 with a message. */
int checkpoint_save(const char *path, const model_t *m, const sgd_t *opt,
                    const checkpoint_meta_t *meta, char *err, size_t errlen);

/* Reads into an already built model of the same architecture (and opt when not
 * NULL); checks magic, version, real size, counts and the checksum before touching
 * the model. 0, or -1 with a message naming the file and the fault. */
int checkpoint_load(const char *path, model_t *m, sgd_t *opt, checkpoint_meta_t *meta,
                    char *err, size_t errlen);

#endif /* HV_TRAINER_CHECKPOINT_H */
