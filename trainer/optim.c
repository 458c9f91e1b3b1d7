/* optim.c: SGD state and step, learning-rate schedules. */
#include "optim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

int sgd_init(sgd_t *opt, const model_t *m, double lr, double momentum, double weight_decay,
             int nesterov, char *err, size_t errlen) {
  memset(opt, 0, sizeof *opt);
  if (lr < 0 || momentum < 0 || weight_decay < 0 || (nesterov && momentum <= 0)) {
    snprintf(err, errlen,
             "SGD: lr %g, momentum %g, weight decay %g must be >= 0; Nesterov needs momentum > 0",
             lr, momentum, weight_decay);
    return -1;
  }
  opt->lr = lr;
  opt->momentum = momentum;
  opt->weight_decay = weight_decay;
  opt->nesterov = nesterov;
  opt->n = m->n_params;
  opt->dev = m->dev;
  opt->momentum_buf = opt->dev->alloc_zeroed((opt->n + 1) * sizeof(real_t));
  if (!opt->momentum_buf) {
    snprintf(err, errlen, "SGD: out of memory for %zu momentum values", opt->n);
    return -1;
  }
  return 0;
}

void sgd_free(sgd_t *opt) {
  if (opt->dev) opt->dev->release(opt->momentum_buf); /* else never initialised */
  memset(opt, 0, sizeof *opt);
}

void sgd_step(sgd_t *opt, model_t *m) {
  int first = !opt->has_buf;
  opt->dev->sgd_update(opt->n, m->params, m->grads, opt->momentum_buf, (real_t)opt->lr, (real_t)opt->momentum,
                       (real_t)opt->weight_decay, opt->nesterov, first);
  if (opt->momentum != 0) opt->has_buf = 1;
  opt->steps++;
}

double lr_peak(const lr_schedule_t *s) {
  if (s->base_batch <= 0 || s->global_batch <= 0) return s->base_lr;
  return s->base_lr * (double)s->global_batch / (double)s->base_batch;
}

double lr_at(const lr_schedule_t *s, double epoch) {
  const double peak = lr_peak(s);
  if (s->warmup_epochs > 0 && epoch < s->warmup_epochs)
    return s->base_lr + (peak - s->base_lr) * epoch / s->warmup_epochs;
  const double t = epoch - (s->warmup_epochs > 0 ? s->warmup_epochs : 0);
  switch (s->kind) {
    case LR_STEP: {
      double lr = peak;
      for (int i = 0; i < s->n_milestones; i++)
        if (epoch >= s->milestones[i]) lr *= s->step_gamma;
      return lr;
    }
    case LR_COSINE: {
      const double span = s->total_epochs - (s->warmup_epochs > 0 ? s->warmup_epochs : 0);
      if (span <= 0 || t >= span) return 0;
      return 0.5 * peak * (1 + cos(3.14159265358979323846 * t / span));
    }
    case LR_CONSTANT:
    default:
      return peak;
  }
}

int lr_kind_parse(const char *name, lr_kind_t *kind) {
  if (!strcmp(name, "constant")) *kind = LR_CONSTANT;
  else if (!strcmp(name, "step")) *kind = LR_STEP;
  else if (!strcmp(name, "cosine")) *kind = LR_COSINE;
  else return -1;
  return 0;
}
