/* cifar_peer.c: peer checkpoints in memory (see cifar_peer.h): the copy every K steps,
 * the choice of K (auto: every step while a copy costs under 5% of a step), and on a
 * relaunch the search over all nodes for the newest copy. */
#define _GNU_SOURCE
#include "cifar_peer.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "cifar_ckpt.h"
#include "clock.h"

/* A copy may cost this fraction of a step (issue 21's budget). */
#define PEER_BUDGET 0.05
/* Steps measured before auto settles K. */
#define PEER_MEASURED_STEPS 3

int cifar_peer_init(cifar_peer_t *p, int every_flag, hv_comm_t *comm, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  const char *run = getenv("HV_RUN_DIR");
  if (!run || !*run || every_flag == 0) return 0;
  const char *base = strrchr(run, '/');
  base = base && base[1] ? base + 1 : run;
  if ((size_t)snprintf(p->dir, sizeof p->dir, "/dev/shm/hv-peer-%s", base) >= sizeof p->dir) {
    snprintf(err, errlen, "HV_RUN_DIR=%s: name too long for a peer checkpoint folder", run);
    return -1;
  }
  int local = 0;
  hv_comm_local_rank(comm, &local);
  p->active = 1;
  p->writer = local == 0;
  p->every = every_flag > 0 ? every_flag : 1;
  p->deciding = every_flag < 0;
  return 0;
}

static void partial_path(const cifar_peer_t *p, long long step, char *out, size_t len) {
  snprintf(out, len, "%s/ckpt-step-%012lld.partial", p->dir, step);
}

/* Removes .partial files whose checkpoint was pruned (cifar_ckpt_save keeps two). */
static void prune_partials(const cifar_peer_t *p) {
  DIR *d = opendir(p->dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    long long step;
    int used = 0;
    if (sscanf(e->d_name, "ckpt-step-%12lld.partial%n", &step, &used) != 1 || e->d_name[used]) continue;
    char ckpt[4200], part[4200];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-step-%012lld.hvckpt", p->dir, step);
    if (access(ckpt, F_OK) != 0) {
      partial_path(p, step, part, sizeof part);
      unlink(part);
    }
  }
  closedir(d);
}

static int save_copy(cifar_peer_t *p, cifar_train_t *t, int epoch, const cifar_epoch_t *hist, int n_hist,
                     const double *table, char *err, size_t errlen) {
  char path[4200];
  atomic_file_t af;
  partial_path(p, t->step, path, sizeof path);
  if (cifar_report_mkdirs(p->dir, err, errlen) || atomic_file_open(&af, path, err, errlen)) return -1;
  fprintf(af.f, "hv-peer-partial 1 size %d\n", t->size);
  for (int r = 0; r < t->size; r++)
    fprintf(af.f, "%.17g %.17g %.17g %.17g\n", table[4 * r], table[4 * r + 1], table[4 * r + 2], table[4 * r + 3]);
  if (atomic_file_commit(&af, 0, err, errlen)) return -1;
  checkpoint_meta_t meta = {.epoch = epoch, .step = t->step, .lr = t->opt.lr};
  if (cifar_ckpt_save(p->dir, t->model, &t->opt, &meta, hist, n_hist, err, errlen)) return -1;
  prune_partials(p);
  return 0;
}

/* One copy (collective): rank 0's running statistics on every rank, every rank's
 * partial sums on every rank, then each node's writer saves; auto settles K here. */
