/* comm.c: communicator lifecycle: hv_init (initialising MPI when the program has
 * not), hv_init_from_mpi (duplicating the caller's communicator), node membership
 * (local and cross communicators), the background engine, and hv_shutdown. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autotune.h"
#include "cuda_internal.h"
#include "flight_recorder.h"
#include "hv_internal.h"
#include "hv_mpi.h"
#include "timeline.h"

static int hv_started_mpi; /* hv_init initialised MPI: the last hv_shutdown finalises it */
static int hv_live_comms;
static pthread_mutex_t lifecycle_mutex = PTHREAD_MUTEX_INITIALIZER;

static void comm_destroy(hv_comm_t *comm) {
  hv__timeline_close(comm->timeline);
  hv__fr_free(comm);
  hv__coordinator_destroy(comm);
  hv__autotune_free(comm);
  hv__cache_free(&comm->cache);
  hv__algo_ctx_free(&comm->algo);
  hv__algo_ctx_free(&comm->bench_algo);
  hv__algo_ctx_free(&comm->algo_local);
  hv__algo_ctx_free(&comm->algo_cross);
  hv__shm_destroy(&comm->shm);
  hv__cuda_free(comm);
  hv__map_free(&comm->names_in_flight);
  free(comm->pending_list);
  free(comm->bit_owner);
  free(comm->exec);
  free(comm->vec);
  free(comm->vec_out);
  free(comm->vec_tmp);
  free(comm->misses.data);
  free(comm->response.data);
  free(comm->fusion_buf);
  free(comm->pieces);
  free(comm->piece_owner);
  hv__fault_free(comm);
  free(comm->hosts);
  /* After a fatal error (a peer stopped answering) MPI still holds unfinished
   * requests on these communicators: leave them to the process's end. */
  if (comm->async_error == HV_SUCCESS) {
    if (comm->local != MPI_COMM_NULL) MPI_Comm_free(&comm->local);
    if (comm->cross != MPI_COMM_NULL && !comm->cross_borrowed) MPI_Comm_free(&comm->cross);
    if (comm->bench_mpi != MPI_COMM_NULL && !comm->mpi_borrowed) MPI_Comm_free(&comm->bench_mpi);
    if (comm->mpi != MPI_COMM_NULL && !comm->mpi_borrowed) MPI_Comm_free(&comm->mpi);
  }
  pthread_mutex_destroy(&comm->mutex);
  pthread_mutex_destroy(&comm->round_lock);
  pthread_cond_destroy(&comm->queue_cv);
  pthread_cond_destroy(&comm->done_cv);
  free(comm);
}

/* Shared memory for the node phases of CPU allreduce; without it MPI carries them.
 * Simulated ranks have none (their barrier would spin without yielding to the
 * simulator): the platform's intra-node link carries the node phases.
 *
 * A failure (a /dev/shm too small for local ranks x HV_SHM_SLOT_BYTES, as in Docker's
 * default 64 MiB; no /dev/shm) is not an error: MPI carries the node phases. But
 * every node must then do without: the hierarchical allreduce's cross-node phase
 * moves different pieces with shared memory and without, so nodes that disagree
 * would deadlock. One rank per node says so, at the default log level, with the
 * sizes and the fixes: it is a slowdown a user wants to hear of once, not per rank. */
