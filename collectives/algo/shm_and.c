/* shm_and.c: bitwise AND of a few 64-bit words over the ranks of one node, through the
 * node's shared memory: the engine's negotiation vector (negotiate_vector.c) when every
 * rank is on this node, one step of the shared-memory allreduce's sequence
 * (allreduce_shm.c: the same flags and reuse rule, as a step whose whole data every
 * rank reduces), in the slots' tail, whose two halves alternate from one AND to the
 * next (a half is written again two ANDs later, after the wait of the step between,
 * which every reader of it has passed). Not in the allreduce's half-slots: taking
 * every other one of them would leave each allreduce the same half, and that was
 * measured slower (64 KiB through the engine on 2 ranks: 14.6 us against 8.4). Through MPI the AND is log2(p) point-to-point exchanges,
 * each a matching and a copy through Open MPI's shared-memory transport; here it is
 * one copy, one flag wait and p loads per word. The wait may sleep: a peer may be idle
 * between training steps, as in a negotiation over MPI. */
#include <string.h>

#include "algo.h"

int hv__shm_and_usable(const hv__shm_t *shm, size_t words) {
  return shm && shm->header && words * sizeof(uint64_t) <= hv__shm_tail_bytes(shm) / 2;
}

hv_result_t hv__shm_and(hv__shm_t *shm, const uint64_t *in, uint64_t *out, size_t words,
                        const char (*hosts)[64]) {
  const unsigned long t = ++shm->steps;
  const size_t half = 2 * hv__shm_half_bytes(shm) + (++shm->ands & 1u) * (hv__shm_tail_bytes(shm) / 2);
  shm->flags_pending = 1;
  memcpy(hv__shm_slot(shm, shm->local_rank) + half, in, words * sizeof(uint64_t));
  hv__shm_post(shm, 2 * t - 1);
  HV_CHECK(hv__shm_wait_all(shm, 2 * t - 1, 1, hosts));
  memcpy(out, in, words * sizeof(uint64_t));
  for (int q = 0; q < shm->local_size; q++) {
    if (q == shm->local_rank) continue;
    const uint64_t *theirs = (const uint64_t *)(const void *)(hv__shm_slot(shm, q) + half);
    for (size_t i = 0; i < words; i++) out[i] &= theirs[i];
  }
  return HV_SUCCESS;
}
