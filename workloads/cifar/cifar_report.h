/* cifar_report.h: what cifar_ddp tells the user (rank 0 only): the progress bar on a
 * terminal or plain progress lines otherwise, and the --results files: results.json
 * (configuration, every epoch, summary), results.csv (one row per epoch, also the
 * history file a resumed run reads back) and gnuplot PNG plots of loss, accuracy and
 * throughput per epoch. */
#ifndef HV_CIFAR_REPORT_H
#define HV_CIFAR_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "cifar_args.h"

typedef struct cifar_epoch {
  int epoch;              /* 1-based */
  double train_loss;      /* mean over the epoch's training images, all ranks */
  double train_acc;
  double val_loss, val_acc;  /* whole test set, each image once */
  double seconds;         /* training time of the epoch (validation excluded) */
  double images_per_s;    /* training images of all ranks / seconds */
  double lr;              /* learning rate of the epoch's last step */
  long long steps;        /* optimiser steps taken after this epoch, in all */
  long long images;       /* training images of all ranks in this epoch */
  double cpu_seconds;     /* CPU time of the epoch's training, summed over ranks (all
                             threads: compute, hv's engine, the batch prefetcher) */
} cifar_epoch_t;

typedef struct cifar_run_info {
  int world, nodes, ranks_per_node;
  const char *device;     /* "cpu" */
  const char *data_dir;
  long long n_params;
  int local_batch, global_batch, steps_per_epoch, train_images, test_images;
  double lr_peak;
  double total_seconds, images_per_s;  /* summary */
  int stopped_early, resumed_from_epoch;
  double time_to_target_s; /* when validation first reached --target-accuracy; -1: never */
  double time_to_target_train_s; /* the same without the time spent validating */
  long long target_step;    /* the optimiser steps taken then */
} cifar_run_info_t;

/* Progress within an epoch; `tty` draws a bar with \r, else a plain line every 10%. */
typedef struct cifar_progress {
  int tty, enabled;
  int epoch, epochs, steps;
  int next_plain;         /* next step that gets a plain line */
  double t0, last_draw;
} cifar_progress_t;

void cifar_progress_start(cifar_progress_t *p, int enabled, int epoch, int epochs, int steps,
                          double now);
void cifar_progress_update(cifar_progress_t *p, int step, double loss, long long images,
                           double now);
void cifar_progress_end(cifar_progress_t *p);

/* results.csv rows: written whole (tmp + rename), read back by a resumed run. */
int cifar_report_write_csv(const char *path, const cifar_epoch_t *e, int n, char *err,
                           size_t errlen);
/* Reads up to cap rows; returns the count, or -1 with a message. */
int cifar_report_read_csv(const char *path, cifar_epoch_t *e, int cap, char *err,
                          size_t errlen);

/* DIR/results.json, DIR/results.csv and (plots) DIR/{loss,accuracy,throughput}.png.
 * A missing gnuplot is a warning in warn (""), not an error. 0, or -1 with err. */
int cifar_report_write_results(const char *dir, const cifar_args_t *a,
                               const cifar_run_info_t *info, const cifar_epoch_t *e, int n,
                               char *warn, size_t warnlen, char *err, size_t errlen);

/* mkdir -p. 0, or -1 with a message. */
int cifar_report_mkdirs(const char *path, char *err, size_t errlen);

#endif /* HV_CIFAR_REPORT_H */