static hv_result_t shm_set_up(hv_comm_t *comm) {
  const hv__errors_t *errors = &comm->host.errors;
  char why[400] = "";
  int failed = 0;
  if (HV_SIMULATED) {
    snprintf(comm->shm_off, sizeof comm->shm_off, "simulated ranks have no shared memory");
    return HV_SUCCESS; /* on every rank alike: nothing to agree on */
  }
  if (comm->local_size == 1) snprintf(comm->shm_off, sizeof comm->shm_off, "one rank on this node");
  else if (comm->config.shm_slot_bytes == 0) {
    /* Asked for: no warning, but a line at info level and hv_comm_shm_status say so. */
    snprintf(comm->shm_off, sizeof comm->shm_off, "HV_SHM_SLOT_BYTES=0");
    if (comm->local_rank == 0)
      HV_LOG(HV__LOG_INFO, "no shared memory (HV_SHM_SLOT_BYTES=0): intra-node traffic goes through MPI");
  } else if (hv__shm_create(&comm->shm, &comm->host, comm->local, comm->config.shm_slot_bytes, why, sizeof why) !=
           HV_SUCCESS) {
    memset(&comm->shm, 0, sizeof comm->shm);
    failed = 1;
  }
  /* The lowest rank of a failing node is its local rank 0 (the local communicator is
   * ordered by rank), which holds the cause: it tells every node. */
  struct { int failed, rank; } mine = {failed, comm->rank}, first;
  HV_MPI_CHECK(errors, MPI_Allreduce(&mine, &first, 1, MPI_2INT, MPI_MAXLOC, comm->mpi));
  /* Shared memory without cross-memory attach: the single-copy allreduce's sizes copy
   * through the slots (slower there, never wrong); said once per node. */
  if (!first.failed && comm->shm.header && !comm->shm.cma && comm->shm.cma_off[0] && comm->local_rank == 0)
    HV_LOG(HV__LOG_INFO,
           "no single-copy shared-memory allreduce on host %s (%s): allreduces from 2 MiB copy through "
           "shared memory instead; HV_SHM_CMA=0 skips this check",
           comm->hosts[comm->rank], comm->shm.cma_off);
  if (!first.failed) return HV_SUCCESS;
  HV_MPI_CHECK(errors, MPI_Bcast(why, sizeof why, MPI_CHAR, first.rank, comm->mpi));
  hv__shm_destroy(&comm->shm);
  const char *fix = "to use it, give /dev/shm more room (docker run --shm-size=..., or mount a larger tmpfs on "
                    "/dev/shm) or lower HV_SHM_SLOT_BYTES; HV_SHM_SLOT_BYTES=0 turns shared memory off without "
                    "this warning";
  if (failed)
    snprintf(comm->shm_off, sizeof comm->shm_off, "%s", why);
  else
    snprintf(comm->shm_off, sizeof comm->shm_off, "off on every node because of host %s (rank %d): %s",
             comm->hosts[first.rank], first.rank, why);
  if (comm->local_rank == 0 && comm->local_size > 1) {
    if (failed)
      HV_LOG(HV__LOG_WARNING, "no shared memory on host %s, so intra-node traffic goes through MPI (slower): %s; %s",
             comm->hosts[comm->rank], why, fix);
    else
      HV_LOG(HV__LOG_WARNING,
             "no shared memory on any node (every node must run the same algorithms), so intra-node traffic goes "
             "through MPI (slower): on host %s (rank %d): %s; %s",
             comm->hosts[first.rank], first.rank, why, fix);
  }
  return HV_SUCCESS;
}

/* Node membership: ranks sharing memory form the local communicator. For tests that
 * emulate several nodes on one machine, HV_RANKS_PER_NODE=k groups consecutive
 * ranks k by k instead. */
