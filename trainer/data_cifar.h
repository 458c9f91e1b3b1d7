/* data_cifar.h: CIFAR-10 / CIFAR-100 binary-version loader.
 * CIFAR-10 (cifar-10-batches-bin/): data_batch_1..5.bin (train), test_batch.bin;
 *   records of 1 label byte (0..9) + 3072 pixel bytes (R, G, B planes of 32x32).
 * CIFAR-100 (cifar-100-binary/): train.bin, test.bin; records of a coarse label byte
 *   (0..19), a fine label byte (0..99, the one kept) and 3072 pixel bytes.
 * The format has no header or magic: a file is checked by its size (whole records,
 * the standard count) and its labels; errors name the file, record and byte. */
#ifndef HV_TRAINER_DATA_CIFAR_H
#define HV_TRAINER_DATA_CIFAR_H

#include <stddef.h>

#include "dataset.h"

/* num_classes 10 or 100; split "train" or "test". Files may also be gzip-compressed
 * (name.gz). Returns 0, or -1 with *out zeroed and a message. */
int dataset_load_cifar(const char *dir, int num_classes, const char *split, dataset_t *out,
                       char *err, size_t errlen);

/* One binary file; expected_records 0 accepts any whole number of records up to
 * 50,000 (the largest standard file: a subset, never more). Appends
 * nothing: *out holds only this file. */
int dataset_load_cifar_file(const char *path, int num_classes, int expected_records,
                            dataset_t *out, char *err, size_t errlen);

/* Per-channel mean and standard deviation of the training sets (of pixel/255), the
 * values the PyTorch CIFAR examples normalise with. */
extern const float cifar10_mean[3], cifar10_std[3], cifar100_mean[3], cifar100_std[3];
extern const float mnist_mean[1], mnist_std[1];

#endif /* HV_TRAINER_DATA_CIFAR_H */
