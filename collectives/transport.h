/* transport.h: the point-to-point interface the algorithms speak (isend, irecv,
 * wait), so an in-process or shared-memory transport can stand in for MPI without
 * touching algorithm code. Sizes are bytes and at most HV__TRANSPORT_MAX_MESSAGE;
 * algorithms chunk larger transfers. */
#ifndef HV_TRANSPORT_H
#define HV_TRANSPORT_H

#include <mpi.h>
#include <stddef.h>

#include "hv.h"

#define HV__TRANSPORT_MAX_MESSAGE ((size_t)1 << 30)

typedef struct hv__request {
  MPI_Request mpi;
} hv__request_t;

typedef struct hv__transport hv__transport_t;
struct hv__transport {
  const char *name;
  int rank, size;
  hv_result_t (*isend)(hv__transport_t *t, int peer, int tag, const void *buf, size_t bytes,
                       hv__request_t *req);
  hv_result_t (*irecv)(hv__transport_t *t, int peer, int tag, void *buf, size_t bytes,
                       hv__request_t *req);
  hv_result_t (*wait)(hv__transport_t *t, hv__request_t *req); /* bounded by HV_TIMEOUT */
  hv_result_t (*waitall)(hv__transport_t *t, hv__request_t *reqs, int n);
  /* Non-blocking: *done = 1 once req completed (it is then released). */
  hv_result_t (*test)(hv__transport_t *t, hv__request_t *req, int *done);
  void *impl;
  struct hv_comm *comm; /* for error details */
};

/* Message tags of the algorithms (negotiation uses collectives, not tags). */
enum {
  HV__TAG_RING_RS = 100,
  HV__TAG_RING_AG = 101,
  HV__TAG_RD = 102,
  HV__TAG_ALLTOALL = 103,
  HV__TAG_NEGOTIATE = 104,
  HV__TAG_RING_NB_RS = 105,
  HV__TAG_RING_NB_AG = 106,
  HV__TAG_ALLGATHER_HIER = 107
};

hv_result_t hv__transport_mpi_init(hv__transport_t *t, struct hv_comm *comm, MPI_Comm mpi);

#endif