static hv_result_t split_nodes(hv_comm_t *comm) {
  HV_CHECK(hv__init_agree(comm, HV_SUCCESS)); /* the algorithm contexts before it */
  const char *k = getenv("HV_RANKS_PER_NODE");
  if (k && *k) {
    char *end;
    long per = strtol(k, &end, 10);
    if (*end || per < 1)
      return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT,
                           "HV_RANKS_PER_NODE='%s' is not valid: expected a positive number of ranks", k);
    /* Consecutive ranks of the job (hvrun's numbering), so that a sub-communicator
     * (comm_split.c) sees the nodes its ranks are on. */
    int job_rank = comm->rank;
    if (!HV_SIMULATED) MPI_Comm_rank(MPI_COMM_WORLD, &job_rank);
    HV_MPI_CHECK(&comm->host.errors, MPI_Comm_split(comm->mpi, (int)(job_rank / per), comm->rank, &comm->local));
  } else {
    HV_MPI_CHECK(&comm->host.errors, MPI_Comm_split_type(comm->mpi, MPI_COMM_TYPE_SHARED, comm->rank, MPI_INFO_NULL,
                                           &comm->local));
  }
  MPI_Comm_rank(comm->local, &comm->local_rank);
  MPI_Comm_size(comm->local, &comm->local_size);
  MPI_Comm_set_errhandler(comm->local, MPI_ERRORS_RETURN);

  /* Hierarchical algorithms need the same number of ranks on every node: find out
   * now, before the first collective, and refuse a forced hierarchical mode. */
  int sizes[2] = {comm->local_size, -comm->local_size}, extremes[2];
  HV_MPI_CHECK(&comm->host.errors, MPI_Allreduce(sizes, extremes, 2, MPI_INT, MPI_MAX, comm->mpi));
  int uniform = extremes[0] == -extremes[1];
  /* One rank on every node: the cross communicator has the members of mpi in the same
   * order. A simulated build uses mpi itself: SMPI's communicator creation costs a ring
   * allgather over all ranks (n simulated steps, n^2 messages to simulate), which
   * dominated simulating hv_init at 1,024 ranks. hv runs one collective at a time on
   * the calling thread there, so the two contexts never have messages in flight at once. */
  if (HV_SIMULATED && extremes[0] == 1) {
    comm->cross = comm->mpi;
    comm->cross_borrowed = 1;
  } else {
    HV_MPI_CHECK(&comm->host.errors, MPI_Comm_split(comm->mpi, comm->local_rank, comm->rank, &comm->cross));
    MPI_Comm_set_errhandler(comm->cross, MPI_ERRORS_RETURN);
  }
  MPI_Comm_rank(comm->cross, &comm->cross_rank);
  MPI_Comm_size(comm->cross, &comm->cross_size);
  int forced = comm->config.hierarchical == 1 || comm->config.allreduce_algo == HV__ALGO_HIER;
  if (!uniform && forced)
    return hv__set_error(NULL, HV_ERR_UNSUPPORTED,
                         "hierarchical allreduce was forced (HV_HIERARCHICAL_ALLREDUCE=1 or HV_ALLREDUCE_ALGO=hier) "
                         "but nodes have from %d to %d ranks; launch the same number of ranks per node "
                         "(e.g. srun --ntasks-per-node) or unset it",
                         -extremes[1], extremes[0]);
  if (!uniform)
    HV_LOG(HV__LOG_INFO, "nodes have from %d to %d ranks: hierarchical allreduce is off", -extremes[1], extremes[0]);
  /* Checked against the largest node, which every rank knows: all fail alike. */
  if (comm->config.shm_slot_bytes > 0 && extremes[0] > 1 && hv__shm_region_bytes(extremes[0], comm->config.shm_slot_bytes) == 0)
    return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT,
                         "HV_SHM_SLOT_BYTES=%zu x %d ranks on the largest node overflows size_t: use a smaller slot "
                         "(the default is 4M)", comm->config.shm_slot_bytes, extremes[0]);
  /* The chunks within a node and across nodes: both ends of a message must cut it
   * alike, so every rank takes the smallest any rank chose (auto may see another
   * network on another node; HV_RING_CHUNK_BYTES may differ by mistake). */
  unsigned long long chunks[2] = {comm->config.ring_chunk_bytes,
                                  comm->config.net_chunk_bytes ? comm->config.net_chunk_bytes : hv__net_chunk_auto()};
  if (!chunks[1]) chunks[1] = chunks[0];
  if (!HV_SIMULATED) /* there every rank has the same settings and no sockets */
    HV_MPI_CHECK(&comm->host.errors, MPI_Allreduce(MPI_IN_PLACE, chunks, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm->mpi));
  comm->host.ring_chunk_bytes = (size_t)chunks[0];
  comm->host.net_chunk_bytes = (size_t)chunks[1];
  HV_CHECK(hv__algo_ctx_init_mpi(&comm->algo_local, &comm->host, comm->local));
  HV_CHECK(hv__algo_ctx_init_mpi(&comm->algo_cross, &comm->host, comm->cross));
  comm->algo_cross.spans_nodes = comm->cross_size > 1;
  HV_CHECK(hv__init_agree(comm, HV_SUCCESS)); /* before shm_set_up's collectives */
  HV_CHECK(shm_set_up(comm));
  hv__algo_ctx_t *ctxs[2] = {&comm->algo, &comm->bench_algo};
  for (int i = 0; i < 2; i++) {
    ctxs[i]->local = &comm->algo_local;
    ctxs[i]->cross = &comm->algo_cross;
    ctxs[i]->uniform_nodes = uniform;
    ctxs[i]->spans_nodes = comm->local_size < comm->size;
    ctxs[i]->shm = comm->shm.header ? &comm->shm : NULL;
  }
  return HV_SUCCESS;
}

