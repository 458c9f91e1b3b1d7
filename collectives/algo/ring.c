/* ring.c: the two phases of a ring collective over uneven segments, chunked and
 * pipelined with non-blocking point-to-point.
 *
 *   reduce-scatter, step s = 0..n-2 (data flows to the right, r -> r+1):
 *     send segment (r-s-1) mod n, receive segment (r-s-2) mod n and reduce it in.
 *     After n-1 steps rank r holds segment r reduced over all ranks.
 *   allgather, step s = 0..n-2:
 *     send segment (r-s) mod n, receive segment (r-s-1) mod n in place.
 *
 *   rank:    0        1        2          (n = 3, RS step 0)
 *   sends:  seg 2 -> seg 0 -> seg 1 -> (back to rank 0)
 *
 * Each rank moves 2(n-1)/n of the buffer for a full allreduce (RS + AG), the
 * bandwidth optimum. Segments are cut into chunks of hv__chunk_bytes (HV_RING_CHUNK_BYTES;
 * across nodes HV_NET_CHUNK_BYTES, below TCP's eager limit: net_chunk.c): the chunk
 * of step s+1 is forwarded as soon as the same chunk of step s has arrived and been
 * reduced, so receiving, reducing and sending overlap, and no MPI count exceeds an
 * int at any size. Sends are never waited on before the end of a phase, so a rank
 * only ever blocks on a receive whose sender has no reason to wait: no deadlock.
 * Chunks of the same (source, tag) are matched in posting order (MPI's
 * non-overtaking rule), which both sides walk identically.
 */
#include <string.h>

#include "algo.h"
#include "reduce.h"


typedef struct ring_walk {
  const size_t *off;
  size_t chunk; /* elements */
  int n, r, shift;
  int step;
  size_t j; /* chunk index in the step's segment */
} ring_walk_t;

static size_t walk_segment(const ring_walk_t *w, int step) {
  return (size_t)((((w->r - step - w->shift) % w->n) + w->n) % w->n);
}

static size_t walk_chunks(const ring_walk_t *w, int step) {
  size_t seg = walk_segment(w, step);
  size_t len = w->off[seg + 1] - w->off[seg];
  return (len + w->chunk - 1) / w->chunk;
}

/* Moves to the next (step, chunk) that exists; steps with empty segments are skipped
 * identically on sender and receiver. */
static void walk_settle(ring_walk_t *w) {
  while (w->step <= w->n - 2 && w->j >= walk_chunks(w, w->step)) {
    w->step++;
    w->j = 0;
  }
}

static int walk_valid(const ring_walk_t *w) { return w->step <= w->n - 2; }

static void walk_range(const ring_walk_t *w, size_t *start, size_t *len) {
  size_t seg = walk_segment(w, w->step);
  *start = w->off[seg] + w->j * w->chunk;
  size_t end = w->off[seg + 1];
  *len = (end - *start) < w->chunk ? (end - *start) : w->chunk;
}

static ring_walk_t walk_begin(const size_t *off, size_t chunk, int n, int r, int shift) {
  ring_walk_t w = {off, chunk, n, r, shift, 0, 0};
  walk_settle(&w);
  return w;
}

static size_t chunk_elems(const hv__algo_ctx_t *ctx, size_t elem_size) {
  size_t c = hv__chunk_bytes(ctx) / elem_size;
  return c ? c : 1;
}

/* Upper bound of the sends of one phase: chunks of every segment. */
static size_t max_sends(const size_t *off, int n, size_t chunk) {
  size_t total = 0;
  for (int i = 0; i < n; i++) total += (off[i + 1] - off[i] + chunk - 1) / chunk;
  return total;
}

void hv__ring_even_segments(hv__algo_ctx_t *ctx, size_t count) {
  int n = ctx->transport.size;
  size_t base = count / (size_t)n, extra = count % (size_t)n;
  ctx->seg_off[0] = 0;
  for (int i = 0; i < n; i++) ctx->seg_off[i + 1] = ctx->seg_off[i] + base + ((size_t)i < extra);
}

