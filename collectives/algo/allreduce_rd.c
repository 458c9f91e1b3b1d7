/* allreduce_rd.c: recursive doubling allreduce, the latency-optimal choice for small
 * messages: log2(p) exchange steps of the whole buffer.
 *
 * For n not a power of two, with p = largest power of two <= n and rem = n - p, the
 * first 2*rem ranks pair up (even rank sends its data to the odd one and sits out),
 * the p remaining ranks do recursive doubling (step k: exchange with the rank whose
 * index differs in bit k, both compute a op b), and the odd ranks send the result
 * back. Both partners combine the same two operands with a commutative operation,
 * so results are bitwise identical on every rank. Buffers larger than the scratch
 * piece are processed piece by piece. */
#include "algo.h"
#include "reduce.h"

#define RD_PIECE_BYTES ((size_t)64 << 20)

static hv_result_t exchange(hv__transport_t *t, int peer, void *send, void *recv, size_t bytes,
                            hv__request_t *req) {
  HV_CHECK(t->irecv(t, peer, HV__TAG_RD, recv, bytes, &req[0]));
  HV_CHECK(t->isend(t, peer, HV__TAG_RD, send, bytes, &req[1]));
  return t->waitall(t, req, 2);
}

static hv_result_t rd_piece(hv__algo_ctx_t *ctx, char *buf, char *tmp, size_t count,
                            hv_dtype_t dtype, hv_op_t op) {
  hv__transport_t *t = &ctx->transport;
  int n = t->size, r = t->rank;
  size_t bytes = count * hv_dtype_size(dtype);
  int pof2 = 1;
  while (pof2 * 2 <= n) pof2 *= 2;
  int rem = n - pof2;
  hv__request_t req[2];

  int newrank;
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      HV_CHECK(t->isend(t, r + 1, HV__TAG_RD, buf, bytes, &req[0]));
      HV_CHECK(t->wait(t, &req[0]));
      newrank = -1;
    } else {
      HV_CHECK(t->irecv(t, r - 1, HV__TAG_RD, tmp, bytes, &req[0]));
      HV_CHECK(t->wait(t, &req[0]));
      hv__reduce(buf, tmp, count, dtype, op);
      newrank = r / 2;
    }
  } else {
    newrank = r - rem;
  }
  if (newrank >= 0) {
    for (int mask = 1; mask < pof2; mask <<= 1) {
      int partner_new = newrank ^ mask;
      int partner = partner_new < rem ? partner_new * 2 + 1 : partner_new + rem;
      HV_CHECK(exchange(t, partner, buf, tmp, bytes, req));
      hv__reduce(buf, tmp, count, dtype, op);
    }
  }
  if (r < 2 * rem) {
    if (r % 2 == 1) {
      HV_CHECK(t->isend(t, r - 1, HV__TAG_RD, buf, bytes, &req[0]));
    } else {
      HV_CHECK(t->irecv(t, r + 1, HV__TAG_RD, buf, bytes, &req[0]));
    }
    HV_CHECK(t->wait(t, &req[0]));
  }
  return HV_SUCCESS;
}

hv_result_t hv__allreduce_rd(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype,
                             hv_op_t op) {
  if (ctx->transport.size == 1 || count == 0) return HV_SUCCESS;
  size_t es = hv_dtype_size(dtype);
  size_t piece = RD_PIECE_BYTES / es;
  if (piece > count) piece = count;
  char *tmp;
  HV_CHECK(hv__algo_scratch(ctx, piece * es, (void **)&tmp));
  for (size_t done = 0; done < count; done += piece) {
    size_t len = count - done < piece ? count - done : piece;
    HV_CHECK(rd_piece(ctx, (char *)buf + done * es, tmp, len, dtype, op));
  }
  return HV_SUCCESS;
}
