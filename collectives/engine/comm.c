/* comm.c: communicator lifecycle: hv_init (initialising MPI when the program has
 * not), hv_init_from_mpi (duplicating the caller's communicator), node membership
 * (local and cross communicators), the background engine, and hv_shutdown. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_internal.h"
#include "hv_internal.h"
#include "hv_mpi.h"
#include "timeline.h"

static int hv_started_mpi; /* hv_init initialised MPI: the last hv_shutdown finalises it */
static int hv_live_comms;
static pthread_mutex_t lifecycle_mutex = PTHREAD_MUTEX_INITIALIZER;

static void comm_destroy(hv_comm_t *comm) {
  hv__timeline_close(comm->timeline);
  hv__coordinator_destroy(comm);
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

/* Node membership: ranks sharing memory form the local communicator. For tests that
 * emulate several nodes on one machine, HV_RANKS_PER_NODE=k groups consecutive
 * ranks k by k instead. */
static hv_result_t split_nodes(hv_comm_t *comm) {
  const char *k = getenv("HV_RANKS_PER_NODE");
  if (k && *k) {
    char *end;
    long per = strtol(k, &end, 10);
    if (*end || per < 1)
      return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT,
                           "HV_RANKS_PER_NODE='%s' is not valid: expected a positive number of ranks", k);
    HV_MPI_CHECK(&comm->host.errors, MPI_Comm_split(comm->mpi, (int)(comm->rank / per), comm->rank, &comm->local));
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
  HV_CHECK(hv__algo_ctx_init_mpi(&comm->algo_local, &comm->host, comm->local));
  HV_CHECK(hv__algo_ctx_init_mpi(&comm->algo_cross, &comm->host, comm->cross));
  /* Shared memory for the node phases of CPU allreduce; without it MPI carries them.
   * Simulated ranks have none (their barrier would spin without yielding to the
   * simulator): the platform's intra-node link carries the node phases. */
  if (!HV_SIMULATED && comm->local_size > 1 && comm->config.shm_slot_bytes > 0 &&
      hv__shm_create(&comm->shm, &comm->host, comm->local, comm->config.shm_slot_bytes) != HV_SUCCESS)
    memset(&comm->shm, 0, sizeof comm->shm);
  hv__algo_ctx_t *ctxs[2] = {&comm->algo, &comm->bench_algo};
  for (int i = 0; i < 2; i++) {
    ctxs[i]->local = &comm->algo_local;
    ctxs[i]->cross = &comm->algo_cross;
    ctxs[i]->uniform_nodes = uniform;
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
  host->hierarchical = comm->config.hierarchical;
  host->fault_poll = host_fault_poll;
  host->stopped_note = host_stopped_note;
  host->owner = comm;
}

static hv_result_t comm_create(MPI_Comm user, hv_comm_t **out) {
  hv_comm_t *comm = calloc(1, sizeof *comm);
  if (!comm) return hv__set_error(NULL, HV_ERR_NO_MEMORY, "out of memory creating a communicator");
  comm->mpi = comm->local = comm->cross = comm->bench_mpi = MPI_COMM_NULL;
  pthread_mutex_init(&comm->mutex, NULL);
  pthread_mutex_init(&comm->round_lock, NULL);
  pthread_cond_init(&comm->queue_cv, NULL);
  pthread_cond_init(&comm->done_cv, NULL);
  char err[512];
  hv_result_t rc = hv__config_load(&comm->config, err, sizeof err);
  if (rc != HV_SUCCESS) {
    /* Every rank reads the same environment, so every rank fails here alike. */
    comm_destroy(comm);
    return hv__set_error(NULL, rc, "%s", err);
  }
  hv__log_level = comm->config.log_level;
  /* A simulated build may borrow the caller's communicator (HV_SIM_SHARE_COMM=1, for
   * runs of thousands of ranks: every SMPI communicator creation is a ring allgather
   * over all ranks, see split_nodes); the caller then makes no MPI call on it while an
   * hv operation is in flight. Simulated builds also make the benchmark communicator
   * on first use (hv__comm_bench_ctx): the engine is threadless there. */
  const char *share = HV_SIMULATED ? getenv("HV_SIM_SHARE_COMM") : NULL;
  comm->mpi_borrowed = share && share[0] == '1';
  if ((comm->mpi_borrowed ? (comm->mpi = user, MPI_SUCCESS) : MPI_Comm_dup(user, &comm->mpi)) != MPI_SUCCESS ||
      (!HV_SIMULATED && MPI_Comm_dup(user, &comm->bench_mpi) != MPI_SUCCESS)) {
    comm_destroy(comm);
    return hv__set_error(NULL, HV_ERR_MPI, "MPI_Comm_dup failed");
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
    if (!comm->hosts || MPI_Allgather(host, 64, MPI_CHAR, comm->hosts, 64, MPI_CHAR, comm->mpi) != MPI_SUCCESS) {
      comm_destroy(comm);
      return hv__set_error(NULL, HV_ERR_MPI, "cannot exchange host names at init");
    }
  }
  /* Pids for the watch on lost and stopped peers (fault.c), which names them. */
  if ((rc = hv__fault_init(comm)) != HV_SUCCESS ||
      (rc = hv__algo_ctx_init_mpi(&comm->algo, &comm->host, comm->mpi)) != HV_SUCCESS ||
      (!HV_SIMULATED && (rc = hv__algo_ctx_init_mpi(&comm->bench_algo, &comm->host, comm->bench_mpi)) != HV_SUCCESS) ||
      (rc = split_nodes(comm)) != HV_SUCCESS || (rc = hv__cuda_init(comm)) != HV_SUCCESS)
    goto fail;
  if (hv__cache_init(&comm->cache, comm->config.cache_capacity, comm->size)) goto oom;
  size_t words = 2 * ((comm->config.cache_capacity + 63) / 64) + 1;
  comm->vec = calloc(words, sizeof(uint64_t));
  comm->vec_out = calloc(words, sizeof(uint64_t));
  comm->vec_tmp = calloc(words, sizeof(uint64_t));
  comm->bit_owner = calloc(comm->config.cache_capacity + 1, sizeof *comm->bit_owner);
  if (!comm->vec || !comm->vec_out || !comm->vec_tmp || !comm->bit_owner) goto oom;
  if (comm->rank == 0 && (rc = hv__coordinator_create(comm)) != HV_SUCCESS) goto fail;
  if (comm->config.timeline_path[0]) {
    comm->timeline = hv__timeline_open(comm->config.timeline_path, comm->rank, err, sizeof err);
    if (!comm->timeline) {
      rc = hv__set_error(NULL, HV_ERR_SYSTEM, "%s", err);
      goto fail;
    }
  }
  comm->spin_ok = cores_per_rank(comm->local_size) >= 2;
  comm->host.spin_ok = comm->spin_ok;
  if ((rc = hv__engine_start(comm)) != HV_SUCCESS) goto fail;
  HV_LOG(HV__LOG_INFO, "communicator of %d ranks (%d on this node, %d nodes), algo=%s, fusion=%zu bytes",
         comm->size, comm->local_size, comm->cross_size, hv__algo_name(comm->config.allreduce_algo),
         comm->config.fusion_threshold);
  *out = comm;
  return HV_SUCCESS;
oom:
  rc = hv__set_error(NULL, HV_ERR_NO_MEMORY, "out of memory creating a communicator");
fail:
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

hv_result_t hv_comm_get_async_error(const hv_comm_t *comm, hv_result_t *async_error) {
  if (!comm || !async_error) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_comm_get_async_error: NULL argument");
  hv_comm_t *c = (hv_comm_t *)comm;
  pthread_mutex_lock(&c->mutex);
  *async_error = c->async_error;
  pthread_mutex_unlock(&c->mutex);
  return HV_SUCCESS;
}
