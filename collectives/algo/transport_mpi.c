/* transport_mpi.c: the transport interface over MPI non-blocking point-to-point on
 * a communicator of the caller's (the engine's private duplicate of the user's
 * MPI_Comm, or a node's or a cross-node one). */
#include <limits.h>

#include "algo.h"

static MPI_Comm comm_of(hv__transport_t *t) { return *(MPI_Comm *)t->impl; }

static hv_result_t mpi_isend(hv__transport_t *t, int peer, int tag, const void *buf, size_t bytes,
                             hv__request_t *req) {
  if (bytes > HV__TRANSPORT_MAX_MESSAGE)
    return hv__fail(&t->host->errors, HV_ERR_INTERNAL, "transport message of %zu bytes too large", bytes);
  HV_MPI_CHECK(&t->host->errors, MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, comm_of(t), &req->mpi));
  return HV_SUCCESS;
}

static hv_result_t mpi_irecv(hv__transport_t *t, int peer, int tag, void *buf, size_t bytes,
                             hv__request_t *req) {
  if (bytes > HV__TRANSPORT_MAX_MESSAGE)
    return hv__fail(&t->host->errors, HV_ERR_INTERNAL, "transport message of %zu bytes too large", bytes);
  HV_MPI_CHECK(&t->host->errors, MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, comm_of(t), &req->mpi));
  return HV_SUCCESS;
}

static hv_result_t mpi_wait(hv__transport_t *t, hv__request_t *req) {
  return hv__wait_mpi(t->host, 1, &req->mpi, "a point-to-point transfer", 0);
}

static hv_result_t mpi_waitall(hv__transport_t *t, hv__request_t *reqs, int n) {
  _Static_assert(sizeof(hv__request_t) == sizeof(MPI_Request), "a request array must be an MPI_Request array");
  return hv__wait_mpi(t->host, n, (MPI_Request *)reqs, "point-to-point transfers", 0);
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
  return HV_SUCCESS;
}
