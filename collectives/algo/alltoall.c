/* alltoall.c: every pair of ranks exchanges its blocks directly (rank r sends to
 * r+k and receives from r-k for k = 1..n-1, all posted at once), in pieces the
 * transport takes. */
#include <stdint.h>
#include <string.h>

#include "algo.h"

hv_result_t hv__alltoall(hv__algo_ctx_t *ctx, const void *sendbuf, void *recvbuf, size_t bytes) {
  hv__transport_t *t = &ctx->transport;
  int n = t->size, r = t->rank;
  const char *send = sendbuf;
  char *recv = recvbuf;
  if (bytes == 0) return HV_SUCCESS;
  /* Both buffers hold n blocks: the last one's offset must fit. */
  if (bytes > SIZE_MAX / (size_t)n)
    return hv__fail(&ctx->host->errors, HV_ERR_INVALID_ARGUMENT,
                    "all-to-all: blocks of %zu bytes x %d ranks do not fit in size_t", bytes, n);
  memcpy(recv + (size_t)r * bytes, send + (size_t)r * bytes, bytes);
  if (n == 1) return HV_SUCCESS;
  size_t piece = HV__TRANSPORT_MAX_MESSAGE, pieces = (bytes + piece - 1) / piece;
  hv__request_t *reqs;
  HV_CHECK(hv__algo_reqs(ctx, 2 * (size_t)(n - 1) * pieces, &reqs));
  size_t nreq = 0;
  for (int k = 1; k < n; k++) {
    int to = (r + k) % n, from = (r - k + n) % n;
    for (size_t done = 0; done < bytes; done += piece) {
      size_t len = bytes - done < piece ? bytes - done : piece;
      HV_CHECK(t->irecv(t, from, HV__TAG_ALLTOALL, recv + (size_t)from * bytes + done, len, &reqs[nreq++]));
      HV_CHECK(t->isend(t, to, HV__TAG_ALLTOALL, send + (size_t)to * bytes + done, len, &reqs[nreq++]));
    }
  }
  return t->waitall(t, reqs, (int)nreq);
}
