/* self_check.c: `hvrun --check`, a self-test of the job through libhvcoll.
 *
 * Every rank initialises hv, runs exact float32 allreduces (values (rank+1)*k with
 * small k, so every summation order gives the same sum), and compares hv's view of
 * the job (rank, size, local size from MPI_COMM_TYPE_SHARED) with the launcher's.
 * A fixed-size record per rank is then allgathered, and rank 0 prints one line per
 * node (ranks, GPUs, cores, the allreduce algorithms that ran and whether the node's
 * shared memory is on, and why not: a /dev/shm too small is a silent slowdown
 * otherwise; pass/fail) and a summary. Every rank exits with the same
 * code, so srun / mpirun report the result whichever rank they look at.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hv.h"
#include "hvrun.h"

typedef struct {
  int32_t rank, local_rank, local_size, hv_local_size, gpu, cores, oversubscribed, ok;
  char host[64];
  char cpus[64];
  char why[128];
  char algos[64]; /* "shm x3": the allreduce algorithms that ran, and how often */
  char shm[192];  /* "shared memory on", or off and why */
} self_check_rec_t;

/* What ran (hv_comm_allreduce_count) and the node's shared memory, for the node's line. */
static void self_check_what_ran(hv_comm_t *comm, self_check_rec_t *me) {
  static const char *const names[] = {"shm", "hier_shm", "hier", "ring", "rd", "rab", "2d", "mpi"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    uint64_t n = 0;
    size_t l = strlen(me->algos);
    if (hv_comm_allreduce_count(comm, names[i], &n) == HV_SUCCESS && n)
      snprintf(me->algos + l, sizeof(me->algos) - l, "%s%s x%llu", l ? ", " : "", names[i], (unsigned long long)n);
  }
  if (!me->algos[0]) snprintf(me->algos, sizeof(me->algos), "none (one rank)");
  int on = 0;
  char why[512] = "";
  hv_comm_shm_status(comm, &on, why, sizeof(why));
  if (on) snprintf(me->shm, sizeof(me->shm), "shared memory on");
  else snprintf(me->shm, sizeof(me->shm), "shared memory off (%.160s)", why);
}

/* One exact allreduce of count floats; returns 0 or writes the first wrong element. */
static int self_check_allreduce(hv_comm_t *comm, int rank, int size, size_t count, char *why, size_t len) {
  float *buf = malloc((count ? count : 1) * sizeof(float));
  if (!buf) {
    snprintf(why, len, "out of memory for %zu floats", count);
    return -1;
  }
  for (size_t i = 0; i < count; i++) buf[i] = (float)((rank + 1) * (int)(i % 7 + 1));
  char name[64];
  snprintf(name, sizeof(name), "hvrun.check.%zu", count);
  hv_result_t r = hv_allreduce(comm, name, buf, buf, count, HV_FLOAT32, HV_SUM, NULL);
  int rc = 0;
  if (r != HV_SUCCESS) {
    snprintf(why, len, "allreduce of %zu floats failed: %s %s", count, hv_strerror(r), hv_comm_last_error(comm));
    rc = -1;
  }
  for (size_t i = 0; rc == 0 && i < count; i++) {
    float want = (float)((int)(i % 7 + 1) * size * (size + 1) / 2);
    if (buf[i] != want) {
      snprintf(why, len, "allreduce of %zu floats: element %zu is %g, expected %g", count, i, (double)buf[i],
               (double)want);
      rc = -1;
    }
  }
  free(buf);
  return rc;
}

