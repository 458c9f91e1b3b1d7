/* allreduce_rab.c: Rabenseifner's allreduce, a reduce-scatter by recursive halving
 * then an allgather by recursive doubling: bandwidth-optimal like the ring (each rank
 * sends and receives 2(p-1)/p of the buffer) in 2 log2(p) steps instead of the
 * ring's 2(p-1), so the choice for large buffers over many ranks.
 *
 * With p a power of two, the buffer is cut into p near-equal blocks (the first
 * count % p one element longer, some empty when count < p). Every rank starts with
 * the window of all p blocks; step k = 0..log2(p)-1 pairs it with the rank whose
 * index differs in bit k, which has the same window: the rank with that bit clear
 * keeps the lower half of the window and sends the upper half, its partner the
 * reverse, and each reduces the half it received into the half it keeps. After
 * log2(p) steps each rank holds one block reduced over all ranks; the allgather
 * walks the same steps backwards, each rank sending its window and receiving its
 * partner's, until every rank holds every block. The largest halves go to the
 * nearest ranks (bit 0 first), which usually share a node.
 *
 *   rank:           0         1         2         3        (p = 4, blocks A B C D)
 *   RS step 0:  keeps AB  keeps CD  keeps AB  keeps CD     (pairs 0-1, 2-3)
 *   RS step 1:  keeps A   keeps C   keeps B   keeps D      (pairs 0-2, 1-3)
 *   AG: step 1 backwards (0-2 swap A/B, 1-3 swap C/D), then step 0 (AB <-> CD).
 *
 * Other p, as allreduce_rd.c: with p' the largest power of two <= p and rem = p - p',
 * the first 2 rem ranks pair up before the halving (the even one sends its whole
 * buffer to the odd one, which reduces it in, and sits out) and the odd one sends it
 * the result at the end: those pairs move 2 buffers more, and the job takes 2 steps
 * more. Messages per rank: log2(p') halving and log2(p') doubling exchanges, each cut
 * into chunks of hv__chunk_bytes (HV_RING_CHUNK_BYTES, across nodes HV_NET_CHUNK_BYTES;
 * never more than HV__TRANSPORT_MAX_MESSAGE), received into hv__recv_depth scratch
 * slots and reduced while later chunks arrive.
 *
 * Bitwise identical results: each block's final value is computed by exactly one
 * rank (the one left holding it after the halving; each partial sum before it by
 * exactly one rank too, in an order fixed by the ranks alone), and everyone else
 * receives copies of those bytes in the allgather and the unfolding. */
#include "algo.h"
#include "reduce.h"

#define RAB_MAX_STEPS 31 /* log2 of the largest power of two an int holds */

typedef struct rab {
  hv__algo_ctx_t *ctx;
  char *data, *slots;
  size_t es, chunk; /* chunk in elements */
  size_t depth;     /* receive slots in flight per exchange */
  hv_dtype_t dtype;
  hv_op_t op;
} rab_t;

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* One exchange with peer: sends elements [s, s + slen) of the buffer and receives
 * rlen elements for [d, d + rlen), either side possibly empty (the fold and unfold
 * go one way). reduce: received chunks land in the slots and are reduced into the
 * buffer, else they land in place. Both sides cut a range into the same chunks, so
 * chunk j of a send matches chunk j of the receive (posting order per source and
 * tag). Sends are waited on only at the end, receives first posted: no deadlock. */
static hv_result_t exchange(const rab_t *a, int peer, int tag, size_t s, size_t slen, size_t d, size_t rlen,
                            int reduce) {
  hv__transport_t *t = &a->ctx->transport;
  const size_t c = a->chunk, es = a->es;
  const size_t nsend = (slen + c - 1) / c, nrecv = (rlen + c - 1) / c;
  const size_t posted = reduce ? min_size(nrecv, a->depth) : nrecv;
  hv__request_t *reqs;
  HV_CHECK(hv__algo_reqs(a->ctx, posted + nsend, &reqs));
  hv__request_t *recv = reqs, *send = reqs + posted;
  for (size_t j = 0; j < posted; j++) {
    const size_t len = min_size(c, rlen - j * c);
    char *into = reduce ? a->slots + j * c * es : a->data + (d + j * c) * es;
    HV_CHECK(t->irecv(t, peer, tag, into, len * es, &recv[j]));
  }
  for (size_t j = 0; j < nsend; j++)
    HV_CHECK(t->isend(t, peer, tag, a->data + (s + j * c) * es, min_size(c, slen - j * c) * es, &send[j]));
  if (reduce) {
    for (size_t j = 0; j < nrecv; j++) {
      const size_t slot = j % a->depth, len = min_size(c, rlen - j * c);
      char *from = a->slots + slot * c * es;
      HV_CHECK(t->wait(t, &recv[slot]));
      hv__reduce(a->data + (d + j * c) * es, from, len, a->dtype, a->op);
      const size_t next = j + a->depth;
      if (next < nrecv)
        HV_CHECK(t->irecv(t, peer, tag, from, min_size(c, rlen - next * c) * es, &recv[slot]));
    }
  } else {
    HV_CHECK(t->waitall(t, recv, (int)nrecv));
  }
  return t->waitall(t, send, (int)nsend);
}

