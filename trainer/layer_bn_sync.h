/* layer_bn_sync.h: the reduce callback (batchnorm_sync.h's batchnorm_reduce_fn) that
 * the CPU and GPU batch-norm layers (layer_batchnorm2d.c, gpu/layer_gpu.c) hand to
 * SyncBatchNorm's kernels: it sums through the model's model_bn_sync_t, names the
 * collective after the layer ("syncbn/<layer>/<what>", the same on every rank) and
 * keeps the error for the layer's message. */
#ifndef HV_TRAINER_LAYER_BN_SYNC_H
#define HV_TRAINER_LAYER_BN_SYNC_H

#include <stdio.h>

#include "model_internal.h"

typedef struct bn_sync_ctx {
  layer_t *l;
  model_t *m;
  char err[200];
} bn_sync_ctx_t;

static inline int bn_sync_reduce(void *p, const char *what, double *v, size_t n) {
  bn_sync_ctx_t *s = p;
  char name[96];
  snprintf(name, sizeof name, "syncbn/%s/%s", s->l->name, what);
  return s->m->bn_sync.allreduce_sum(s->m->bn_sync.ctx, name, v, n, s->err, sizeof s->err);
}

#endif /* HV_TRAINER_LAYER_BN_SYNC_H */