/* One phase of the ring. Reduce-scatter (reduce != 0): receive segment (r-s-2) into
 * a slot and reduce it into the buffer; allgather: receive segment (r-s-1) straight
 * into the buffer. Either way, the chunk just received is what step s+1 forwards. */
static hv_result_t ring_phase(hv__algo_ctx_t *ctx, char *data, const size_t *off, size_t es,
                              hv_dtype_t dtype, hv_op_t op, int reduce) {
  hv__transport_t *t = &ctx->transport;
  int n = t->size, r = t->rank;
  if (n == 1) return HV_SUCCESS;
  size_t chunk = chunk_elems(ctx, es);
  const size_t depth = hv__recv_depth(chunk * es);
  int right = (r + 1) % n, left = (r - 1 + n) % n;
  int tag = reduce ? HV__TAG_RING_RS : HV__TAG_RING_AG;
  int recv_shift = reduce ? 2 : 1;

  char *slots = NULL;
  if (reduce) HV_CHECK(hv__algo_scratch(ctx, depth * chunk * es, (void **)&slots));
  hv__request_t *reqs;
  HV_CHECK(hv__algo_reqs(ctx, max_sends(off, n, chunk) + 2 * depth, &reqs));
  hv__request_t *recv_req = reqs, *send_req = reqs + depth;
  size_t nsend = 0;

  /* Receives first, so the left neighbour's first chunks find them posted. */
  ring_walk_t post = walk_begin(off, chunk, n, r, recv_shift), take = post;
  size_t posted = 0, taken = 0;
  for (; walk_valid(&post) && posted < depth; posted++) {
    size_t start, len, slot = posted % depth;
    walk_range(&post, &start, &len);
    char *into = reduce ? slots + slot * chunk * es : data + start * es;
    HV_CHECK(t->irecv(t, left, tag, into, len * es, &recv_req[slot]));
    post.j++;
    walk_settle(&post);
  }
  /* Step 0 sends my own segment (r-1 for reduce-scatter, r for allgather): ready now. */
  for (ring_walk_t send0 = walk_begin(off, chunk, n, r, recv_shift - 1); walk_valid(&send0) && send0.step == 0;) {
    size_t start, len;
    walk_range(&send0, &start, &len);
    HV_CHECK(t->isend(t, right, tag, data + start * es, len * es, &send_req[nsend++]));
    send0.j++;
    walk_settle(&send0);
  }
  while (walk_valid(&take)) {
    size_t slot = taken % depth, start, len;
    walk_range(&take, &start, &len);
    HV_CHECK(t->wait(t, &recv_req[slot]));
    if (reduce) hv__reduce(data + start * es, slots + slot * chunk * es, len, dtype, op);
    if (take.step + 1 <= n - 2)
      HV_CHECK(t->isend(t, right, tag, data + start * es, len * es, &send_req[nsend++]));
    taken++;
    take.j++;
    walk_settle(&take);
    if (walk_valid(&post)) {
      size_t pstart, plen;
      walk_range(&post, &pstart, &plen);
      char *into = reduce ? slots + slot * chunk * es : data + pstart * es;
      HV_CHECK(t->irecv(t, left, tag, into, plen * es, &recv_req[slot]));
      posted++;
      post.j++;
      walk_settle(&post);
    }
  }
  return t->waitall(t, send_req, (int)nsend);
}

hv_result_t hv__ring_reduce_scatter(hv__algo_ctx_t *ctx, void *buf, const size_t *off,
                                    hv_dtype_t dtype, hv_op_t op) {
  return ring_phase(ctx, buf, off, hv_dtype_size(dtype), dtype, op, 1);
}

hv_result_t hv__ring_allgather(hv__algo_ctx_t *ctx, void *buf, const size_t *off, size_t es) {
  return ring_phase(ctx, buf, off, es, HV_UINT8, HV_SUM, 0);
}