/* Cores this rank may use: its affinity mask, and no more than its share of the node. */
static int cores_per_rank(int local_size) {
  cpu_set_t set;
  int mine = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int share = online > 0 ? (int)(online / (local_size > 0 ? local_size : 1)) : 1;
  return mine < share ? mine : share;
}

/* The fault watcher's two calls as the algorithm host's callbacks (owner: comm);
 * fault.c, or fault_simulated.c in simulated builds, implements them. */
static hv_result_t host_fault_poll(void *owner, hv__wait_watch_t *ww, double waited_us, const char *what) {
  return hv__fault_poll(owner, ww, waited_us, what);
}

static void host_stopped_note(void *owner, char *out, size_t len) { hv__fault_stopped_note(owner, out, len); }

/* Rank `peer` of one of this communicator's MPI communicators (node, cross-node or
 * the whole) as "rank Q on host H", Q a rank of the communicator. */
static void host_peer_name(void *owner, const void *mpi_comm, int peer, char *out, size_t len) {
  hv_comm_t *comm = owner;
  MPI_Group from, to;
  int q = MPI_UNDEFINED;
  if (MPI_Comm_group(*(const MPI_Comm *)mpi_comm, &from) == MPI_SUCCESS) {
    if (MPI_Comm_group(comm->mpi, &to) == MPI_SUCCESS) {
      MPI_Group_translate_ranks(from, 1, &peer, to, &q);
      MPI_Group_free(&to);
    }
    MPI_Group_free(&from);
  }
  if (q >= 0 && q < comm->size && comm->hosts) snprintf(out, len, "rank %d on host %s", q, comm->hosts[q]);
  else snprintf(out, len, "rank %d of a node or cross-node communicator", peer);
}

/* What the algorithms see of this communicator: its error sink, rank, settings and
 * the fault watcher's two callbacks (algo/host.h). */
static void host_init(hv_comm_t *comm) {
  hv__algo_host_t *host = &comm->host;
  hv__algo_host_defaults(host);
  host->errors = (hv__errors_t){hv__comm_record_error, comm, comm->rank};
  host->rank = comm->rank;
  host->timeout_s = comm->config.timeout_s;
  host->ring_chunk_bytes = comm->config.ring_chunk_bytes;
  host->small_allreduce_bytes = comm->config.small_allreduce_bytes;
  if (comm->config.link_gbits > 0 && !comm->config.small_allreduce_given) {
    host->link_Bps = comm->config.link_gbits * 1e9 / 8;
    host->link_latency_s = comm->config.link_latency_us * 1e-6;
  }
  host->hierarchical = comm->config.hierarchical;
  host->shm_cma = comm->config.shm_cma;
  host->fault_poll = host_fault_poll;
  host->stopped_note = host_stopped_note;
  host->peer_name = host_peer_name;
  host->owner = comm;
}

#if !HV_SIMULATED
/* Duplicates and arrival waits that hv_init gave up on: MPI still holds their
 * requests and writes the new communicator when the missing ranks arrive, so they
 * must stay allocated (and reachable) for the life of the process. */
static struct abandoned_dup {
  MPI_Comm comm;
  MPI_Request req;
  struct abandoned_dup *next;
} *abandoned_dups;
#endif

/* comm->mpi = a duplicate of `user`, waiting at most HV_TIMEOUT for every rank of it
 * to arrive: the first collective of hv_init, so a rank that never calls it (crashed
 * at start, stuck before it, a program that calls it on some ranks only) fails the
 * others with a named error instead of hanging them. MPI cannot tell which ranks are
 * missing before all have arrived, so the error says how many wait, not who. */
