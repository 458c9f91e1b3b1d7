/* shm_region.h: a POSIX shared-memory region shared by the ranks of one node, for
 * the intra-node phases of allreduce on CPU buffers. Created once per communicator
 * (owner-only permissions, a name unique to the job, node and communicator) and
 * unlinked as soon as every local rank has mapped it, so nothing is left in
 * /dev/shm even when the job is killed. Holds one slot per local rank, a
 * sense-reversing barrier, and one flag per local rank, each on a cache line of its
 * own, that the allreduce (allreduce_shm.c) synchronises with instead of barriers. */
#ifndef HV_SHM_REGION_H
#define HV_SHM_REGION_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>

#include "host.h"
#include "hv.h"

typedef struct hv__shm_header {
  _Alignas(64) atomic_uint arrived;
  _Alignas(64) atomic_uint sense;
} hv__shm_header_t;

/* A local rank's flags: the last allreduce step it finished (allreduce_shm.c says
 * which) and the last AND (shm_and.c). Written by its rank only, read by the others.
 * 128 bytes apart: Intel's adjacent-line prefetcher fetches lines in pairs, and a
 * neighbour's flag in the pair would be invalidated by every post. The two sequences
 * are independent: the engine's negotiation (the AND) may run on its thread while a
 * user thread runs an allreduce alone (hv_bench_allreduce_algorithm). */
typedef struct hv__shm_flag {
  _Alignas(128) atomic_ulong step;
  _Alignas(128) atomic_ulong and_step;
} hv__shm_flag_t;

typedef struct hv__shm {
  hv__shm_header_t *header;
  hv__shm_flag_t *flags; /* local_size of them, after the header */
  char *slots; /* local_size slots of slot_bytes, 64-byte aligned */
  size_t slot_bytes, map_bytes;
  int local_rank, local_size;
  unsigned my_sense;
  const hv__algo_host_t *host; /* its timeout and fault polls bound the barrier */
  int borrowed;                /* attached to the caller's memory: not unmapped here */
  /* The allreduce (allreduce_shm.c) alternates between the two halves of the slots,
   * synchronises with the flags and ends without a barrier: steps counts its pieces
   * (the same on every local rank), and flags_pending says a peer may still be reading
   * a half, so a user of whole slots (allreduce_hier_shm.c) must settle first. */
  unsigned long steps;
  unsigned long halves; /* the allreduce's steps: which half-slot is next */
  unsigned long ands;   /* the AND's calls (its own sequence and flags, the slots' tail) */
  int flags_pending;
  /* More local ranks than this machine has cores: a rank waiting for a peer gives
   * its core away at once, because the peer it waits for may need it. */
  int oversubscribed;
  /* Collectives that went through the slots: proof for tests that shared memory ran. */
  unsigned long runs;
  /* Cross-memory attach (shm_cma.c): 1 when every local rank may read and write the
   * others' memory with process_vm_readv/writev, so the single-copy allreduce
   * (allreduce_shm_cma.c) can run; cma_runs counts its calls (proof for tests).
   * cma_off: why not, on local rank 0 ("" when on, or not tried: HV_SHM_CMA=0). */
  int cma;
  char cma_off[256];
  unsigned long cma_runs;
} hv__shm_t;

/* Collective over the local communicator; it also tries cross-memory attach
 * (hv__shm_cma_probe) unless host->shm_cma is 0. Every page is reserved up front
 * (posix_fallocate), so a /dev/shm too small for it fails here, not with a SIGBUS at
 * the first write. On failure (no /dev/shm, too small, no memory) every local rank
 * returns HV_ERR_UNSUPPORTED and local rank 0 has the cause, with the sizes, in why
 * (why_len bytes); the caller then does without shared memory. */
hv_result_t hv__shm_create(hv__shm_t *shm, const hv__algo_host_t *host, MPI_Comm local, size_t slot_bytes,
                           char *why, size_t why_len);
/* The bytes of a region of local_size slots (0 when that overflows size_t), and a
 * region over memory the caller already shares among its local ranks (zeroed;
 * in-process ranks use one malloc). */
size_t hv__shm_region_bytes(int local_size, size_t slot_bytes);
void hv__shm_attach(hv__shm_t *shm, const hv__algo_host_t *host, void *memory, int local_rank, int local_size,
                    size_t slot_bytes);