/* The power-of-two part, among the ranks left after the fold, numbered newrank
 * 0..pof2-1 (newrank q < rem is rank 2q + 1, the others rank q + rem). off[b]: the
 * first element of block b. */
static hv_result_t halve_and_double(const rab_t *a, const size_t *off, int newrank, int pof2, int rem) {
  int lo_at[RAB_MAX_STEPS], hi_at[RAB_MAX_STEPS], steps = 0;
  int lo = 0, hi = pof2;
  for (int mask = 1; mask < pof2; mask <<= 1, steps++) {
    const int pnew = newrank ^ mask, peer = pnew < rem ? pnew * 2 + 1 : pnew + rem, mid = (lo + hi) / 2;
    lo_at[steps] = lo;
    hi_at[steps] = hi;
    const int upper = (newrank & mask) != 0, give_lo = upper ? lo : mid, give_hi = upper ? mid : hi;
    if (upper) lo = mid;
    else hi = mid;
    HV_CHECK(exchange(a, peer, HV__TAG_RAB_RS, off[give_lo], off[give_hi] - off[give_lo], off[lo],
                      off[hi] - off[lo], 1));
  }
  /* Now [lo, hi) is my one block; step k backwards: the partner holds the other half
   * of step k's window. */
  while (steps-- > 0) {
    const int pnew = newrank ^ (1 << steps), peer = pnew < rem ? pnew * 2 + 1 : pnew + rem;
    const int other_lo = lo == lo_at[steps] ? hi : lo_at[steps], other_hi = lo == lo_at[steps] ? hi_at[steps] : lo;
    HV_CHECK(exchange(a, peer, HV__TAG_RAB_AG, off[lo], off[hi] - off[lo], off[other_lo],
                      off[other_hi] - off[other_lo], 0));
    lo = lo_at[steps];
    hi = hi_at[steps];
  }
  return HV_SUCCESS;
}

hv_result_t hv__allreduce_rab(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op) {
  const int n = ctx->transport.size, r = ctx->transport.rank;
  if (n == 1 || count == 0) return HV_SUCCESS;
  const size_t es = hv_dtype_size(dtype);
  size_t chunk = hv__chunk_bytes(ctx) / es;
  chunk = min_size(min_size(chunk ? chunk : 1, HV__TRANSPORT_MAX_MESSAGE / es), count);
  rab_t a = {ctx, buf, NULL, es, chunk, hv__recv_depth(chunk * es), dtype, op};
  HV_CHECK(hv__algo_scratch(ctx, a.depth * chunk * es, (void **)&a.slots));
  int pof2 = 1;
  while (pof2 <= n / 2) pof2 *= 2;
  const int rem = n - pof2;

  const int newrank = r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem;
  if (r < 2 * rem && r % 2 == 0) HV_CHECK(exchange(&a, r + 1, HV__TAG_RAB_RS, 0, count, 0, 0, 0));
  if (r < 2 * rem && r % 2 == 1) HV_CHECK(exchange(&a, r - 1, HV__TAG_RAB_RS, 0, 0, 0, count, 1));
  if (newrank >= 0) {
    /* pof2 <= n blocks: the segment table has room. */
    size_t *off = ctx->seg_off, base = count / (size_t)pof2, extra = count % (size_t)pof2;
    off[0] = 0;
    for (int b = 0; b < pof2; b++) off[b + 1] = off[b] + base + ((size_t)b < extra);
    HV_CHECK(halve_and_double(&a, off, newrank, pof2, rem));
  }
  if (r < 2 * rem && r % 2 == 1) HV_CHECK(exchange(&a, r - 1, HV__TAG_RAB_AG, 0, count, 0, 0, 0));
  if (r < 2 * rem && r % 2 == 0) HV_CHECK(exchange(&a, r + 1, HV__TAG_RAB_AG, 0, 0, 0, count, 0));
  return HV_SUCCESS;
}
