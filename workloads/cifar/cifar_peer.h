/* cifar_peer.h: peer checkpoints in memory, for jobs that hvrun --restarts relaunches
 * (issue 21). Every K steps the training state is copied into each node's memory
 * (/dev/shm/hv-peer-<run>/, one copy per node, written by its local rank 0), so that
 * after a lost rank or node the relaunched job resumes from the last copy a surviving
 * node holds, losing at most K steps, without touching disk. What is copied:
 *   - what every rank holds identically under DDP (parameters, momentum, step, epoch,
 *     learning rate, the epoch records): from the node's own replica;
 *   - what differs per rank: batch-norm running statistics (only rank 0's count: they
 *     are broadcast from rank 0 through hv, as DDP does before evaluating) and each
 *     rank's partial sums of the epoch in progress (gathered through hv, so every node
 *     holds every rank's): the resumed epoch reports the same loss and accuracy.
 * The files are cifar_ddp's checkpoint pair (cifar_ckpt.h) plus ckpt-step-N.partial;
 * the copy is CRC-checked when loaded, and a damaged one falls back to the previous
 * copy, then to --checkpoint-dir. Active when HV_RUN_DIR is set (hvrun --restarts). */
#ifndef HV_CIFAR_PEER_H
#define HV_CIFAR_PEER_H

#include <stddef.h>

#include "cifar_report.h"
#include "cifar_train.h"
#include "checkpoint.h"
#include "hv.h"

typedef struct cifar_peer {
  int active;       /* HV_RUN_DIR set and --peer-checkpoint-every not 0 */
  int every;        /* steps between copies (with auto: 1 until decided) */
  int deciding;     /* auto: still measuring */
  int writer;       /* this rank writes its node's copy (local rank 0) */
  char dir[4096];   /* /dev/shm/hv-peer-<run> */
  double save_s, step_s; /* auto: measured cost of one copy, of one step */
  int measured;
  double last_step_end;
  long long copies;
} cifar_peer_t;

/* Reads HV_RUN_DIR and the flag. 0, or -1 with a message. */
int cifar_peer_init(cifar_peer_t *p, int every_flag, hv_comm_t *comm, char *err, size_t errlen);

/* On a relaunch (collective): finds the newest copy over all nodes and, when it is
 * not older than disk_step (-1: none), brings it into rank 0's node. Returns its step
 * on every rank (then rank 0 resumes from p->dir), -1 when there is none to use, -2 on
 * an hv error (message). */
long long cifar_peer_gather(cifar_peer_t *p, hv_comm_t *comm, long long disk_step, char *err, size_t errlen);

/* After each optimiser step but an epoch's last (collective when a copy is due): the
 * copy of step t->step in epoch `epoch` (0-based, in progress) with the completed
 * epochs' records and this rank's partial sums so far. 0, or -1 with a message. */
int cifar_peer_after_step(cifar_peer_t *p, cifar_train_t *t, int epoch, const cifar_epoch_t *hist,
                          int n_hist, const double partial[4], char *err, size_t errlen);

/* Rank 0, after resuming from the copy of `step` in p->dir: every rank's partial sums
 * of the epoch in progress (loss, correct, images counted, cpu seconds; 4 per rank)
 * into table, when the copy was written by `size` ranks; else zeros. 1 found, 0 not. */
int cifar_peer_partial(const cifar_peer_t *p, long long step, int size, double *table);

/* After an epoch's evaluation and records (collective): a copy with the epoch
 * complete, so that the copy of its last step is never one whose epoch must be
 * finished by the resumed run. 0, or -1 with a message. */
int cifar_peer_after_epoch(cifar_peer_t *p, cifar_train_t *t, int epochs_done, const cifar_epoch_t *hist,
                           int n_hist, char *err, size_t errlen);

/* At the end of a job that finished: the node's copies are removed. */
void cifar_peer_finish(cifar_peer_t *p);

#endif /* HV_CIFAR_PEER_H */
