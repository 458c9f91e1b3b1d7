/* ring_nb.c: a non-blocking ring allreduce, driven by polling (see algo.h):
 * reduce-scatter then allgather, n-1 steps each, one segment per message.
 *
 *   reduce-scatter step s: send segment (r-s-1) mod n to the right, receive segment
 *     (r-s-2) mod n from the left into scratch and reduce it in;
 *   allgather step s: send segment (r-s) mod n, receive segment (r-s-1) mod n in place.
 *
 * Each segment is reduced in full by one rank and then copied, so every rank gets
 * bitwise the same result, as with ring.c. The hierarchical allreduce runs its
 * cross-node phase with this so that the node's copies and reductions of the next
 * piece happen while this piece is on the network; its buffers are a fraction of a
 * shared-memory slot, so there is no chunking (ring.c chunks large buffers). The
 * sends of a phase complete before the next phase receives into the buffer they read.
 *
 * Two ranks exchange the whole buffer instead (one reduce-scatter "step" over a single
 * segment, no allgather): the same bytes each way as the ring, in one message per
 * direction rather than two phases in turn, and both compute a op b with a commutative
 * op, so the bits still agree. The reduction waits for the send, which reads the same
 * buffer. */
#include "algo.h"
#include "reduce.h"

static size_t seg(const hv__ring_nb_t *nb, int shift) {
  const int n = nb->ctx->transport.size, r = nb->ctx->transport.rank;
  return (size_t)((((r - nb->step - shift) % n) + n) % n);
}

static hv_result_t post_step(hv__ring_nb_t *nb) {
  hv__transport_t *t = &nb->ctx->transport;
  const size_t *off = nb->ctx->seg_off;
  const int n = t->size, right = (t->rank + 1) % n, left = (t->rank - 1 + n) % n;
  const int rs = nb->phase == 0, tag = rs ? HV__TAG_RING_NB_RS : HV__TAG_RING_NB_AG;
  size_t out = seg(nb, rs ? 1 : 0), in = seg(nb, rs ? 2 : 1);
  if (nb->whole) out = in = 0; /* two ranks: segment 0 is the whole buffer */
  char *into = rs ? nb->scratch : nb->data + off[in] * nb->es;
  HV_CHECK(t->irecv(t, left, tag, into, (off[in + 1] - off[in]) * nb->es, nb->recv));
  return t->isend(t, right, tag, nb->data + off[out] * nb->es, (off[out + 1] - off[out]) * nb->es,
                  &nb->sends[nb->nsend++]);
}

hv_result_t hv__ring_nb_start(hv__ring_nb_t *nb, hv__algo_ctx_t *ctx, void *buf, size_t count,
                              hv_dtype_t dtype, hv_op_t op) {
  const int n = ctx->transport.size;
  *nb = (hv__ring_nb_t){.ctx = ctx, .data = buf, .es = hv_dtype_size(dtype), .dtype = dtype, .op = op};
  if (n == 1 || count == 0) {
    nb->phase = 2;
    return HV_SUCCESS;
  }
  nb->whole = n == 2;
  if (nb->whole) {
    ctx->seg_off[0] = 0;
    ctx->seg_off[1] = count;
  } else {
    hv__ring_even_segments(ctx, count);
  }
  const size_t largest = ctx->seg_off[1] - ctx->seg_off[0]; /* the first segments are the longest */
  HV_CHECK(hv__algo_scratch(ctx, largest * nb->es, (void **)&nb->scratch));
  hv__request_t *reqs;
  HV_CHECK(hv__algo_reqs(ctx, (size_t)n, &reqs));
  nb->recv = reqs;
  nb->sends = reqs + 1;
  return post_step(nb);
}

/* 1 when every send of the phase is done (then they are released). */
static hv_result_t sends_done(hv__ring_nb_t *nb, int *done) {
  hv__transport_t *t = &nb->ctx->transport;
  *done = 1;
  for (int i = 0; i < nb->nsend && *done; i++) HV_CHECK(t->test(t, &nb->sends[i], done));
  return HV_SUCCESS;
}

hv_result_t hv__ring_nb_progress(hv__ring_nb_t *nb, int *done) {
  hv__transport_t *t = &nb->ctx->transport;
  const int n = t->size;
  for (;;) {
    *done = nb->phase == 2;
    if (*done) return HV_SUCCESS;
    if (nb->step == n - 1) { /* the phase's receives are done; its sends? */
      int sent;
      HV_CHECK(sends_done(nb, &sent));
      if (!sent) return HV_SUCCESS;
      nb->nsend = 0;
      nb->step = 0;
      if (nb->whole) { /* the send read the buffer that is reduced into: only now */
        hv__reduce(nb->data, nb->scratch, nb->ctx->seg_off[1], nb->dtype, nb->op);
        nb->phase = 1; /* no allgather */
      }
      if (++nb->phase == 2) continue;
      HV_CHECK(post_step(nb));
    }
    int got;
    HV_CHECK(t->test(t, nb->recv, &got));
    if (!got) return HV_SUCCESS;
    if (nb->phase == 0 && !nb->whole) {
      const size_t in = seg(nb, 2), *off = nb->ctx->seg_off;
      hv__reduce(nb->data + off[in] * nb->es, nb->scratch, off[in + 1] - off[in], nb->dtype, nb->op);
    }
    if (++nb->step < n - 1) HV_CHECK(post_step(nb));
  }
}

hv_result_t hv__ring_nb_finish(hv__ring_nb_t *nb) {
  hv__transport_t *t = &nb->ctx->transport;
  for (;;) {
    int done;
    HV_CHECK(hv__ring_nb_progress(nb, &done));
    if (done) return HV_SUCCESS;
    /* Block (bounded by HV_TIMEOUT) on what the ring waits for; a completed request
     * reads as done when progress tests it again. */
    if (nb->step == t->size - 1) HV_CHECK(t->waitall(t, nb->sends, nb->nsend));
    else HV_CHECK(t->wait(t, nb->recv));
  }
}
