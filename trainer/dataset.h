/* dataset.h: an in-memory image data set (MNIST, CIFAR) as the loaders return it:
 * pixels kept as uint8 in (N, C, H, W) order plus one uint8 label per image.
 * Normalisation to float happens per batch (trainer/batch.h), so a data set costs one
 * byte per pixel and every consumer (CNN, SVM) sees the original bytes.
 * Loaders report errors through (err, errlen): they never print or exit. */
#ifndef HV_TRAINER_DATASET_H
#define HV_TRAINER_DATASET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dataset {
  int n, c, h, w;      /* images, channels, rows, columns */
  int num_classes;     /* labels are in [0, num_classes) */
  uint8_t *pixels;     /* (n, c, h, w), owned */
  uint8_t *labels;     /* (n), owned */
} dataset_t;

/* Frees the arrays and zeroes *ds. ds may be NULL; freeing twice is harmless. */
void dataset_free(dataset_t *ds);

/* Pixels of one image: c * h * w bytes. */
static inline const uint8_t *dataset_image(const dataset_t *ds, int i) {
  return ds->pixels + (size_t)i * (size_t)(ds->c * ds->h * ds->w);
}

/* Keeps images [begin, end) of src in dst (copies; src is untouched). 0 on success,
 * -1 with a message in err on a bad range or no memory. */
int dataset_slice(const dataset_t *src, int begin, int end, dataset_t *dst, char *err,
                  size_t errlen);

/* Whether a test set fits the model trained on a training set: the same image shape
 * (channels x rows x columns), the same number of classes, and every test label below
 * it. train_name and test_name (the files, for the message) are named in it with both
 * values: "training set A has 1x28x28 images, test set B has 1x14x14: ...". 0, or -1
 * with that one line in err. */
int dataset_check_pair(const dataset_t *train, const char *train_name, const dataset_t *test,
                       const char *test_name, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* HV_TRAINER_DATASET_H */
