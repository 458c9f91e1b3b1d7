/* alltoallv.c: all-to-all with a block of its own size for every pair of ranks, the
 * pairwise exchange of alltoall.c (rank r sends to r+k and receives from r-k for
 * k = 1..n-1, all posted at once) with empty blocks skipped on both sides. Gather(v),
 * scatter(v) and the point-to-point pair are this exchange with all blocks but the
 * root's (or the peer's) empty.
 *
 * Not MPI_Ialltoallv: its int counts and displacements cap a block at 2^31 elements
 * and the whole receive buffer at 2^31 from its start; the transport's pieces have no
 * such limit, and the exchange is the one MPI libraries use for large blocks anyway. */
#include <stdint.h>
#include <string.h>

#include "algo.h"

/* Posts block [off, off + len) of buf to or from peer, in pieces the transport takes. */
static hv_result_t post(hv__transport_t *t, int send, int peer, char *buf, size_t len, hv__request_t *reqs,
                        size_t *nreq) {
  for (size_t done = 0; done < len; done += HV__TRANSPORT_MAX_MESSAGE) {
    size_t piece = len - done < HV__TRANSPORT_MAX_MESSAGE ? len - done : HV__TRANSPORT_MAX_MESSAGE;
    if (send) HV_CHECK(t->isend(t, peer, HV__TAG_ALLTOALLV, buf + done, piece, &reqs[(*nreq)++]));
    else HV_CHECK(t->irecv(t, peer, HV__TAG_ALLTOALLV, buf + done, piece, &reqs[(*nreq)++]));
  }
  return HV_SUCCESS;
}

static size_t pieces_of(size_t len) { return (len + HV__TRANSPORT_MAX_MESSAGE - 1) / HV__TRANSPORT_MAX_MESSAGE; }

hv_result_t hv__alltoallv(hv__algo_ctx_t *ctx, const void *sendbuf, const size_t *send_off, void *recvbuf,
                          const size_t *recv_off) {
  hv__transport_t *t = &ctx->transport;
  int n = t->size, r = t->rank;
  char *send = (char *)sendbuf, *recv = recvbuf;
  size_t own = send_off[r + 1] - send_off[r];
  if (own != recv_off[r + 1] - recv_off[r])
    return hv__fail(&ctx->host->errors, HV_ERR_INTERNAL, "all-to-all-v: rank %d sends itself %zu bytes but expects %zu",
                    r, own, recv_off[r + 1] - recv_off[r]);
  if (own) memmove(recv + recv_off[r], send + send_off[r], own);
  size_t total = 0;
  for (int q = 0; q < n; q++)
    if (q != r) total += pieces_of(send_off[q + 1] - send_off[q]) + pieces_of(recv_off[q + 1] - recv_off[q]);
  if (total == 0) return HV_SUCCESS;
  hv__request_t *reqs;
  HV_CHECK(hv__algo_reqs(ctx, total, &reqs));
  size_t nreq = 0;
  for (int k = 1; k < n; k++) {
    int to = (r + k) % n, from = (r - k + n) % n;
    HV_CHECK(post(t, 0, from, recv + recv_off[from], recv_off[from + 1] - recv_off[from], reqs, &nreq));
    HV_CHECK(post(t, 1, to, send + send_off[to], send_off[to + 1] - send_off[to], reqs, &nreq));
  }
  return t->waitall(t, reqs, (int)nreq);
}
