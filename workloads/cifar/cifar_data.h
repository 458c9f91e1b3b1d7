/* cifar_data.h: the training and test sets of cifar_ddp, each rank loading its own
 * copy (a few hundred MB at most, read once).
 *  - cifar10 / cifar100: the binary version from --data-dir, or its
 *    cifar-10-batches-bin / cifar-100-binary subfolder. Files of the standard size are
 *    expected; a smaller whole number of records is accepted as a subset (a note says
 *    so) so that tests and users can train on a slice.
 *  - fashion-mnist: the IDX files of Debian's dataset-fashion-mnist (or --data-dir),
 *    28x28 grey images zero-padded to 32x32 so that the CIFAR model and code path
 *    train on them unchanged.
 * Errors name the file and say how to get the data. */
#ifndef HV_CIFAR_DATA_H
#define HV_CIFAR_DATA_H

#include <stddef.h>

#include "dataset.h"

typedef struct cifar_data {
  dataset_t train, test;
  const float *mean, *std; /* per channel, for normalisation */
  char dir[4096];          /* where the files were found */
  char note[512];          /* "" or a remark for the user (subset files) */
} cifar_data_t;

/* dataset: cifar10 | cifar100 | fashion-mnist; dir may be NULL (the default place).
 * 0, or -1 with one line in err. */
int cifar_data_load(const char *dataset, const char *dir, cifar_data_t *d, char *err,
                    size_t errlen);
void cifar_data_free(cifar_data_t *d);

/* Keeps the first train_size / test_size images (0: all; more than there are: all). */
int cifar_data_limit(cifar_data_t *d, int train_size, int test_size, char *err, size_t errlen);

/* Copies images (n, c, h, w) into the centre of (n, c, h + 2 pad, w + 2 pad) zeros. */
int cifar_data_pad(dataset_t *ds, int pad, char *err, size_t errlen);

#endif /* HV_CIFAR_DATA_H */
