/* cifar_ckpt.c: naming, finding, pruning and loading cifar_ddp's checkpoints (see
 * cifar_ckpt.h). The step count is in the file name, zero-padded, so "newest" is the
 * largest name and needs no clock: file times lie after a copy between file systems. */
#include "cifar_ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STEP_DIGITS = 12 };

static int is_ckpt_name(const char *name, long long *step) {
  int used = 0;
  return sscanf(name, "ckpt-step-%12lld.hvckpt%n", step, &used) == 1 &&
         strlen(name) == (size_t)STEP_DIGITS + 17 && name[used] == '\0';
}

static int cmp_desc(const void *a, const void *b) {
  const long long x = *(const long long *)a, y = *(const long long *)b;
  return (x < y) - (x > y);
}

/* Steps of the checkpoints in dir, descending. Returns the count or -1. */
static int list_steps(const char *dir, long long *steps, int cap, char *err, size_t errlen) {
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(err, errlen, "--checkpoint-dir %s: %s", dir, strerror(errno));
    return -1;
  }
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    long long s;
    if (!is_ckpt_name(e->d_name, &s)) continue;
    if (n < cap) {
      steps[n++] = s;
      continue;
    }
    /* More than cap: keep the largest cap (replace the smallest). */
    int lo = 0;
    for (int i = 1; i < n; i++)
      if (steps[i] < steps[lo]) lo = i;
    if (s > steps[lo]) steps[lo] = s;
  }
  closedir(d);
  qsort(steps, (size_t)n, sizeof *steps, cmp_desc);
  return n;
}

long long cifar_ckpt_newest(const char *dir) {
  long long steps[64];
  char err[64];
  return list_steps(dir, steps, 64, err, sizeof err) > 0 ? steps[0] : -1;
}

static void ckpt_path(const char *dir, long long step, const char *ext, char *path, size_t len) {
  snprintf(path, len, "%s/ckpt-step-%0*lld.%s", dir, STEP_DIGITS, step, ext);
}

int cifar_ckpt_save(const char *dir, const model_t *m, const sgd_t *opt,
                    const checkpoint_meta_t *meta, const cifar_epoch_t *hist, int n, char *err,
                    size_t errlen) {
  char path[4200];
  if (cifar_report_mkdirs(dir, err, errlen)) return -1;
  ckpt_path(dir, (long long)meta->step, "csv", path, sizeof path);
  if (cifar_report_write_csv(path, hist, n, err, errlen)) return -1;
  ckpt_path(dir, (long long)meta->step, "hvckpt", path, sizeof path);
  if (checkpoint_save(path, m, opt, meta, err, errlen)) return -1;
  long long steps[64];
  const int k = list_steps(dir, steps, 64, err, errlen);
  for (int i = CIFAR_CKPT_KEEP; i < k; i++) {
    ckpt_path(dir, steps[i], "hvckpt", path, sizeof path);
    remove(path);
    ckpt_path(dir, steps[i], "csv", path, sizeof path);
    remove(path);
  }
  return k < 0 ? -1 : 0;
}

static int load_one(const char *path, model_t *m, sgd_t *opt, checkpoint_meta_t *meta,
                    cifar_epoch_t *hist, int cap, int *n, char *err, size_t errlen) {
  *n = 0;
  if (checkpoint_load(path, m, opt, meta, err, errlen)) return -1;
  char csv[4200];
  snprintf(csv, sizeof csv, "%s", path);
  char *dot = strrchr(csv, '.');
  if (dot) snprintf(dot, sizeof csv - (size_t)(dot - csv), ".csv");
  const int rows = cifar_report_read_csv(csv, hist, cap, err, errlen);
  if (rows < 0) return -1;
  /* A checkpoint taken mid-epoch (--max-steps) has that epoch's partial row: the
   * resumed run finishes the epoch and writes the whole row. */
  int keep = 0;
  while (keep < rows && hist[keep].epoch <= meta->epoch) keep++;
  *n = keep;
  return 0;
}

int cifar_ckpt_resume(const char *dir, model_t *m, sgd_t *opt, checkpoint_meta_t *meta,
                      cifar_epoch_t *hist, int cap, int *n, char *path, size_t len, char *err,
                      size_t errlen) {
  long long steps[64];
  const int k = list_steps(dir, steps, 64, err, errlen);
  if (k < 0) return -1;
  if (k == 0) return 1;
  char why[4600] = "";
  for (int i = 0; i < k; i++) {
    ckpt_path(dir, steps[i], "hvckpt", path, len);
    if (load_one(path, m, opt, meta, hist, cap, n, why, sizeof why) == 0) return 0;
    /* A crash while the file system lost the newest write, or a damaged disk: the
     * previous checkpoint is the way on. The bad file stays where it is (nothing is
     * deleted on a guess; a run of the same configuration overwrites it when it reaches
     * that step again). */
    fprintf(stderr, "cifar_ddp: --resume: %s\n", why);
    if (i + 1 < k) fprintf(stderr, "cifar_ddp: --resume: trying the previous checkpoint\n");
  }
  snprintf(err, errlen, "--resume: no readable checkpoint in %s (%d tried; the last: %s)", dir, k,
           why);
  return -1;
}
