/* svm_data.h: a data set as the SVM sees it: float features (n, d), standardised as
 * in the study ((pixel - 127.5) / 73.61), and uint8 labels.
 *
 * Kernel code centres the features on the training mean afterwards
 * (svm_data_centre): RBF distances do not change, but the norms shrink, which keeps
 * the |a|^2 + |b|^2 - 2 a.b expansion accurate in single precision. */
#ifndef HV_SVM_DATA_H
#define HV_SVM_DATA_H

#include <stddef.h>
#include <stdint.h>

#define SVM_PIXEL_SHIFT 127.5f
#define SVM_PIXEL_SCALE 73.61f

typedef struct svm_set {
  int n, d, ncls;
  float *x;    /* (n, d) */
  float *sq;   /* (n) squared norms, filled by svm_data_centre */
  uint8_t *y;  /* (n) in [0, ncls) */
} svm_set_t;

/* Loads split "train" or "test" of the MNIST-format directory dir, keeping the first
 * max_n images when max_n > 0. Returns 0, or -1 with a message in err. */
int svm_data_load(const char *dir, const char *split, int max_n, svm_set_t *out, char *err,
                  size_t errlen);

/* Loads both splits of dir (keeping the first train_n / test_n images when > 0) after
 * checking that they agree (dataset_check_pair: image shape, classes, test labels):
 * 0, or -1 with one line naming both files and both values. */
int svm_data_load_pair(const char *dir, int train_n, int test_n, svm_set_t *tr, svm_set_t *te,
                       char *err, size_t errlen);

/* Subtracts the mean row of s from every row of s and, when not NULL, of other (the
 * test set is centred on the training mean), and fills both sets' squared norms.
 * Returns 0, or -1 out of memory. */
int svm_data_centre(svm_set_t *s, svm_set_t *other);

/* Copies rows idx[0..m) of s into out (allocated). Returns 0, or -1 out of memory. */
int svm_data_subset(const svm_set_t *s, const int *idx, int m, svm_set_t *out);

void svm_data_free(svm_set_t *s);

#endif /* HV_SVM_DATA_H */