static hv_result_t dup_when_all_arrive(hv_comm_t *comm, MPI_Comm user) {
#if HV_SIMULATED
  /* Simulated ranks (SimGrid SMPI) all start together, and a polling loop would spin
   * outside the simulator's clock (wait_mpi.c does the same). */
  if (MPI_Comm_dup(user, &comm->mpi) != MPI_SUCCESS) return hv__set_error(NULL, HV_ERR_MPI, "MPI_Comm_dup failed");
  return HV_SUCCESS;
#else
  struct abandoned_dup *d = calloc(1, sizeof *d);
  if (!d) return hv__set_error(NULL, HV_ERR_NO_MEMORY, "out of memory creating a communicator");
  d->comm = MPI_COMM_NULL;
  if (MPI_Comm_idup(user, &d->comm, &d->req) != MPI_SUCCESS) {
    free(d);
    return hv__set_error(NULL, HV_ERR_MPI, "MPI_Comm_idup failed");
  }
  double start = hv__now_us(), limit = comm->config.timeout_s * 1e6, pause = 50;
  for (;;) {
    int done = 0;
    if (MPI_Test(&d->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      free(d);
      return hv__set_error(NULL, HV_ERR_MPI, "MPI_Comm_idup failed");
    }
    if (done) break;
    double waited = hv__now_us() - start;
    if (limit > 0 && waited >= limit) {
      int rank = -1, size = 0;
      MPI_Comm_rank(user, &rank);
      MPI_Comm_size(user, &size);
      d->next = abandoned_dups, abandoned_dups = d;
      return hv__set_error(NULL, HV_ERR_TIMEOUT,
                           "hv_init: rank %d of %d waited longer than HV_TIMEOUT=%g s for the other ranks of the "
                           "communicator to call hv_init (or hv_init_from_mpi): at least one of the other %d never "
                           "did (it failed or exited before it, is stuck or stopped, or the program calls it on some "
                           "ranks only); MPI cannot tell which until all have arrived",
                           rank, size, comm->config.timeout_s, size - 1);
    }
    /* Ranks start within milliseconds of one another: poll fast at first, then back
     * off to 10 ms so a long wait costs no core. */
    usleep((useconds_t)pause);
    if (pause < 10000) pause *= 2;
  }
  comm->mpi = d->comm;
  free(d);
  return HV_SUCCESS;
#endif
}

/* hv_init's result is every rank's. A rank that fails alone (out of memory) and
 * returns would leave the others waiting in init's next collective for ever, and
 * itself in MPI_Finalize. So each collective step of init is preceded by this
 * agreement on the user's communicator (whose collectives all ranks make in the same
 * order during hv_init), and a failing rank makes one on its way out, meeting the
 * others at their next: all fail together, the others naming the rank and its error
 * (HV_ERR_ABORTED). rc: this rank's result so far; returns the job's. */
static hv_result_t init_agree(MPI_Comm user, int *agreed, hv_result_t rc) {
  int rank = 0;
  MPI_Comm_rank(user, &rank);
  int in[2] = {rc == HV_SUCCESS ? INT_MAX : (int)rc, rank}, out[2];
  if (MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, user) != MPI_SUCCESS) {
    *agreed = 1;
    return rc != HV_SUCCESS ? rc : hv__set_error(NULL, HV_ERR_MPI, "hv_init: MPI_Allreduce failed");
  }
  if (out[0] == INT_MAX) return HV_SUCCESS;
  *agreed = 1;
  if (rc != HV_SUCCESS) return rc; /* this rank's own error says more */
  return hv__set_error(NULL, HV_ERR_ABORTED, "hv_init failed on rank %d: %s", out[1], hv_strerror((hv_result_t)out[0]));
}

hv_result_t hv__init_agree(hv_comm_t *comm, hv_result_t rc) {
  return init_agree(comm->init_comm, &comm->init_agreed, rc);
}

