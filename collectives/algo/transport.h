/* transport.h: the point-to-point interface the algorithms speak (isend, irecv,
 * wait), so another transport can stand in for MPI without touching algorithm code:
 * MPI in production (transport_mpi.c), threads of one process in tests
 * (transport_local.c). Sizes are bytes and at most HV__TRANSPORT_MAX_MESSAGE;
 * algorithms chunk larger transfers. */
#ifndef HV_TRANSPORT_H
#define HV_TRANSPORT_H

#include <mpi.h>
#include <stddef.h>

#include "host.h"
#include "hv.h"

#define HV__TRANSPORT_MAX_MESSAGE ((size_t)1 << 30)

/* MPI's request, or the in-process transport's operation. */
typedef union hv__request {
  MPI_Request mpi;
  void *local;
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
  const hv__algo_host_t *host; /* errors, timeout, fault polls */
  /* The peers of the latest requests posted (transport_mpi.c), so a wait that runs
   * long can say whom it waits for (a lost link names the node behind it). */
  struct {
    MPI_Request req;
    int peer, recv;
  } posted[16];
  unsigned posted_next;
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
  HV__TAG_ALLGATHER_HIER = 107,
  HV__TAG_RAB_RS = 108, /* Rabenseifner: folding in and recursive halving */
  HV__TAG_RAB_AG = 109, /* Rabenseifner: recursive doubling and unfolding */
  HV__TAG_ALLREDUCE_1R = 110, /* single-rounding 16-bit allreduce: the all-to-all */
  HV__TAG_ALLTOALLV = 111     /* alltoallv, gather(v), scatter(v), send/recv */
};
/* A sub-transport (hv__transport_sub_init) adds its offset to every tag above, so
 * the 2-D allreduce's row and column phases never match each other's messages nor
 * those of an algorithm on the whole transport. */
enum { HV__TAG_SUB_ROW = 1000, HV__TAG_SUB_COL = 2000 };

/* Point-to-point over mpi (which must outlive t). */
hv_result_t hv__transport_mpi_init(hv__transport_t *t, const hv__algo_host_t *host, MPI_Comm *mpi);

/* R ranks as R threads of one process (transport_local.c): messages are copied
 * through memory, matched per (source, tag) in posting order like MPI's. The world
 * is created once, then each rank's thread makes its transport from it. */
typedef struct hv__local_world hv__local_world_t;
hv__local_world_t *hv__local_world_create(int size);
void hv__local_world_destroy(hv__local_world_t *world);
void hv__transport_local_init(hv__transport_t *t, const hv__algo_host_t *host, hv__local_world_t *world, int rank);

/* A transport over `size` of parent's ranks (transport_sub.c): sub-rank i is parent
 * rank ranks[i], and every tag is moved up by tag_offset. Requests are the parent's,
 * so a transport of either kind (MPI, in-process) works the same. parent must be one
 * of ranks; sub, ranks and parent must outlive t. */
typedef struct hv__transport_sub {
  hv__transport_t *parent;
  const int *ranks;
  int tag_offset;
} hv__transport_sub_t;
hv_result_t hv__transport_sub_init(hv__transport_t *t, hv__transport_sub_t *sub, hv__transport_t *parent,
                                   const int *ranks, int size, int tag_offset);

#endif
