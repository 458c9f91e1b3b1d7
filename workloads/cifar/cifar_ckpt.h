/* cifar_ckpt.h: cifar_ddp's checkpoint folder. Rank 0 writes, after every epoch and
 * when --max-steps stops a run:
 *   ckpt-step-<steps>.csv     the epoch records so far (results.csv format), then
 *   ckpt-step-<steps>.hvckpt  model, momentum, epoch, step, lr (trainer/checkpoint.h)
 * both atomic (tmp + rename), the record first so that every checkpoint has its
 * history. The newest is the one with the most steps; older pairs beyond the last
 * CIFAR_CKPT_KEEP are deleted, so a resume can fall back to the previous pair when the
 * newest is damaged. */
#ifndef HV_CIFAR_CKPT_H
#define HV_CIFAR_CKPT_H

#include <stddef.h>

#include "checkpoint.h"
#include "cifar_report.h"
#include "model.h"
#include "optim.h"

#define CIFAR_CKPT_KEEP 2

/* 0, or -1 with a message. */
int cifar_ckpt_save(const char *dir, const model_t *m, const sgd_t *opt,
                    const checkpoint_meta_t *meta, const cifar_epoch_t *hist, int n, char *err,
                    size_t errlen);

/* Loads the newest readable checkpoint in dir into m and opt, and its history (rows of
 * completed epochs, <= meta->epoch) into hist (*n rows, at most cap); its path goes to
 * path. A newer one that fails its checks (truncated, corrupt, other model) is named on
 * stderr and the previous one is tried. 0 loaded, 1 no
 * checkpoint there, -1 none readable or an error (message). */
int cifar_ckpt_resume(const char *dir, model_t *m, sgd_t *opt, checkpoint_meta_t *meta,
                      cifar_epoch_t *hist, int cap, int *n, char *path, size_t len, char *err,
                      size_t errlen);

/* The step of the newest checkpoint in dir (by name, unread), or -1. */
long long cifar_ckpt_newest(const char *dir);

#endif /* HV_CIFAR_CKPT_H */