static hv_result_t comm_create(MPI_Comm user, hv_comm_t **out) {
  hv_comm_t *comm = calloc(1, sizeof *comm);
  if (!comm) /* the others end at HV_TIMEOUT in their first collective (dup_when_all_arrive) */
    return hv__set_error(NULL, HV_ERR_NO_MEMORY, "out of memory creating a communicator");
  comm->init_comm = user;
  comm->mpi = comm->local = comm->cross = comm->bench_mpi = MPI_COMM_NULL;
  pthread_mutex_init(&comm->mutex, NULL);
  pthread_mutex_init(&comm->round_lock, NULL);
  pthread_cond_init(&comm->queue_cv, NULL);
  pthread_cond_init(&comm->done_cv, NULL);
  char err[512];
  hv_result_t rc = hv__config_load(&comm->config, err, sizeof err);
  if (rc != HV_SUCCESS) {
    /* Every rank reads the same environment, so every rank fails here alike. */
    rc = hv__set_error(NULL, rc, "%s", err);
    comm->init_agreed = 1;
    goto fail;
  }
  hv__log_level = comm->config.log_level;
  /* A simulated build may borrow the caller's communicator (HV_SIM_SHARE_COMM=1, for
   * runs of thousands of ranks: every SMPI communicator creation is a ring allgather
   * over all ranks, see split_nodes); the caller then makes no MPI call on it while an
   * hv operation is in flight. Simulated builds also make the benchmark communicator
   * on first use (hv__comm_bench_ctx): the engine is threadless there.
   * Otherwise the first collective of init is the duplicate, bounded by HV_TIMEOUT;
   * before it every rank fails alike (config) or alone (memory), and no agreement can
   * be met (the others are in this duplicate, not in an allreduce): those failures
   * return without one. */
  const char *share = HV_SIMULATED ? getenv("HV_SIM_SHARE_COMM") : NULL;
  comm->mpi_borrowed = share && share[0] == '1';
  if (comm->mpi_borrowed) {
    comm->mpi = user;
  } else if ((rc = dup_when_all_arrive(comm, user)) != HV_SUCCESS) {
    comm->init_agreed = 1;
    goto fail;
  }
  if ((rc = hv__init_agree(comm, HV_SUCCESS)) != HV_SUCCESS) goto fail;
  if (!HV_SIMULATED && MPI_Comm_dup(user, &comm->bench_mpi) != MPI_SUCCESS) {
    rc = hv__set_error(NULL, HV_ERR_MPI, "MPI_Comm_dup failed");
    goto fail;
  }
  /* hv reports errors itself: MPI must return codes on our communicators, not abort. */
  MPI_Comm_set_errhandler(comm->mpi, MPI_ERRORS_RETURN);
  if (comm->bench_mpi != MPI_COMM_NULL) MPI_Comm_set_errhandler(comm->bench_mpi, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm->mpi, &comm->rank);
  MPI_Comm_size(comm->mpi, &comm->size);
  if (hv__log_rank < 0) hv__log_rank = comm->rank;
  host_init(comm);
  /* Host names name a peer that stops answering (fault.c); the simulated fault watcher
   * (fault_simulated.c) watches nothing and names no one, so it needs none. */
  if (!HV_SIMULATED) {
    char host[64] = {0};
    gethostname(host, sizeof host - 1);
    comm->hosts = calloc((size_t)comm->size, sizeof *comm->hosts);
    rc = comm->hosts ? HV_SUCCESS : hv__set_error(NULL, HV_ERR_NO_MEMORY, "out of memory creating a communicator");
    if ((rc = hv__init_agree(comm, rc)) != HV_SUCCESS) goto fail;
    if (MPI_Allgather(host, 64, MPI_CHAR, comm->hosts, 64, MPI_CHAR, comm->mpi) != MPI_SUCCESS) {
      rc = hv__set_error(NULL, HV_ERR_MPI, "cannot exchange host names at init");
      goto fail;
    }
  }
  /* Pids for the watch on lost and stopped peers (fault.c), which names them. */
  if ((rc = hv__fault_init(comm)) != HV_SUCCESS ||
      (rc = hv__algo_ctx_init_mpi(&comm->algo, &comm->host, comm->mpi)) != HV_SUCCESS ||
      (!HV_SIMULATED && (rc = hv__algo_ctx_init_mpi(&comm->bench_algo, &comm->host, comm->bench_mpi)) != HV_SUCCESS) ||
      (rc = split_nodes(comm)) != HV_SUCCESS || (rc = hv__cuda_init(comm)) != HV_SUCCESS)
    goto fail;
  if (hv__cache_init(&comm->cache, comm->config.cache_capacity, comm->size) || hv__fr_create(comm)) goto oom;
  size_t words = 2 * ((comm->config.cache_capacity + 63) / 64) + 1;
  comm->vec = calloc(words, sizeof(uint64_t));
  comm->vec_out = calloc(words, sizeof(uint64_t));
  comm->vec_tmp = calloc(words, sizeof(uint64_t));
  comm->bit_owner = calloc(comm->config.cache_capacity + 1, sizeof *comm->bit_owner);
  if (!comm->vec || !comm->vec_out || !comm->vec_tmp || !comm->bit_owner) goto oom;
  if (comm->rank == 0 && (rc = hv__coordinator_create(comm)) != HV_SUCCESS) goto fail;
  if ((rc = hv__autotune_create(comm)) != HV_SUCCESS) goto fail;
  if (comm->config.timeline_path[0]) {
    comm->timeline = hv__timeline_open(comm->config.timeline_path, comm->rank, err, sizeof err);
    if (!comm->timeline) {
      rc = hv__set_error(NULL, HV_ERR_SYSTEM, "%s", err);
      goto fail;
    }
  }
  comm->spin_ok = cores_per_rank(comm->local_size) >= 2;
  comm->host.spin_ok = comm->spin_ok;
  /* The last agreement: everything above may have failed on one rank only. */
  if ((rc = hv__init_agree(comm, HV_SUCCESS)) != HV_SUCCESS) goto fail;
  if ((rc = hv__engine_start(comm)) != HV_SUCCESS) goto fail;
  hv__flight_register(comm); /* its documents, the status socket (flight_dump.c) */
  HV_LOG(HV__LOG_INFO, "communicator of %d ranks (%d on this node, %d nodes), algo=%s, fusion=%zu bytes, "
         "chunk=%zu bytes (%zu across nodes)", comm->size, comm->local_size, comm->cross_size,
         hv__algo_name(comm->config.allreduce_algo), comm->config.fusion_threshold, comm->host.ring_chunk_bytes,
         comm->host.net_chunk_bytes);
  *out = comm;
  return HV_SUCCESS;
oom:
  rc = hv__set_error(NULL, HV_ERR_NO_MEMORY, "out of memory creating a communicator");
fail:
  if (!comm->init_agreed) init_agree(user, &comm->init_agreed, rc);
  if (comm->last_error[0]) hv__set_error(NULL, rc, "%s", comm->last_error);
  comm_destroy(comm);
  return rc;
}

