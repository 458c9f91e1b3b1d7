/* nn_train.h: training and scoring one MNIST net of the study (trainer's
 * model_mnist_net_create) on a list of images: SGD with momentum, mean cross-entropy,
 * batches in an order reshuffled each epoch from the training seed, and the study's
 * early stop (an epoch whose mean loss is not below tolerance x the previous epoch's
 * ends training). */
#ifndef HV_NN_TRAIN_H
#define HV_NN_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "nn_plan.h"

/* Images normalised once ((pixel/255 - mean) / std, as ToTensor + Normalize), so a
 * batch is a gather of rows. */
typedef struct nn_images {
  int n, pixels;   /* images, pixels per image (28*28) */
  float *x;        /* (n, 1, 28, 28) */
  uint8_t *y;      /* (n) */
} nn_images_t;

/* Called between steps (the rank's scheduler keeps its collectives moving). */
typedef void (*nn_poll_fn)(void *ctx);

typedef struct nn_train_opts {
  int max_epochs;
  double tolerance;
  int batch;
  nn_poll_fn poll;  /* may be NULL */
  void *poll_ctx;
} nn_train_opts_t;

/* Trains a fresh net (initialised from seed) on images idx[0..n) of d; *out is the
 * model (free with model_free), *epochs the epochs run. 0, or -1 with a message. */
int nn_train(const nn_images_t *d, const int *idx, int n, const nn_hparams_t *hp,
             const nn_train_opts_t *o, uint64_t seed, model_t **out, int *epochs, char *err,
             size_t errlen);

/* Softmax probabilities (n, 10) of images idx[0..n) (idx NULL: the first n) in
 * evaluation mode; returns the number of arg-max errors against the labels, or -1
 * when out of memory. poll (may be NULL) runs between batches: the largest nets of the
 * search space take seconds per batch. */
int nn_predict(model_t *m, const nn_images_t *d, const int *idx, int n, float *prob,
               nn_poll_fn poll, void *poll_ctx);

/* Same for raw normalised images x (n, 1, 28, 28) without labels. */
void nn_predict_raw(model_t *m, const float *x, int n, float *prob, nn_poll_fn poll,
                    void *poll_ctx);

/* Arg-max of one row of 10 probabilities (lowest index on ties). */
int nn_argmax10(const float *p);

#endif /* HV_NN_TRAIN_H */
