/* allreduce_hier_shm.c: the hierarchical allreduce with its node phases in the node's
 * shared-memory slots (shm_region.h) and its cross-node phase pipelined behind them.
 *
 * The buffer goes in pieces of a third of a slot. For piece k, with l ranks per node:
 *   1. every rank copies the segments of piece k that the others reduce into stage
 *      k mod 3 of its own slot;
 *   2. barrier; rank i reduces segment i of the piece, its own data with every other
 *      slot's, into its slot (hv__shm_reduce_segment: one pass, blocked for L1);
 *   3. rank i waits for the cross-node allreduce of piece k-1 and starts that of its
 *      segment of piece k (a non-blocking ring, ring_nb.c, among the ranks of local
 *      rank i on every node);
 *   4. barrier; every rank copies all reduced segments of piece k-1 out.
 * So the network carries piece k while the node copies piece k-1 out and piece k+1
 * in and reduces it: the phases overlap instead of taking turns, and the link does
 * not idle between pieces. MPI moves messages only inside MPI calls, so the copies
 * and reductions run in blocks of POKE_BYTES with a progress call in between.
 *
 * Three stages, so one barrier per phase suffices: stage k mod 3 is written again by
 * piece k+3, and every rank's copy-out of piece k (in its iteration k+1) comes before
 * its first barrier of iteration k+2, which the writers of piece k+3 have passed.
 * Each segment is reduced by one rank on each node, and the cross-node ring leaves
 * the same bits on every node, so every rank gets bitwise the same result. */
#include <string.h>

#include "algo.h"
#include "reduce.h"

enum { STAGES = 3 };
#define POKE_BYTES ((size_t)256 << 10)

/* Lets the in-flight cross-node allreduce (a hv__ring_nb_t) advance (NULL: none in
 * flight). */
static hv_result_t poke(void *nb) {
  int done;
  return nb ? hv__ring_nb_progress(nb, &done) : HV_SUCCESS;
}

static hv_result_t copy_poking(char *dst, const char *src, size_t bytes, hv__ring_nb_t *nb) {
  for (size_t done = 0; done < bytes; done += POKE_BYTES) {
    size_t n = bytes - done < POKE_BYTES ? bytes - done : POKE_BYTES;
    memcpy(dst + done, src + done, n);
    HV_CHECK(poke(nb));
  }
  return HV_SUCCESS;
}

/* Copies the reduced segments of piece j (n elements, in stage at) out of every slot. */
static hv_result_t copy_out(hv__shm_t *shm, char *dst, size_t n, size_t at, size_t es,
                            hv__ring_nb_t *nb) {
  for (int q = 0; q < shm->local_size; q++) {
    size_t qa, qlen;
    hv__shm_segment(shm, n, q, &qa, &qlen);
    HV_CHECK(copy_poking(dst + qa * es, hv__shm_slot(shm, q) + at + qa * es, qlen * es, nb));
  }
  return HV_SUCCESS;
}

hv_result_t hv__allreduce_hier_shm(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype,
                                   hv_op_t op) {
  hv__shm_t *shm = ctx->shm;
  if (ctx->cross->transport.size == 1) return hv__allreduce_shm(ctx, buf, count, dtype, op);
  /* One rank per node: nothing to overlap, and the hierarchy is a flat allreduce
   * (one exchange between two nodes, see allreduce_select.c). */
  if (shm->local_size == 1)
    return ctx->cross->transport.size == 2 ? hv__allreduce_rd(ctx->cross, buf, count, dtype, op)
                                           : hv__allreduce_ring(ctx->cross, buf, count, dtype, op);
  const size_t es = hv_dtype_size(dtype);
  const int l = shm->local_size, me = shm->local_rank;
  /* The slot but its tail, which the node's AND (shm_and.c) keeps to itself. */
  const size_t stage_bytes = (2 * hv__shm_half_bytes(shm) / STAGES) & ~(size_t)63;
  const size_t piece = stage_bytes / es;
  const size_t pieces = (count + piece - 1) / piece;
  char *data = buf;
  shm->runs++;
  HV_CHECK(hv__shm_settle(shm));
  hv__ring_nb_t ring, *flying = NULL; /* the cross-node allreduce in flight */
  for (size_t k = 0; k < pieces; k++) {
    const size_t n = count - k * piece < piece ? count - k * piece : piece;
    const size_t at = (k % STAGES) * stage_bytes;
    char *piece_data = data + k * piece * es;
    size_t a, len;
    for (int q = 0; q < l; q++) { /* the segments the other local ranks reduce */
      hv__shm_segment(shm, n, q, &a, &len);
      if (q != me) HV_CHECK(copy_poking(hv__shm_slot(shm, me) + at + a * es, piece_data + a * es, len * es, flying));
    }
    HV_CHECK(hv__shm_barrier(shm));
    hv__shm_segment(shm, n, me, &a, &len);
    char *mine = hv__shm_slot(shm, me) + at + a * es;
    const hv__shm_poke_t poking = {poke, flying, POKE_BYTES};
    HV_CHECK(hv__shm_reduce_segment(shm, mine, piece_data + a * es, NULL, at + a * es, len, dtype, op,
                                    flying ? &poking : NULL));
    if (flying) HV_CHECK(hv__ring_nb_finish(flying));
    HV_CHECK(hv__ring_nb_start(&ring, ctx->cross, mine, len, dtype, op));
    if (k > 0) {
      const size_t j = k - 1;
      HV_CHECK(hv__shm_barrier(shm));
      HV_CHECK(copy_out(shm, data + j * piece * es, piece, (j % STAGES) * stage_bytes, es, &ring));
    }
    flying = &ring;
  }
  if (pieces > 0) {
    const size_t j = pieces - 1, n = count - j * piece;
    HV_CHECK(hv__ring_nb_finish(&ring));
    HV_CHECK(hv__shm_barrier(shm));
    HV_CHECK(copy_out(shm, data + j * piece * es, n, (j % STAGES) * stage_bytes, es, NULL));
  }
  /* The next collective's first piece may overwrite stage 0 only when everyone has
   * copied the last pieces out. */
  return hv__shm_barrier(shm);
}