/* The context of hv_bench_allreduce_algorithm. Simulated builds make its communicator
 * on the first call (collective: every rank benchmarks the same algorithm), keeping
 * the links split_nodes gave it. */
hv_result_t hv__comm_bench_ctx(hv_comm_t *comm, hv__algo_ctx_t **out) {
  if (comm->bench_mpi == MPI_COMM_NULL) {
    hv__algo_ctx_t links = comm->bench_algo;
    /* Borrowed world (HV_SIM_SHARE_COMM=1): the benchmark borrows it too. */
    if (comm->mpi_borrowed)
      comm->bench_mpi = comm->mpi;
    else if (MPI_Comm_dup(comm->mpi, &comm->bench_mpi) != MPI_SUCCESS)
      return hv__set_error(comm, HV_ERR_MPI, "MPI_Comm_dup failed");
    MPI_Comm_set_errhandler(comm->bench_mpi, MPI_ERRORS_RETURN);
    HV_CHECK(hv__algo_ctx_init_mpi(&comm->bench_algo, &comm->host, comm->bench_mpi));
    comm->bench_algo.local = links.local;
    comm->bench_algo.cross = links.cross;
    comm->bench_algo.uniform_nodes = links.uniform_nodes;
    comm->bench_algo.shm = links.shm;
  }
  *out = &comm->bench_algo;
  return HV_SUCCESS;
}

hv_result_t hv_init_from_mpi(MPI_Comm mpi_comm, hv_comm_t **comm) {
  if (!comm) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_init_from_mpi: comm is NULL");
  *comm = NULL;
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (!inited || finalized)
    return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_init_from_mpi: MPI is not initialised (call MPI_Init_thread first, or use hv_init)");
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  /* A simulated build has no background thread (engine_threadless.c). */
  if (!HV_SIMULATED && provided < MPI_THREAD_SERIALIZED)
    return hv__set_error(NULL, HV_ERR_UNSUPPORTED,
                         "MPI was initialised with thread level %d; hv's background thread needs at least "
                         "MPI_THREAD_SERIALIZED (MPI_THREAD_MULTIPLE recommended)", provided);
  hv_result_t rc = comm_create(mpi_comm, comm);
  if (rc == HV_SUCCESS) {
    pthread_mutex_lock(&lifecycle_mutex);
    hv_live_comms++;
    pthread_mutex_unlock(&lifecycle_mutex);
  }
  return rc;
}

