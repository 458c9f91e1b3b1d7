/* shm_cma.c: whether the ranks of a node may use cross-memory attach (CMA:
 * process_vm_readv/writev, one kernel copy straight between two processes' memory), which
 * the single-copy allreduce (allreduce_shm_cma.c) needs. Tried once when the node's
 * shared memory is set up, by doing it: every local rank publishes its pid and the
 * address of a word holding a known value, reads every peer's word, and the node
 * agrees (a minimum over the local ranks) so that all of them take the same path.
 * What refuses it: yama's ptrace_scope (1 allows only a process's descendants; MPI
 * ranks are siblings), a container's seccomp filter (Docker's default profile denies
 * the calls without CAP_SYS_PTRACE), or a kernel built without them. A refusal is not
 * an error: the allreduce copies through the slots as before. */
#define _GNU_SOURCE /* process_vm_readv */
#include "shm_region.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* The word a peer reads: a value it can check, different for every process. */
static uint64_t probe_value(long pid) { return 0x9E3779B97F4A7C15ull ^ (uint64_t)pid; }

/* Reads the 8 bytes at addr in process pid; 0 on success, else an errno. */
static int probe_read(long pid, uint64_t addr, uint64_t *out) {
  struct iovec local = {out, sizeof *out}, remote = {(void *)(uintptr_t)addr, sizeof *out};
  ssize_t got = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
  if (got == (ssize_t)sizeof *out) return 0;
  return got < 0 ? errno : EIO;
}

/* yama's setting, for the message ("" where the file does not exist). */
static void ptrace_scope_note(char *out, size_t len) {
  out[0] = '\0';
  FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
  if (!f) return;
  int scope = -1;
  if (fscanf(f, "%d", &scope) == 1)
    snprintf(out, len, "; /proc/sys/kernel/yama/ptrace_scope is %d%s", scope,
             scope >= 1 ? " (0 lets a user's processes read each other's memory)" : "");
  fclose(f);
}

hv_result_t hv__shm_cma_probe(hv__shm_t *shm, const hv__algo_host_t *host, MPI_Comm local, int want, char *why,
                              size_t why_len) {
  const hv__errors_t *errors = &host->errors;
  if (why_len) why[0] = '\0';
  shm->cma = 0;
  if (!want) return HV_SUCCESS; /* the same setting on every rank: nothing to agree on */
  /* On this frame, which lives until every peer has read it (the allreduce below);
   * volatile: its value must be in memory when a peer reads it. */
  volatile uint64_t word = probe_value((long)getpid());
  uint64_t mine[2] = {(uint64_t)getpid(), (uint64_t)(uintptr_t)&word};
  const int l = shm->local_size;
  uint64_t *peers = malloc(sizeof(uint64_t) * 2 * (size_t)l);
  /* Every local rank must reach the same calls: agree on the allocation first. */
  int have = peers != NULL, all_have = 0;
  HV_MPI_CHECK(errors, MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, local));
  if (!all_have) {
    free(peers);
    if (shm->local_rank == 0 && why_len) snprintf(why, why_len, "out of memory probing process_vm_readv");
    return HV_SUCCESS;
  }
  HV_MPI_CHECK(errors, MPI_Allgather(mine, 2, MPI_UINT64_T, peers, 2, MPI_UINT64_T, local));
  int err = 0, bad_rank = -1;
  for (int q = 0; q < l && !err; q++) {
    if (q == shm->local_rank) continue;
    uint64_t got = 0;
    err = probe_read((long)peers[2 * q], peers[2 * q + 1], &got);
    if (!err && got != probe_value((long)peers[2 * q])) err = EIO;
    if (err) bad_rank = q;
  }
  free(peers);
  /* The lowest failing local rank tells its errno to all, as hv__shm_create does. */
  struct { int ok, rank; } me = {err == 0, shm->local_rank}, first;
  HV_MPI_CHECK(errors, MPI_Allreduce(&me, &first, 1, MPI_2INT, MPI_MINLOC, local));
  if (first.ok) {
    shm->cma = 1;
    return HV_SUCCESS;
  }
  int info[2] = {err, bad_rank};
  HV_MPI_CHECK(errors, MPI_Bcast(info, 2, MPI_INT, first.rank, local));
  if (shm->local_rank == 0 && why_len) {
    char scope[160];
    ptrace_scope_note(scope, sizeof scope);
    snprintf(why, why_len, "local rank %d could not read local rank %d's memory with process_vm_readv: %s%s",
             first.rank, info[1], strerror(info[0]), scope);
  }
  return HV_SUCCESS;
}

void hv__shm_cma_probe_self(hv__shm_t *shm, int want) {
  volatile uint64_t word = probe_value((long)getpid());
  uint64_t got = 0;
  shm->cma = want && probe_read((long)getpid(), (uint64_t)(uintptr_t)&word, &got) == 0 &&
             got == probe_value((long)getpid());
}