static int peer_copy(cifar_peer_t *p, cifar_train_t *t, int epochs_done, const cifar_epoch_t *hist, int n_hist,
                     const double partial[4], char *err, size_t errlen) {
  if (ddp_broadcast_buffers(t->ddp)) {
    snprintf(err, errlen, "peer checkpoint: %s", ddp_error(t->ddp));
    return -1;
  }
  double *table = malloc((size_t)t->size * 4 * sizeof *table);
  if (!table) {
    snprintf(err, errlen, "peer checkpoint: out of memory");
    return -1;
  }
  hv_result_t r = hv_allgather(t->comm, "cifar.peer.partial", partial, table, 4, HV_FLOAT64);
  if (r != HV_SUCCESS) {
    snprintf(err, errlen, "peer checkpoint: %s (%s)", hv_strerror(r), hv_comm_last_error(t->comm));
    free(table);
    return -1;
  }
  const double t0 = now_s();
  int rc = p->writer ? save_copy(p, t, epochs_done, hist, n_hist, table, err, errlen) : 0;
  free(table);
  if (rc) return -1;
  p->copies++;
  p->save_s += now_s() - t0;
  if (p->deciding && p->measured >= PEER_MEASURED_STEPS) {
    /* Rank 0 (a writer) decides for all: every rank must copy at the same steps. */
    int64_t k = 1;
    if (t->rank == 0) {
      const double save = p->save_s / (double)p->copies, step = p->step_s / p->measured;
      k = step > 0 && save > PEER_BUDGET * step ? (int64_t)ceil(save / (PEER_BUDGET * step)) : 1;
      printf("Peer checkpoints: every %lld step%s in %s on each node (a copy takes %.1f ms, a step %.1f ms)\n",
             (long long)k, k == 1 ? "" : "s", p->dir, 1e3 * save, 1e3 * step);
      fflush(stdout);
    }
    if ((r = hv_broadcast(t->comm, "cifar.peer.every", &k, 1, HV_INT64, 0)) != HV_SUCCESS) {
      snprintf(err, errlen, "peer checkpoint: %s (%s)", hv_strerror(r), hv_comm_last_error(t->comm));
      return -1;
    }
    p->every = (int)k;
    p->deciding = 0;
  }
  return 0;
}

int cifar_peer_after_step(cifar_peer_t *p, cifar_train_t *t, int epoch, const cifar_epoch_t *hist,
                          int n_hist, const double partial[4], char *err, size_t errlen) {
  if (!p->active) return 0;
  const double now = now_s();
  if (p->deciding && p->last_step_end > 0) p->step_s += now - p->last_step_end, p->measured++;
  int rc = t->step % p->every == 0 ? peer_copy(p, t, epoch, hist, n_hist, partial, err, errlen) : 0;
  p->last_step_end = now_s(); /* a copy is not part of the next step's time */
  return rc;
}

int cifar_peer_after_epoch(cifar_peer_t *p, cifar_train_t *t, int epochs_done, const cifar_epoch_t *hist,
                           int n_hist, char *err, size_t errlen) {
  if (!p->active) return 0;
  const double none[4] = {0, 0, 0, 0};
  int rc = peer_copy(p, t, epochs_done, hist, n_hist, none, err, errlen);
  p->last_step_end = 0; /* evaluation is not a step */
  return rc;
}

/* Reads a whole file (a copy on this node) into memory; NULL when absent. */
static uint8_t *slurp(const char *path, int64_t *len) {
  FILE *f = fopen(path, "rb");
  *len = 0;
  if (!f) return NULL;
  uint8_t *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) == (size_t)n)
      *len = n;
    else
      free(buf), buf = NULL;
  }
  fclose(f);
  return buf;
}

static int spill(const char *path, const uint8_t *data, int64_t len, char *err, size_t errlen) {
  atomic_file_t af;
  if (atomic_file_open(&af, path, err, errlen)) return -1;
  if (fwrite(data, 1, (size_t)len, af.f) != (size_t)len) {
    snprintf(err, errlen, "%s: write failed", path);
    atomic_file_abort(&af);
    return -1;
  }
  return atomic_file_commit(&af, 0, err, errlen);
}

