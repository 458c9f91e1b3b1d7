/* cifar_args.h: the cifar_ddp command line. Flag names and defaults follow the
 * classic PyTorch DDP CIFAR example (--batch-size is the global batch, --base-lr the
 * learning rate of a single worker); the rest are hv's additions. Parsing never
 * prints: errors come back as one line for the caller to print once. */
#ifndef HV_CIFAR_ARGS_H
#define HV_CIFAR_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "ddp_hooks.h"

typedef struct cifar_args {
  int batch_size;          /* global: split across the ranks */
  int epochs;
  double base_lr;          /* for one worker; scaled by --lr-scaling */
  double target_accuracy;  /* early stopping: reached for `patience` epochs in a row */
  int patience;
  const char *dataset;     /* cifar10 | cifar100 | fashion-mnist */
  const char *data_dir;    /* NULL: the dataset's default */
  const char *model;       /* "wrn-D-K" */
  int depth, widen;        /* parsed from model */
  double dropout;
  int lr_linear_scaling;   /* --lr-scaling linear (1) | none (0) */
  double warmup_epochs;
  const char *lr_schedule; /* constant | step | cosine */
  double momentum, weight_decay;
  int nesterov;
  uint64_t seed;
  const char *device;      /* cpu | cuda */
  int amp;
  const char *compression; /* none | fp16 */
  const char *comm_hook;   /* --comm-hook: NULL when not given (the default allreduce, no line) */
  ddp_hook_spec_t hook;    /* --comm-hook parsed */
  const char *checkpoint_dir; /* NULL: no checkpoints */
  int resume;
  long long max_steps;     /* 0: no limit */
  int peer_every;          /* --peer-checkpoint-every: steps between copies; 0 off, -1 auto */
  const char *results;     /* NULL: no results files */
  int quiet;
  int augment;             /* random crop (pad 4) + horizontal flip */
  int micro_batches;       /* forward/backward passes per step and rank */
  int uneven;              /* --uneven: shards without padding, ranks out of data join (ddp_join) */
  int sync_bn;             /* --sync-bn: batch statistics over all ranks (SyncBatchNorm) */
  int prefetch;            /* background batch assembly */
  int plots;
  int train_size, test_size;  /* first N images only; 0: all */
  int eval_every;          /* --eval-every: validation every N steps too (time to accuracy); 0 off */
} cifar_args_t;

/* The --help text. */
const char *cifar_args_usage(void);

/* Fills *a from argv. Returns 0 to run, 1 when --help was asked, -1 with one line in
 * err on a bad flag or value. */
int cifar_args_parse(int argc, char **argv, cifar_args_t *a, char *err, size_t errlen);

/* Default model for this build when --model is not given: small on CPU. */
const char *cifar_args_default_model(void);

#endif /* HV_CIFAR_ARGS_H */
