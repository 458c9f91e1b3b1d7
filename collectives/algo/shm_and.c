/* shm_and.c: bitwise AND of a few 64-bit words over the ranks of one node, through the
 * node's shared memory: the engine's negotiation vector (negotiate_vector.c) when every
 * rank is on this node. Through MPI the AND is log2(p) point-to-point exchanges, each
 * a matching and a copy through Open MPI's shared-memory transport; here it is one
 * copy, one flag wait and p loads per word.
 * It has its own sequence, flags (hv__shm_flag_t.and_step) and memory (the slots'
 * tail, which neither the allreduce's half-slots nor the hierarchical allreduce's
 * stages use), so it may run on the engine's thread while another thread runs an
 * allreduce alone. AND k writes half k mod 2 of the tail and posts k; half k mod 2 is
 * written again by AND k+2, after the wait of AND k+1, which every peer posts only once
 * it has read AND k. The wait may sleep: a peer may be idle between training steps, as
 * in a negotiation over MPI. Measured alternatives: taking every other allreduce
 * half-slot for it left each allreduce the same half, and 64 KiB through the engine on
 * 2 ranks went from 8.4 to 14.6 us. */
#include <string.h>

#include "algo.h"

int hv__shm_and_usable(const hv__shm_t *shm, size_t words) {
  return shm && shm->header && words * sizeof(uint64_t) <= hv__shm_tail_bytes(shm) / 2;
}

hv_result_t hv__shm_and(hv__shm_t *shm, const uint64_t *in, uint64_t *out, size_t words,
                        const char (*hosts)[64]) {
  const unsigned long k = ++shm->ands;
  const size_t half = 2 * hv__shm_half_bytes(shm) + (k & 1u) * (hv__shm_tail_bytes(shm) / 2);
  memcpy(hv__shm_slot(shm, shm->local_rank) + half, in, words * sizeof(uint64_t));
  hv__shm_post_and(shm, k);
  HV_CHECK(hv__shm_wait_all(shm, k, 1, hosts));
  memcpy(out, in, words * sizeof(uint64_t));
  for (int q = 0; q < shm->local_size; q++) {
    if (q == shm->local_rank) continue;
    const uint64_t *theirs = (const uint64_t *)(const void *)(hv__shm_slot(shm, q) + half);
    for (size_t i = 0; i < words; i++) out[i] &= theirs[i];
  }
  return HV_SUCCESS;
}