hv_result_t hv_init(int *argc, char ***argv, hv_comm_t **comm) {
  if (!comm) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_init: comm is NULL");
  *comm = NULL;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      return hv__set_error(NULL, HV_ERR_MPI, "MPI_Init_thread failed: is this an Open MPI launch (mpirun, srun --mpi=pmix, hvrun)?");
    /* hv, not MPI, reports errors: return codes instead of aborting the job. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    pthread_mutex_lock(&lifecycle_mutex);
    hv_started_mpi = 1;
    pthread_mutex_unlock(&lifecycle_mutex);
  }
  hv_result_t rc = hv_init_from_mpi(MPI_COMM_WORLD, comm);
  if (rc != HV_SUCCESS && !inited) {
    pthread_mutex_lock(&lifecycle_mutex);
    if (hv_live_comms == 0 && hv_started_mpi) {
      hv_started_mpi = 0;
      MPI_Finalize();
    }
    pthread_mutex_unlock(&lifecycle_mutex);
  }
  return rc;
}

hv_result_t hv_shutdown(hv_comm_t *comm) {
  if (!comm) return HV_SUCCESS;
  hv__engine_stop(comm);
  /* HV_FLIGHT_RECORDER=DIR: the final state, every request completed or failed. */
  const char *flight_dir = getenv("HV_FLIGHT_RECORDER");
  if (comm->flight && flight_dir && *flight_dir) hv__flight_dump(comm, "exit", "");
  hv__flight_unregister(comm);
  hv_result_t rc = comm->async_error;
  if (rc != HV_SUCCESS) hv__set_error(NULL, rc, "%s", comm->last_error);
  comm_destroy(comm);
  pthread_mutex_lock(&lifecycle_mutex);
  static int broken; /* a communicator died: MPI_Finalize would wait for the dead peer */
  broken |= rc != HV_SUCCESS;
  int finalize = --hv_live_comms == 0 && hv_started_mpi && !broken;
  if (finalize) hv_started_mpi = 0;
  pthread_mutex_unlock(&lifecycle_mutex);
  if (finalize) MPI_Finalize();
  return rc;
}

#define GETTER(fn, field)                                                        \
  hv_result_t fn(const hv_comm_t *comm, int *out) {                              \
    if (!comm || !out) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, #fn ": NULL argument"); \
    *out = comm->field;                                                          \
    return HV_SUCCESS;                                                           \
  }
GETTER(hv_comm_rank, rank)
GETTER(hv_comm_size, size)
GETTER(hv_comm_local_rank, local_rank)
GETTER(hv_comm_local_size, local_size)
GETTER(hv_comm_cross_rank, cross_rank)
GETTER(hv_comm_cross_size, cross_size)

hv_result_t hv_comm_compression(const hv_comm_t *comm, hv_compression_t *compression) {
  if (!comm || !compression) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_comm_compression: NULL argument");
  *compression = comm->config.compression;
  return HV_SUCCESS;
}

hv_result_t hv_comm_allreduce_count(const hv_comm_t *comm, const char *algo, uint64_t *count) {
  if (!comm || !algo || !count)
    return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_comm_allreduce_count: NULL argument");
  for (int id = HV__ALGO_RING; id < HV__NUM_RAN; id++)
    if (strcmp(algo, hv__algo_name((hv__algo_t)id)) == 0) {
      *count = atomic_load_explicit(&((hv_comm_t *)comm)->allreduce_runs[id], memory_order_relaxed);
      return HV_SUCCESS;
    }
  return hv__set_error((hv_comm_t *)comm, HV_ERR_INVALID_ARGUMENT,
                       "hv_comm_allreduce_count: unknown algorithm '%s' (shm, hier_shm, hier, ring, rd, rab, 2d, mpi, 1r)",
                       algo);
}

hv_result_t hv_comm_shm_status(const hv_comm_t *comm, int *on, char *why, size_t len) {
  if (!comm || !on) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_comm_shm_status: NULL argument");
  *on = comm->shm.header != NULL;
  if (why && len) snprintf(why, len, "%s", comm->shm_off);
  return HV_SUCCESS;
}

hv_result_t hv_comm_get_async_error(const hv_comm_t *comm, hv_result_t *async_error) {
  if (!comm || !async_error) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_comm_get_async_error: NULL argument");
  hv_comm_t *c = (hv_comm_t *)comm;
  pthread_mutex_lock(&c->mutex);
  *async_error = c->async_error;
  pthread_mutex_unlock(&c->mutex);
  return HV_SUCCESS;
}
