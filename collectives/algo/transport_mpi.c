/* transport_mpi.c: the transport interface over MPI non-blocking point-to-point on
 * a communicator of the caller's (the engine's private duplicate of the user's
 * MPI_Comm, or a node's or a cross-node one). */
#include <limits.h>
#include <stdio.h>

#include "algo.h"

static MPI_Comm comm_of(hv__transport_t *t) { return *(MPI_Comm *)t->impl; }

/* Remembers the peer of a request just posted (the last 16 are kept). */
static void posted(hv__transport_t *t, MPI_Request req, int peer, int recv) {
  unsigned i = t->posted_next++ % (sizeof t->posted / sizeof t->posted[0]);
  t->posted[i].req = req, t->posted[i].peer = peer, t->posted[i].recv = recv;
}

/* What a long wait on reqs waits for: the unfinished transfers' peers, receives
 * first (the data this rank waits for), named by the host ("rank 3 on host n1"). */
typedef struct {
  hv__transport_t *t;
  MPI_Request *reqs;
  int n;
  const char *what;
} waiting_t;

static void describe_wait(void *arg, char *out, size_t len) {
  const waiting_t *w = arg;
  hv__transport_t *t = w->t;
  const unsigned kept = sizeof t->posted / sizeof t->posted[0];
  int peer = -1, recv = 0;
  for (int pass = 1; pass >= 0 && peer < 0; pass--) /* receives, then sends */
    for (int r = 0; r < w->n && peer < 0; r++) {
      int done = 1;
      if (w->reqs[r] == MPI_REQUEST_NULL || MPI_Request_get_status(w->reqs[r], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
          done)
        continue;
      for (unsigned i = 0; i < kept; i++)
        if (t->posted[i].req == w->reqs[r] && t->posted[i].recv == pass) peer = t->posted[i].peer, recv = pass;
    }
  if (peer < 0) {
    snprintf(out, len, "%s", w->what);
    return;
  }
  char name[160];
  if (t->host->peer_name) t->host->peer_name(t->host->owner, t->impl, peer, name, sizeof name);
  else snprintf(name, sizeof name, "rank %d of its communicator", peer);
  snprintf(out, len, "%s %s %s", w->what, recv ? "from" : "to", name);
}

static hv_result_t mpi_isend(hv__transport_t *t, int peer, int tag, const void *buf, size_t bytes,
                             hv__request_t *req) {
  if (bytes > HV__TRANSPORT_MAX_MESSAGE)
    return hv__fail(&t->host->errors, HV_ERR_INTERNAL, "transport message of %zu bytes too large", bytes);
  HV_MPI_CHECK(&t->host->errors, MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, comm_of(t), &req->mpi));
  posted(t, req->mpi, peer, 0);
  return HV_SUCCESS;
}

static hv_result_t mpi_irecv(hv__transport_t *t, int peer, int tag, void *buf, size_t bytes,
                             hv__request_t *req) {
  if (bytes > HV__TRANSPORT_MAX_MESSAGE)
    return hv__fail(&t->host->errors, HV_ERR_INTERNAL, "transport message of %zu bytes too large", bytes);
  HV_MPI_CHECK(&t->host->errors, MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, comm_of(t), &req->mpi));
  posted(t, req->mpi, peer, 1);
  return HV_SUCCESS;
}

static hv_result_t mpi_wait(hv__transport_t *t, hv__request_t *req) {
  waiting_t w = {t, &req->mpi, 1, "a point-to-point transfer"};
  return hv__wait_mpi_described(t->host, 1, &req->mpi, w.what, 0, describe_wait, &w);
}

static hv_result_t mpi_waitall(hv__transport_t *t, hv__request_t *reqs, int n) {
  _Static_assert(sizeof(hv__request_t) == sizeof(MPI_Request), "a request array must be an MPI_Request array");
  waiting_t w = {t, (MPI_Request *)reqs, n, "point-to-point transfers"};
  return hv__wait_mpi_described(t->host, n, w.reqs, w.what, 0, describe_wait, &w);
}

static hv_result_t mpi_test(hv__transport_t *t, hv__request_t *req, int *done) {
  HV_MPI_CHECK(&t->host->errors, MPI_Test(&req->mpi, done, MPI_STATUS_IGNORE));
  return HV_SUCCESS;
}

hv_result_t hv__transport_mpi_init(hv__transport_t *t, const hv__algo_host_t *host, MPI_Comm *mpi) {
  t->name = "mpi";
  HV_MPI_CHECK(&host->errors, MPI_Comm_rank(*mpi, &t->rank));
  HV_MPI_CHECK(&host->errors, MPI_Comm_size(*mpi, &t->size));
  t->isend = mpi_isend;
  t->irecv = mpi_irecv;
  t->wait = mpi_wait;
  t->waitall = mpi_waitall;
  t->test = mpi_test;
  t->impl = mpi;
  t->host = host;
  t->posted_next = 0;
  for (unsigned i = 0; i < sizeof t->posted / sizeof t->posted[0]; i++) t->posted[i].req = MPI_REQUEST_NULL;
  return HV_SUCCESS;
}