static void self_check_print_nodes(const self_check_rec_t *all, int size, double seconds) {
  int *done = calloc((size_t)size, sizeof(int));
  int nodes = 0, failed = 0;
  for (int r = 0; r < size; r++) {
    if (done[r]) continue;
    char ranks[256] = "", cpus[512] = "", gpus[128] = "";
    int n = 0, ok = 1, over = 0;
    for (int q = r; q < size; q++) {
      if (done[q] || strcmp(all[q].host, all[r].host) != 0) continue;
      done[q] = 1;
      n++;
      ok &= all[q].ok;
      over |= all[q].oversubscribed;
      size_t l = strlen(ranks);
      snprintf(ranks + l, sizeof(ranks) - l, "%s%d", l ? "," : "", (int)all[q].rank);
      l = strlen(cpus);
      snprintf(cpus + l, sizeof(cpus) - l, "%s%s", l ? " " : "", all[q].cpus);
      l = strlen(gpus);
      if (all[q].gpu >= 0) snprintf(gpus + l, sizeof(gpus) - l, "%s%d", l ? "," : "", (int)all[q].gpu);
      if (!all[q].ok) printf("hvrun --check: rank %d on %s FAILED: %s\n", (int)all[q].rank, all[q].host, all[q].why);
    }
    nodes++;
    failed += !ok;
    /* The node's first rank speaks for it: the ranks of a node agree on shared memory. */
    printf("hvrun --check: node %s: %d rank%s (%s), GPUs %s, PUs per rank [%s]%s, allreduce: %s, %s: self-test %s\n",
           all[r].host, n, n == 1 ? "" : "s", ranks, gpus[0] ? gpus : "none", cpus, over ? ", oversubscribed" : "",
           all[r].algos, all[r].shm, ok ? "passed" : "FAILED");
  }
  printf("hvrun --check: %d rank%s on %d node%s: %s (%.3f s)\n", size, size == 1 ? "" : "s", nodes,
         nodes == 1 ? "" : "s",
         failed ? "FAILED" : "PASSED", seconds);
  fflush(stdout);
  free(done);
}

int self_check_run(const hvrun_task_t *task, const hv_topo_t *topo, const hv_topo_binding_t *b) {
  double t0 = now_s();
  hv_comm_t *comm = NULL;
  hv_result_t r = hv_init(NULL, NULL, &comm);
  if (r != HV_SUCCESS) {
    hvrun_warn(task, "--check: hv_init failed: %s %s", hv_strerror(r), hv_comm_last_error(NULL));
    return 1;
  }
  self_check_rec_t me;
  memset(&me, 0, sizeof(me));
  int rank = -1, size = 0, local_size = 0;
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  hv_comm_local_size(comm, &local_size);
  me.rank = rank;
  me.local_rank = task->local_rank;
  me.local_size = task->local_size;
  me.hv_local_size = local_size;
  me.gpu = b->gpu;
  me.cores = b->core_count;
  me.oversubscribed = b->oversubscribed;
  me.ok = 1;
  snprintf(me.host, sizeof(me.host), "%s", task->host);
  snprintf(me.cpus, sizeof(me.cpus), "%.63s", b->cpulist); /* long lists are cut: display only */
  (void)topo;
  if (rank != task->rank || size != task->size || local_size != task->local_size) {
    snprintf(me.why, sizeof(me.why), "hv sees rank %d/%d local size %d, the launcher said %d/%d local size %d",
             rank, size, local_size, task->rank, task->size, task->local_size);
    me.ok = 0;
  }
  static const size_t counts[] = {1, 7, 1u << 18};
  for (size_t i = 0; me.ok && i < sizeof(counts) / sizeof(counts[0]); i++)
    if (self_check_allreduce(comm, rank, size, counts[i], me.why, sizeof(me.why)) != 0) me.ok = 0;
  self_check_what_ran(comm, &me);

  self_check_rec_t *all = calloc((size_t)size, sizeof(*all));
  int rc = 1;
  if (all) {
    r = hv_allgather(comm, "hvrun.check.records", &me, all, sizeof(me), HV_UINT8);
    if (r != HV_SUCCESS) {
      hvrun_warn(task, "--check: allgather failed: %s %s", hv_strerror(r), hv_comm_last_error(comm));
    } else {
      rc = 0;
      for (int q = 0; q < size; q++)
        if (!all[q].ok) rc = 1;
      if (rank == 0) self_check_print_nodes(all, size, now_s() - t0);
    }
    free(all);
  }
  hv_shutdown(comm);
  return rc;
}
