/* dataloader.h: batches of a data set in a given index order, assembled by a
 * background thread one batch ahead (double buffering), so loading and augmentation
 * overlap the training step. Batch b of an epoch is augmented from an RNG seeded by
 * (seed, b): the result is the same with or without the thread, and after a resume. */
#ifndef HV_TRAINER_DATALOADER_H
#define HV_TRAINER_DATALOADER_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "dataset.h"

typedef struct dataloader dataloader_t;

/* ds must outlive the loader. prefetch 0 assembles batches in dataloader_next. */
dataloader_t *dataloader_create(const dataset_t *ds, int batch, int drop_last,
                                const batch_transform_t *t, int prefetch, char *err,
                                size_t errlen);
/* Starts an epoch over indices[0..count) (copied), e.g. a sampler's. 0, or -1 when out
 * of memory for the copy (the loader is unchanged). */
int dataloader_start_epoch(dataloader_t *dl, const int *indices, int count, uint64_t seed);
/* Skips to batch `first` of the current epoch (resuming mid-epoch): the batches
 * that follow are the ones an uninterrupted epoch would have produced. */
void dataloader_seek(dataloader_t *dl, int first);
/* The next batch: returns its size (0 at the end of the epoch) and sets x (n, C, H, W)
 * and y (n), valid until the next call. */
int dataloader_next(dataloader_t *dl, const real_t **x, const uint8_t **y);
/* Batches in the current epoch. */
int dataloader_num_batches(const dataloader_t *dl);
void dataloader_free(dataloader_t *dl);

#endif /* HV_TRAINER_DATALOADER_H */
