/* negotiate_vector.c: the bitwise-AND allreduce of the negotiation vector, by
 * recursive doubling over point-to-point messages (log2(p) exchanges of a few
 * hundred bytes). It replaces MPI_Iallreduce there because Open MPI's non-blocking
 * collectives (libnbc) add tens of microseconds per call, which every negotiation
 * round would pay, and because waiting on plain requests keeps the HV_TIMEOUT bound.
 * Non-powers of two fold the extra ranks in first, as in allreduce_rd.c. When every
 * rank is on this node with its shared memory, the AND goes through that instead
 * (algo/shm_and.c: one copy and one flag wait, no MPI matching: 2 ranks, 4 KiB blocking
 * allreduce through the engine, p50 2.8 -> 2.2 us). */
#include <stdio.h>

#include "hv_internal.h"

/* Waits on requests with rank `peer`, naming it (and its host) if it never answers:
 * every rank passes through negotiation each round, so a lost rank shows here. */
static hv_result_t wait_peer(hv_comm_t *comm, int n, MPI_Request *req, int peer) {
  char what[160];
  snprintf(what, sizeof what, "negotiation with rank %d on host %s", peer, comm->hosts ? comm->hosts[peer] : "?");
  return hv__wait_mpi(&comm->host, n, req, what, 1);
}

static hv_result_t exchange(hv_comm_t *comm, int peer, uint64_t *mine, uint64_t *theirs, int words) {
  MPI_Request req[2];
  HV_MPI_CHECK(&comm->host.errors, MPI_Irecv(theirs, words, MPI_UINT64_T, peer, HV__TAG_NEGOTIATE, comm->mpi, &req[0]));
  HV_MPI_CHECK(&comm->host.errors, MPI_Isend(mine, words, MPI_UINT64_T, peer, HV__TAG_NEGOTIATE, comm->mpi, &req[1]));
  return wait_peer(comm, 2, req, peer);
}

static void and_into(uint64_t *acc, const uint64_t *other, int words) {
  for (int i = 0; i < words; i++) acc[i] &= other[i];
}

hv_result_t hv__negotiate_vector_and(hv_comm_t *comm, const uint64_t *in, uint64_t *out, uint64_t *tmp, int words) {
  if (comm->size > 1 && comm->local_size == comm->size && hv__shm_and_usable(&comm->shm, (size_t)words))
    return hv__shm_and(&comm->shm, in, out, (size_t)words, (const char(*)[64])comm->hosts);
  int n = comm->size, r = comm->rank;
  for (int i = 0; i < words; i++) out[i] = in[i];
  if (n == 1) return HV_SUCCESS;
  int pof2 = 1;
  while (pof2 * 2 <= n) pof2 *= 2;
  int rem = n - pof2, newrank;
  MPI_Request req;
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      HV_MPI_CHECK(&comm->host.errors, MPI_Isend(out, words, MPI_UINT64_T, r + 1, HV__TAG_NEGOTIATE, comm->mpi, &req));
      HV_CHECK(wait_peer(comm, 1, &req, r + 1));
      newrank = -1;
    } else {
      HV_MPI_CHECK(&comm->host.errors, MPI_Irecv(tmp, words, MPI_UINT64_T, r - 1, HV__TAG_NEGOTIATE, comm->mpi, &req));
      HV_CHECK(wait_peer(comm, 1, &req, r - 1));
      and_into(out, tmp, words);
      newrank = r / 2;
    }
  } else {
    newrank = r - rem;
  }
  if (newrank >= 0)
    for (int mask = 1; mask < pof2; mask <<= 1) {
      int pn = newrank ^ mask, peer = pn < rem ? pn * 2 + 1 : pn + rem;
      HV_CHECK(exchange(comm, peer, out, tmp, words));
      and_into(out, tmp, words);
    }
  if (r < 2 * rem) {
    if (r % 2 == 1)
      HV_MPI_CHECK(&comm->host.errors, MPI_Isend(out, words, MPI_UINT64_T, r - 1, HV__TAG_NEGOTIATE, comm->mpi, &req));
    else
      HV_MPI_CHECK(&comm->host.errors, MPI_Irecv(out, words, MPI_UINT64_T, r + 1, HV__TAG_NEGOTIATE, comm->mpi, &req));
    HV_CHECK(wait_peer(comm, 1, &req, r % 2 == 1 ? r - 1 : r + 1));
  }
  return HV_SUCCESS;
}
