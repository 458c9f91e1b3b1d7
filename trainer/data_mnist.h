/* data_mnist.h: loader for MNIST-format IDX files (MNIST, Fashion-MNIST, the
 * embedded mnist-10k subset), plain or gzip-compressed.
 *
 * A directory holds the standard four files:
 *   train-images-idx3-ubyte[.gz]  train-labels-idx1-ubyte[.gz]
 *   t10k-images-idx3-ubyte[.gz]   t10k-labels-idx1-ubyte[.gz]
 * Images: magic 2051 (0x00000803), then big-endian n, rows, cols, then n*rows*cols
 * bytes. Labels: magic 2049 (0x00000801), big-endian n, then n bytes in [0, 9].
 * Every check (magic, counts, truncation, trailing bytes, label range, images vs
 * labels count) fails with a message naming the file and what is wrong. */
#ifndef HV_TRAINER_DATA_MNIST_H
#define HV_TRAINER_DATA_MNIST_H

#include <stddef.h>

#include "dataset.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MNIST_IMAGES_MAGIC 2051u
#define MNIST_LABELS_MAGIC 2049u

/* Loads split "train" or "test" from dir into *out: n images of 1x28x28 (or whatever
 * rows x cols the file says), num_classes 10. Each file is looked up as name.gz first,
 * then name. Returns 0, or -1 with *out zeroed and a message in err. */
int dataset_load_mnist(const char *dir, const char *split, dataset_t *out, char *err,
                       size_t errlen);

/* The images and labels files dataset_load_mnist reads for split "train" or "test"
 * of dir (name.gz when it exists, else name), for messages that name them. 0, or -1
 * with a message on a bad split. */
int dataset_mnist_paths(const char *dir, const char *split, char *images, char *labels,
                        size_t len, char *err, size_t errlen);

/* Loads one images file and one labels file given by path (plain or gzip). */
int dataset_load_idx_pair(const char *images_path, const char *labels_path,
                          dataset_t *out, char *err, size_t errlen);

/* The embedded MNIST subset (8,000 train / 2,000 test): $HV_MNIST_DIR when set, else
 * workloads/data/mnist-10k in the source tree when it is there, else the installed
 * copy under <prefix>/share/hv/data/mnist-10k. Never NULL. */
const char *dataset_default_mnist_dir(void);

#ifdef __cplusplus
}
#endif
#endif /* HV_TRAINER_DATA_MNIST_H */
