/* nn_plan.h: everything random in mnist_nn, derived from one seed: the k-fold split
 * of the training set, each bootstrap sample drawn within folds, the random-search
 * settings and the training seeds. A bootstrap's plan depends only on (seed, its
 * index), never on which rank runs it or when, which is what makes results identical
 * for any number of ranks. Pure functions: no MPI, no trainer state. */
#ifndef HV_NN_PLAN_H
#define HV_NN_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* One point of the random search. */
typedef struct nn_hparams {
  int n_conv, kernel, n_hidden;
  double lr, momentum;
} nn_hparams_t;

/* The search space: integers uniform in [min, max), lr = 10^U(log_lr_min, log_lr_max),
 * momentum = 10^U(log_mom_min, log_mom_max). */
typedef struct nn_space {
  int conv_min, conv_max, kernel_min, kernel_max, hidden_min, hidden_max;
  double log_lr_min, log_lr_max, log_mom_min, log_mom_max;
} nn_space_t;

/* The study's distribution: n_conv [1,1000), kernel [2,11), n_hidden [1,2000),
 * lr 10^U(-5,-1), momentum 10^U(-2,0). */
void nn_space_default(nn_space_t *s);
/* 0, or -1 with a message naming the empty or impossible range. */
int nn_space_check(const nn_space_t *s, char *err, size_t errlen);

/* A seed derived from (seed, stream): splitmix64 mixing, so nearby streams give
 * unrelated seeds. */
uint64_t nn_seed_derive(uint64_t seed, uint64_t stream);

/* Folds of n training images: fold_of[i] in [0, k) for every i; fold sizes differ by
 * at most one (the first n % k folds get one more). Depends on seed only. */
void nn_folds_assign(int n, int k, uint64_t seed, int *fold_of /* (n) */);

/* Bootstrap sample b drawn within folds: for each fold f in order, |fold f| draws
 * with replacement from the images of fold f. sample[j] is an image index and
 * sample_fold[j] its fold, so in cross-validation a drawn image and its duplicates
 * are always on the same side of the split. 0, or -1 when out of memory. */
int nn_bootstrap_draw(int n, int k, const int *fold_of, uint64_t boot_seed,
                      int *sample /* (n) */, int *sample_fold /* (n) */);

/* Setting s of the random search of bootstrap b (boot_seed). */
void nn_settings_draw(const nn_space_t *space, uint64_t boot_seed, int n_tuning,
                      nn_hparams_t *out /* (n_tuning) */);

/* The seed of bootstrap b, and the training seeds inside it (fold -1: the refit). */
uint64_t nn_boot_seed(uint64_t seed, int b);
uint64_t nn_train_seed(uint64_t boot_seed, int setting, int fold);

/* Positions of the CV split of fold f: train = positions j with sample_fold[j] != f,
 * val = those with sample_fold[j] == f (as indices into the sample). Returns the
 * number of validation positions. */
int nn_cv_split(int n, const int *sample_fold, int f, int *train_pos, int *n_train,
                int *val_pos);

#endif /* HV_NN_PLAN_H */
