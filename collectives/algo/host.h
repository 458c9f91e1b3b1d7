/* host.h: what the algorithms need of whoever runs them: the engine, a test's
 * in-process ranks, or the simulator. One per communicator, read-only while
 * algorithms run. This is the algorithms' whole view of the world: they never see
 * the engine's types. */
#ifndef HV_ALGO_HOST_H
#define HV_ALGO_HOST_H

#include <stddef.h>

#include "checks.h"

/* Per-wait state of the checks a long wait makes; zero-initialise one per wait. */
typedef struct hv__wait_watch {
  double next_us, next_stall_us;
} hv__wait_watch_t;

typedef struct hv__algo_host {
  hv__errors_t errors;          /* where failures' details go */
  int rank;                     /* this rank in the job, for messages */
  double timeout_s;             /* HV_TIMEOUT: a wait on peers longer than this fails, 0 never */
  int spin_ok;                  /* a core for each busy thread: waits may spin longer */
  size_t ring_chunk_bytes;      /* HV_RING_CHUNK_BYTES: the ring's pipelining unit */
  size_t net_chunk_bytes;       /* HV_NET_CHUNK_BYTES: the unit in contexts that span nodes
                                   (hv__chunk_bytes); 0: ring_chunk_bytes there too */
  size_t small_allreduce_bytes; /* HV_SMALL_ALLREDUCE_BYTES: auto uses rd at or below */
  /* HV_LINK_GBITS / HV_LINK_LATENCY_US: the network as one rank sees it, bytes/s and
   * seconds per message; link_Bps 0 (not given, or HV_SMALL_ALLREDUCE_BYTES given):
   * auto's rd limit is small_allreduce_bytes, else the alpha-beta crossover
   * (allreduce_select.c). */
  double link_Bps, link_latency_s;
  int hierarchical;             /* HV_HIERARCHICAL_ALLREDUCE: -1 auto, 0 off, 1 forced */
  int cross_algo;               /* the outer phase of the hierarchical (across nodes) and
                                   2-D (down columns) allreduces: an hv__algo_t, ring, rd
                                   or rab; auto: rd when small or two ranks, else ring */
  int shm_cma;                  /* HV_SHM_CMA: the single-copy allreduce on one node
                                   (allreduce_shm_cma.c): -1 auto (where measured to
                                   win, when the node allows it), 0 never, 1 at every
                                   size (tests, measurements) */
  int grid_cols;                /* the 2-D allreduce's row width (must divide the ranks);
                                   0: the largest divisor at most their square root */
  /* Called now and then by every wait on peers with the time waited so far: a result
   * other than HV_SUCCESS ends the wait with it (a lost or stopped peer). NULL: none. */
  hv_result_t (*fault_poll)(void *owner, hv__wait_watch_t *ww, double waited_us, const char *what);
  /* "; rank Q on host H is stopped (...)" for a timeout's message, or "". NULL: none. */
  void (*stopped_note)(void *owner, char *out, size_t len);
  /* "rank Q on host H" for rank `peer` of the MPI communicator *mpi_comm (an
   * MPI_Comm, which this header does not name): a wait that runs out of time names
   * the peer it waited for. NULL: the transport says "rank <peer> of its communicator". */
  void (*peer_name)(void *owner, const void *mpi_comm, int peer, char *out, size_t len);
  void *owner; /* the first argument of the callbacks */
} hv__algo_host_t;

/* The defaults of the settings above (the README's table), no callbacks. */
void hv__algo_host_defaults(hv__algo_host_t *host);
/* Polls the host's fault callback (HV_SUCCESS when it has none). */
hv_result_t hv__algo_host_poll(const hv__algo_host_t *host, hv__wait_watch_t *ww, double waited_us,
                               const char *what);
/* HV_ERR_TIMEOUT naming `what`, the timeout and a stopped peer if the host knows one. */
hv_result_t hv__algo_host_timeout(const hv__algo_host_t *host, const char *what);

#endif
