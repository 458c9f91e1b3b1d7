/* allreduce_1r.c: the single-rounding 16-bit allreduce (HV_COMPRESSION=fp16-1r,
 * bf16-1r). buf holds count fp16 or bf16 values, each input already rounded once when
 * packed. Reduce-scatter by all-to-all: rank q sends segment p of its buffer straight
 * to rank p, so the owner of a segment holds every rank's 16-bit values of it; it
 * accumulates them in float32 (in rank order: the same bits whoever runs it) and
 * rounds once to 16 bits; then the ring allgather. Every element is therefore rounded
 * twice in all (packing, and once after its sum), whatever the number of ranks,
 * where the ring rounds each partial sum once per hop (n - 1 times): the error bound
 * (README, "Compression") is (2.01 u + 2 (n - 1) 2^-24) sum_r |x_r| + (n + 2) t
 * + 2^-23 |exact| instead of n u sum_r |x_r| + n t + 2^-23 |exact|. The bytes on the
 * wire are the ring's: (n - 1) / n of the buffer out of each rank in each phase. */
#include <string.h>

#include "algo.h"
#include "reduce.h"

/* Sends segment p of buf (16-bit values, off[] in elements) to rank p and receives
 * my segment of every rank into recv (rank q's at q * mine), in transport-sized
 * pieces, all posted at once. */
static hv_result_t exchange_segments(hv__algo_ctx_t *ctx, const char *buf, const size_t *off, char *recv) {
  hv__transport_t *t = &ctx->transport;
  const int n = t->size, r = t->rank;
  const size_t es = 2, mine = (off[r + 1] - off[r]) * es, piece = HV__TRANSPORT_MAX_MESSAGE;
  size_t most = 0;
  for (int q = 0; q < n; q++) {
    const size_t b = (off[q + 1] - off[q]) * es;
    most += (b + piece - 1) / piece + (mine + piece - 1) / piece;
  }
  hv__request_t *reqs;
  HV_CHECK(hv__algo_reqs(ctx, most + 1, &reqs));
  size_t nreq = 0;
  memcpy(recv + (size_t)r * mine, buf + off[r] * es, mine);
  for (int k = 1; k < n; k++) {
    const int to = (r + k) % n, from = (r - k + n) % n;
    const size_t bytes = (off[to + 1] - off[to]) * es;
    for (size_t done = 0; done < mine; done += piece) {
      const size_t len = mine - done < piece ? mine - done : piece;
      HV_CHECK(t->irecv(t, from, HV__TAG_ALLREDUCE_1R, recv + (size_t)from * mine + done, len, &reqs[nreq++]));
    }
    for (size_t done = 0; done < bytes; done += piece) {
      const size_t len = bytes - done < piece ? bytes - done : piece;
      HV_CHECK(t->isend(t, to, HV__TAG_ALLREDUCE_1R, buf + off[to] * es + done, len, &reqs[nreq++]));
    }
  }
  return nreq ? t->waitall(t, reqs, (int)nreq) : HV_SUCCESS;
}

hv_result_t hv__allreduce_1r(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op) {
  const int n = ctx->transport.size, r = ctx->transport.rank;
  if (dtype != HV_FLOAT16 && dtype != HV_BFLOAT16)
    return hv__fail(&ctx->host->errors, HV_ERR_INVALID_ARGUMENT,
                    "single-rounding allreduce: %s is not a 16-bit float (fp16-1r/bf16-1r pack float32 to one)",
                    hv_dtype_name(dtype));
  if (n == 1 || count == 0) return HV_SUCCESS;
  hv__ring_even_segments(ctx, count);
  size_t *off = ctx->seg_off;
  const size_t mine = off[r + 1] - off[r];
  /* scratch: every rank's 16-bit copy of my segment, then two float32 rows */
  void *scratch;
  HV_CHECK(hv__algo_scratch(ctx, (size_t)n * mine * 2 + 2 * mine * sizeof(float) + 16, &scratch));
  char *recv = scratch;
  float *acc = (float *)(recv + ((size_t)n * mine * 2 + 15) / 16 * 16), *next = acc + mine;
  HV_CHECK(exchange_segments(ctx, buf, off, recv));
  const hv_op_t fop = op == HV_AVERAGE ? HV_SUM : op;
  hv__convert(acc, HV_FLOAT32, recv, dtype, mine, 1.0);
  for (int q = 1; q < n; q++) {
    hv__convert(next, HV_FLOAT32, recv + (size_t)q * mine * 2, dtype, mine, 1.0);
    hv__reduce(acc, next, mine, HV_FLOAT32, fop);
  }
  hv__convert((char *)buf + off[r] * 2, dtype, acc, HV_FLOAT32, mine, 1.0); /* the one rounding */
  return hv__ring_allgather(ctx, buf, off, 2);
}
