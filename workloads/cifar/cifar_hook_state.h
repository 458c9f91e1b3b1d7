/* cifar_hook_state.h: each rank's comm-hook state (PowerSGD's error buffers and Q,
 * int8's residuals: ddp_hook_state_*) beside cifar_ddp's checkpoints, as
 * <dir>/hook-step-<steps>.rank<R>: written by every rank when rank 0 writes
 * ckpt-step-<steps> (atomic), read back by --resume when the file names the same hook,
 * world size and state size, so that a resumed run continues the uninterrupted one.
 * Each rank keeps its newest CIFAR_CKPT_KEEP files. */
#ifndef HV_CIFAR_HOOK_STATE_H
#define HV_CIFAR_HOOK_STATE_H

#include <stddef.h>

#include "ddp.h"

/* 0 (also when the hook keeps no state), or -1 with a message. */
int cifar_hook_state_save(const char *dir, ddp_t *d, const char *hook, int rank, int world, long long step,
                          char *err, size_t errlen);

/* 0 loaded (or nothing to load: the hook keeps no state), 1 not usable (why says: no
 * file, another hook, world size or size, a damaged file). */
int cifar_hook_state_load(const char *dir, ddp_t *d, const char *hook, int rank, int world, long long step,
                          char *why, size_t len);

#endif /* HV_CIFAR_HOOK_STATE_H */
