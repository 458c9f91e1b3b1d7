/* evaluate.h: loss and accuracy of a model over some images of a data set, in
 * evaluation mode (running batch-norm statistics, no dropout). Under DDP, give each
 * rank its SAMPLER_EVAL indices and sum (loss_sum, correct, count) over ranks with
 * ddp_allreduce_sum: every image is then counted exactly once. */
#ifndef HV_TRAINER_EVALUATE_H
#define HV_TRAINER_EVALUATE_H

#include "batch.h"
#include "dataset.h"
#include "model.h"

typedef struct eval_result {
  double loss_sum;  /* summed cross-entropy */
  double correct;   /* images whose arg-max is the label */
  double count;     /* images seen */
} eval_result_t;

/* Runs indices[0..count) in batches of at most m->max_batch (t: normalisation only,
 * no augmentation). 0, or -1 (out of memory, a failed forward: m->err says). A model
 * on the GPU (model_gpu.h) is evaluated there. */
int model_evaluate(model_t *m, const dataset_t *ds, const int *indices, int count,
                   const batch_transform_t *t, eval_result_t *out);

#endif /* HV_TRAINER_EVALUATE_H */