long long cifar_peer_gather(cifar_peer_t *p, hv_comm_t *comm, long long disk_step, char *err, size_t errlen) {
  int rank, size;
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  int64_t mine = p->active && p->writer ? cifar_ckpt_newest(p->dir) : -1;
  int64_t *all = malloc((size_t)size * sizeof *all);
  if (!all) {
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  hv_result_t r = hv_allgather(comm, "cifar.peer.newest", &mine, all, 1, HV_INT64);
  int holder = -1;
  for (int q = 0; r == HV_SUCCESS && q < size; q++)
    if (all[q] >= 0 && (holder < 0 || all[q] > all[holder])) holder = q;
  const long long step = holder >= 0 ? all[holder] : -1;
  free(all);
  if (r != HV_SUCCESS) {
    snprintf(err, errlen, "%s (%s)", hv_strerror(r), hv_comm_last_error(comm));
    return -2;
  }
  if (step < 0 || step < disk_step) return -1;
  if (holder == 0) return step; /* rank 0's node has it */
  /* Another node holds the newest copy: its three files travel to rank 0's node. */
  static const char *const ext[3] = {"hvckpt", "csv", "partial"};
  for (int i = 0; i < 3; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/ckpt-step-%012lld.%s", p->dir, step, ext[i]);
    int64_t len = 0;
    uint8_t *data = rank == holder ? slurp(path, &len) : NULL;
    if ((r = hv_broadcast(comm, "cifar.peer.len", &len, 1, HV_INT64, holder)) != HV_SUCCESS) break;
    int ok = rank == holder || len == 0 || (data = malloc((size_t)len)) != NULL, agree = 0;
    if ((r = hv_allreduce(comm, "cifar.peer.ok", &ok, &agree, 1, HV_INT32, HV_MIN, NULL)) != HV_SUCCESS ||
        !agree) {
      free(data);
      if (r == HV_SUCCESS) snprintf(err, errlen, "out of memory for a %lld-byte peer checkpoint", (long long)len);
      if (r == HV_SUCCESS && rank == 0) fprintf(stderr, "cifar_ddp: %s\n", err);
      return r == HV_SUCCESS ? -1 : -2;
    }
    if (len > 0 && (r = hv_broadcast(comm, "cifar.peer.bytes", data, (size_t)len, HV_UINT8, holder)) != HV_SUCCESS) {
      free(data);
      break;
    }
    int wrote = 1, all_wrote = 0;
    if (rank == 0 && len > 0)
      wrote = cifar_report_mkdirs(p->dir, err, errlen) == 0 && spill(path, data, len, err, errlen) == 0;
    free(data);
    if ((r = hv_allreduce(comm, "cifar.peer.wrote", &wrote, &all_wrote, 1, HV_INT32, HV_MIN, NULL)) != HV_SUCCESS)
      break;
    if (!all_wrote) {
      if (rank == 0) fprintf(stderr, "cifar_ddp: peer checkpoint of step %lld not usable here: %s\n", step, err);
      return -1;
    }
  }
  if (r != HV_SUCCESS) {
    snprintf(err, errlen, "%s (%s)", hv_strerror(r), hv_comm_last_error(comm));
    return -2;
  }
  return step;
}

int cifar_peer_partial(const cifar_peer_t *p, long long step, int size, double *table) {
  char path[4200];
  partial_path(p, step, path, sizeof path);
  memset(table, 0, (size_t)size * 4 * sizeof *table);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = 0, ok = fscanf(f, "hv-peer-partial 1 size %d", &n) == 1 && n == size;
  for (int r = 0; ok && r < size; r++)
    ok = fscanf(f, "%lg %lg %lg %lg", &table[4 * r], &table[4 * r + 1], &table[4 * r + 2], &table[4 * r + 3]) == 4;
  fclose(f);
  if (!ok) memset(table, 0, (size_t)size * 4 * sizeof *table);
  return ok;
}

void cifar_peer_finish(cifar_peer_t *p) {
  if (!p->active || !p->writer) return;
  DIR *d = opendir(p->dir);
  if (!d) return;
  struct dirent *e;
  char path[4400];
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, "ckpt-step-", 10)) {
      snprintf(path, sizeof path, "%s/%s", p->dir, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(p->dir);
}