void hv__shm_destroy(hv__shm_t *shm);
char *hv__shm_slot(const hv__shm_t *shm, int local_rank);
/* Segment q of an n-element piece split over the local ranks (the first n % l get one
 * more): the part local rank q reduces. */
void hv__shm_segment(const hv__shm_t *shm, size_t n, int q, size_t *start, size_t *len);
/* Segment q of an n-element step over the local ranks, cut at 64-byte boundaries (so
 * no cache line holds two ranks' results); the last rank also takes the tail. es:
 * bytes per element (a divisor of 64). */
void hv__shm_line_segment(const hv__shm_t *shm, size_t n, int q, size_t es, size_t *start, size_t *len);
/* Bytes of half a slot (64-byte aligned): the allreduce's alternating halves, which
 * leave the slot's tail (a 32nd, 128-byte aligned) to the node's AND (shm_and.c). */
size_t hv__shm_half_bytes(const hv__shm_t *shm);
size_t hv__shm_tail_bytes(const hv__shm_t *shm);
/* Waits until every local rank arrived; HV_ERR_TIMEOUT after the communicator's
 * HV_TIMEOUT (a local peer died or stopped). */
hv_result_t hv__shm_barrier(hv__shm_t *shm);
/* Something to call every every_bytes of a long local phase (the hierarchical
 * allreduce advances its cross-node transfer there). */
typedef struct hv__shm_poke {
  hv_result_t (*fn)(void *arg);
  void *arg;
  size_t every_bytes;
} hv__shm_poke_t;
/* This rank's segment of a piece: dst = own op (the same segment of every other local
 * rank's slot, at slot_offset), in local-rank order, and the result also copied to
 * publish when not NULL. dst may be own (in place). Works in blocks small enough for
 * L1, so dst is written once and each block is read back from the cache, not from
 * memory. poke may be NULL. */
hv_result_t hv__shm_reduce_segment(const hv__shm_t *shm, char *dst, const char *own, char *publish,
                                   size_t slot_offset, size_t count, hv_dtype_t dtype, hv_op_t op,
                                   const hv__shm_poke_t *poke);
/* memcpy into or out of a slot, fast for lines that another core's cache holds. */
void hv__shm_copy(char *dst, const char *src, size_t bytes);
/* Before writing whole slots: a barrier if a peer may still be reading them. */
hv_result_t hv__shm_settle(hv__shm_t *shm);
/* Publishes that this rank finished `step` (a release store to its flag: everything it
 * wrote before is visible to a peer that sees the flag). */
void hv__shm_post(hv__shm_t *shm, unsigned long step);
/* Waits until every other local rank's flag reached `step` (acquire loads); bounded
 * by HV_TIMEOUT and the fault polls, as the barrier. and_flags: the AND's flags
 * instead of the allreduce's, and a long wait sleeps (peers may be idle between
 * negotiation rounds). hosts (or NULL): the host of each local rank, whose local rank
 * is its rank in the job (one node): a long wait then names "rank Q on host H" in its
 * fault and timeout messages. */
hv_result_t hv__shm_wait_all(hv__shm_t *shm, unsigned long step, int and_flags, const char (*hosts)[64]);
/* Whether the local ranks may read and write each other's memory (cross-memory
 * attach, process_vm_readv/writev), tried once by hv__shm_create: collective over
 * local; sets
 * shm->cma on every local rank alike. want 0: not tried (HV_SHM_CMA=0), cma 0. On a
 * refusal (yama's ptrace_scope, a container's seccomp filter, a kernel without it)
 * local rank 0 has the cause in why (why_len bytes); nothing fails: the allreduce then
 * copies through the slots. */
hv_result_t hv__shm_cma_probe(hv__shm_t *shm, const hv__algo_host_t *host, MPI_Comm local, int want, char *why,
                              size_t why_len);
/* The same for in-process ranks (hv__shm_attach calls it): whether this process may use the
 * calls on itself. */
void hv__shm_cma_probe_self(hv__shm_t *shm, int want);
/* hv__shm_post for the AND's flag. */
void hv__shm_post_and(hv__shm_t *shm, unsigned long step);

#endif
