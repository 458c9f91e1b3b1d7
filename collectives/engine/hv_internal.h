/* hv_internal.h: the engine's internal types, shared by the files of
 * collectives/engine and collectives/cuda (never by collectives/algo).
 *
 * A request (struct hv_handle) travels: user thread -> comm queue (mutex) ->
 * background thread's pending table (pending.c) -> negotiation (negotiate_*.c) ->
 * execution list -> fusion + algorithm -> completion (done_cv wakes hv_wait).
 * Everything below the queue is touched by the background thread only, so it needs
 * no lock.
 */
#ifndef HV_INTERNAL_H
#define HV_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "hashmap.h"
#include "algo.h"
#include "hv.h"
#include "response_cache.h"
#include "straggler.h"
#include "transport.h"

typedef enum {
  HV__COLL_ALLREDUCE = 0,
  HV__COLL_ALLGATHER = 1,
  HV__COLL_ALLGATHERV = 2,
  HV__COLL_BROADCAST = 3,
  HV__COLL_REDUCESCATTER = 4,
  HV__COLL_ALLTOALL = 5,
  HV__COLL_BARRIER = 6,
  HV__COLL_ALLTOALLV = 7,
  HV__COLL_REDUCE = 8,
  HV__COLL_GATHER = 9,
  HV__COLL_GATHERV = 10,
  HV__COLL_SCATTER = 11,
  HV__COLL_SCATTERV = 12,
  HV__COLL_SEND = 13, /* point-to-point: negotiated by its two ranks only (root: the peer) */
  HV__COLL_RECV = 14,
  HV__NUM_COLLS = 15
} hv__coll_t;

const char *hv__coll_name(hv__coll_t coll);
/* Point-to-point kinds: negotiated by their two ranks, never cached. */
static inline int hv__coll_is_p2p(int coll) { return coll == HV__COLL_SEND || coll == HV__COLL_RECV; }

/* What every rank must agree on for one name: compared by the coordinator. */
typedef struct hv__meta {
  uint8_t coll;        /* hv__coll_t */
  uint8_t dtype;       /* hv_dtype_t */
  uint8_t op;          /* hv_op_t (allreduce, reducescatter) */
  uint8_t compression; /* resolved: NONE, FP16, BF16, FP16_1R or BF16_1R */
  int32_t root;        /* broadcast, reduce, gather(v), scatter(v); send/recv: the peer */
  uint64_t count;      /* elements contributed by this rank (a group's: all its tensors') */
  uint64_t layout;     /* grouped allreduce: a hash of its list of counts; else 0 */
  uint64_t ntensors;   /* grouped allreduce: how many tensors; else 0 */
} hv__meta_t;

struct hv_handle {
  hv_comm_t *comm;
  char *name; /* stored after the handle, in its block */
  uint64_t name_hash; /* hv__hash_string(name), computed once at submission */
  hv__meta_t meta;
  const void *sendbuf; /* collectives other than allreduce */
  void *recvbuf;
  /* Allreduce: its tensors, each reduced from its sendbuf into its recvbuf; a plain
   * allreduce points at `single`, a grouped one at its copy of the caller's list
   * (stored after the handle, in its block). */
  const hv_tensor_t *tensors;
  size_t ntensors;
  hv_tensor_t single;
  double prescale, postscale;
  size_t recv_capacity; /* allgatherv */
  size_t *recvcounts;   /* allgatherv: size entries, filled at completion */
  /* alltoallv, gatherv, scatterv: this rank's send and receive splits (size entries
   * each, one allocation at splits_send, freed with the handle) and their declared
   * totals (-1: none declared); checked against every rank's at execution
   * (engine_vector.c). */
  int64_t *splits_send, *splits_recv;
  int64_t total_send, total_recv;

  /* state owned by the background thread */
  int cache_bit;        /* bit set in the last negotiation vector, or -1 */
  size_t pending_pos;   /* its index in comm->pending_list while pending */
  int reported_full;    /* sent to the coordinator in full (cache miss) */
  const uint64_t *all_counts; /* allgatherv: every rank's count (cache or own copy) */
  uint64_t *own_counts;       /* allgatherv not cached: an aligned copy of the response's */
  double t_submit, t_dequeue, t_stall_reported;
  double t_step_first; /* a step's first request: its submission, us (straggler.c); else 0 */
  /* its flight recorder event until it completes (flight_recorder.h; comm->mutex) */
  uint64_t fr_pos;  /* the event's ring position, 0: none */
  uint32_t fr_slot; /* that event's slot in the ring (no division on the hot path) */
  uint8_t fr_state, fr_algo;
  uint16_t fr_name; /* its name's entry in the recorder's table + 1, 0: none */
  uint64_t fr_seq;
  double fr_t_negotiated, fr_t_started;
  /* hv_join (join.c): the ranks whose data an allreduce sums (0: all of them, the
   * divisor of HV_AVERAGE), and a joined rank's stand-in for a collective it never
   * submitted (its identity buffer is freed with it, at completion). */
  int contributors;
  int phantom;
  void *phantom_buf;
  struct hv_handle *next; /* queue / list link */

  /* completion: written under comm->mutex; read lock-free by hv_wait's short spin */
  atomic_int done;
  hv_result_t result;
  char *error; /* detail of a failure, or NULL */
};

/* A growable byte buffer (negotiation messages). */
typedef struct hv__bytes {
  char *data;
  size_t len, cap;
} hv__bytes_t;

/* One entry of the execution list produced by a negotiation round. `handle` is NULL
 * once the request completed: from then on it belongs to the caller, whose hv_wait may
 * free it while later entries still run (and a stall report lists what is left). */
typedef struct hv__exec {
  struct hv_handle *handle;
} hv__exec_t;

struct hv_comm {
  /* set at init, read-only afterwards */
  MPI_Comm mpi;   /* our duplicate: negotiation and data */
  MPI_Comm local; /* ranks on my node */
  MPI_Comm cross; /* ranks with my local rank on every node */
  int rank, size, local_rank, local_size, cross_rank, cross_size;
  int spin_ok;  /* this rank has a core for each of its two busy threads: short spins pay */
  char (*hosts)[64]; /* every rank's host name, to name a peer that stops answering */
  MPI_Comm bench_mpi; /* for algorithms called directly (hv_internal_bench.h) */
  MPI_Comm init_comm; /* the user's communicator, for hv__init_agree during init */
  int init_agreed;    /* an init agreement has failed: every rank knows (comm.c) */
  /* Simulated builds only (comm.c): mpi is the caller's communicator, not a duplicate
   * (HV_SIM_SHARE_COMM=1; bench_mpi then too), cross is mpi itself (one rank per
   * node): not freed here. */
  int mpi_borrowed, cross_borrowed;
  hv__config_t config;
  hv__algo_host_t host;      /* what the algorithms see of this communicator (comm.c) */
  hv__algo_ctx_t algo;       /* the background thread's algorithm context */
  hv__algo_ctx_t bench_algo; /* a user thread's, for hv_bench_allreduce_algorithm */
  hv__algo_ctx_t algo_local, algo_cross; /* hierarchical phases (shared by both) */
  hv__shm_t shm; /* the node's shared-memory region (shm.header NULL: none) */
  struct hv__fault *fault; /* lost and stopped peers, fault notices, shutdown reason (fault.c) */
  struct hv__cuda *cuda;   /* hv_cuda.h's state (cuda/cuda_comm.c), NULL in builds without it */
  struct hv__flight *flight; /* the flight recorder (flight_recorder.h), NULL when off */

  /* user side, guarded by mutex */
  pthread_mutex_t mutex;
  pthread_cond_t queue_cv; /* background thread waits for work */
  pthread_cond_t done_cv;  /* hv_wait waits for completions */
  struct hv_handle *queue_head, *queue_tail;
  hv__map_t names_in_flight; /* name -> handle, submitted and not completed: rejects a name
                                pending twice, and finds the handle a coordinator response names */
  atomic_int queued; /* requests in the queue: the engine's lock-free peek */
  int shutdown_requested;
  int engine_stopped; /* the background thread has finished; new submits fail */
  hv_result_t async_error;
  char last_error[1024];
  char stopped_why[1200]; /* why the engine stopped on a failure, for later calls (api.c) */
  uint64_t barrier_seq; /* names barriers in call order */
  int join_local; /* a thread of this rank is in hv_join (join.c) */

  pthread_t thread;
  int thread_started;
  int threadless; /* no background thread (simulated builds): waits run the rounds */

  /* Rounds are run by the background thread, or by a thread waiting in a blocking call
   * while the background thread is idle (engine_inline.c). Whoever holds round_lock
   * owns everything from here down. */
  pthread_mutex_t round_lock;
  hv_result_t round_failure; /* an inline round failed: the background thread stops with it */
  int round_agreed;          /* an inline round agreed on shutdown */
  int rounds_over;           /* the background thread has left its loop: no more rounds */
  /* Dequeue order, for deterministic bit setting. A removed handle leaves a hole
   * (NULL) until hv__pending_compact: a round that starts a fused batch of hundreds
   * removes them all, and closing each gap at once cost a memmove per tensor. */
  struct hv_handle **pending_list;
  size_t pending_count; /* handles pending (pending_list's entries that are not holes) */
  size_t pending_len, pending_cap; /* entries of pending_list in use (holes included), allocated */
  struct hv_handle **bit_owner; /* cache bit -> the pending handle that set it this round */
  hv__cache_t cache;
  struct hv__coordinator *coordinator; /* rank 0 only */
  struct hv__autotune *autotune;       /* rank 0 with HV_AUTOTUNE=1 (autotune.c) */
  /* hv_join (join.c), the same on every rank after each round: how many ranks have
   * joined, and whether this one has; reset when the last one joins. */
  int joined_count, me_joined;
  hv__exec_t *exec;
  size_t exec_count, exec_cap;
  uint64_t *vec, *vec_out, *vec_tmp; /* negotiation bit vectors */
  hv__bytes_t misses;   /* serialised cache misses of this round */
  hv__bytes_t response; /* the coordinator's responses, as received */
  void *fusion_buf; /* grow-only fusion buffer */
  size_t fusion_bytes;
  struct hv__piece *pieces; /* a batch's tensors for hv__allreduce_shm_pieces (grow-only) */
  struct hv_handle **piece_owner; /* the request of each piece (pieces_cap entries) */
  size_t pieces_cap;
  struct hv__timeline *timeline;
  uint64_t round;
  /* Allreduce batches reduced, by the algorithm that ran them (fusion.c); read from
   * any thread by hv_comm_allreduce_count, hence atomic. */
  _Atomic uint64_t allreduce_runs[HV__NUM_RAN];
  /* Why the node's shared memory is off ("" when on, or not wanted): hvrun --check
   * shows it (hv_comm_shm_status). */
  char shm_off[512];
  hv__straggler_t straggler; /* the straggler report's waits (straggler.c) */
};

/* ---- errors (result.c) ---- */
/* Records the detail of an error on the communicator (and logs it at debug level);
 * returns code so callers can `return hv__set_error(...)`. comm NULL: hv_init's. */
hv_result_t hv__set_error(hv_comm_t *comm, hv_result_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The communicator's error sink (owner: the hv_comm_t, or NULL for hv_init's). */
void hv__comm_record_error(void *owner, const char *msg);
hv_result_t hv__comm_bench_ctx(hv_comm_t *comm, hv__algo_ctx_t **out); /* comm.c */

/* ---- faults of other ranks (fault.c) ---- */
/* The communicator whose rounds this thread runs now (the background thread, or a
 * thread running rounds inline), else NULL. */
extern _Thread_local hv_comm_t *hv__engine_thread_comm;
/* Collective, at init: exchanges pids, picks the peers of this host to watch, posts the
 * receive of fault notices. */
/* Init's collective steps are preceded by an agreement on every rank's result so far
 * (rc, this rank's): a failure on one rank (out of memory) fails hv_init on all,
 * instead of leaving the others waiting in the next collective. comm.c. */
hv_result_t hv__init_agree(hv_comm_t *comm, hv_result_t rc);
/* HV_NET_CHUNK_BYTES=auto on this rank: a chunk below TCP's eager limit where the
 * network is sockets, else 0 (keep HV_RING_CHUNK_BYTES). net_chunk.c. */
size_t hv__net_chunk_auto(void);
hv_result_t hv__fault_init(hv_comm_t *comm);
void hv__fault_free(hv_comm_t *comm);
/* Called by every wait on peers with the time waited so far (cheap until a wait lasts
 * 10 ms): fails with HV_ERR_ABORTED naming a peer whose process is gone, with
 * HV_ERR_STALLED past HV_STALL_SHUTDOWN_TIME, with the error of another rank's notice
 * (the first error wins), and warns past HV_STALL_CHECK_TIME. `what` names the wait. */
hv_result_t hv__fault_poll(hv_comm_t *comm, hv__wait_watch_t *ww, double waited_us, const char *what);
/* "; rank Q on host H (pid P) is stopped (...)" for a stopped peer of this host, or "". */
void hv__fault_stopped_note(hv_comm_t *comm, char *out, size_t len);
/* Engine thread, after `failure` stopped it and its line is logged: when the cause is a
 * fault of another rank (lost, stopped, HV_TIMEOUT), tells every other rank, and waits
 * (at most 1 s) until every other survivor has told it too, so that no survivor exits
 * (and makes the launcher kill the rest) before all have printed. */
void hv__fault_report(hv_comm_t *comm, hv_result_t failure);
/* Background thread, once stopped by `failure`: an MPI call that failed outright is
 * given half a second for a notice (or a watched pid) that names a lost peer; returns
 * that error (and records it for hv__fault_report) or `failure` unchanged. */
hv_result_t hv__fault_explain(hv_comm_t *comm, hv_result_t failure);
/* Collective, in the round that agrees to shut down: the lowest rank that called
 * hv_shutdown sends its last error to all; the others log what it leaves unfinished. */
hv_result_t hv__fault_shutdown_reason(hv_comm_t *comm, int want_shutdown);
/* Why the engine stopped on a shutdown (for the requests it fails); returns 1 when
 * another rank asked for it, 0 when this one did. */
int hv__fault_shutdown_why(hv_comm_t *comm, char *out, size_t len);
/* The names of the requests still on the execution list (with_exec), pending, and in
 * `queued` (a list by ->next), quoted and comma-separated into out; returns how many.
 * Engine thread only (and comm->mutex held when `queued` is the communicator's queue). */
/* For hvrun --restarts: records why the engine stopped (fault_record.c). */
void hv__fault_record(const hv_comm_t *comm, const char *kind, int subject);
/* The flight recorder's dump reason for the failure that stopped the engine: peer_lost,
 * stall, timeout or error (FLIGHT_RECORDER.md). */
const char *hv__fault_dump_reason(hv_comm_t *comm, hv_result_t failure);
size_t hv__fault_pending_names(hv_comm_t *comm, char *out, size_t len, int with_exec, const struct hv_handle *queued);


/* ---- ordered calls (hv_cuda.h), ordered_check.c ---- */
enum { HV__ORDERED_ALLREDUCE = 1, HV__ORDERED_ALLGATHER, HV__ORDERED_BROADCAST, HV__ORDERED_GROUP,
       HV__ORDERED_REDUCESCATTER, HV__ORDERED_ALLTOALL, HV__ORDERED_ALLTOALLV, HV__ORDERED_REDUCE,
       HV__ORDERED_GATHER, HV__ORDERED_GATHERV, HV__ORDERED_SCATTER, HV__ORDERED_SCATTERV, HV__ORDERED_KINDS };
/* The function an ordered call kind stands for ("hv_allgather_cuda"). */
const char *hv__ordered_name(int coll);
/* Collective over mpi (a communicator of the calling thread's): every rank called the
 * same kind with the same count, dtype, op or root, and for a group the same number of
 * tensors and list of counts (layout, hv__layout_hash), else HV_ERR_MISMATCH on every
 * rank. Records the call in the flight recorder: *pos is for hv__fr_ordered_finish
 * (flight_recorder.h) once the call ran (0 after a failure, recorded already). */
hv_result_t hv__ordered_agree(hv_comm_t *comm, MPI_Comm mpi, int coll, size_t count, hv_dtype_t dtype, int op_or_root,
                              long long ntensors, uint64_t layout, int device, uint64_t stream, uint64_t *pos);

/* A grouped allreduce's list of counts as one FNV-1a hash, never 0 (api.c): ranks that
 * split the same total differently must not agree (CPU and GPU groups alike). */
uint64_t hv__layout_hash(const hv_tensor_t *tensors, size_t n);

/* ---- handles (handle.c) ---- */
/* Completes a handle: records result/detail, wakes waiters, removes the name from the
 * in-flight set. Takes comm->mutex. */
void hv__handle_complete(struct hv_handle *h, hv_result_t result, char *error_detail);
/* Completes exec[0..n) successfully under one lock, with one wake-up, and clears
 * those entries (NULL): a completed handle is its caller's, who may free it at once. */
void hv__handles_complete(hv_comm_t *comm, hv__exec_t *exec, size_t n);
void hv__handle_free(struct hv_handle *h);

/* ---- hv_join (join.c; api.c submits) ---- */
#define HV__JOIN_NAME "hv.join"
#define HV__JOIN_ROOT (-2) /* the root of a barrier that is hv_join's request */
hv_result_t hv__join_submit(hv_comm_t *comm, hv_handle_t *handle);
struct hv_handle *hv__handle_new(hv_comm_t *comm, const char *name, const hv__meta_t *meta);
/* A joined rank's stand-in for a collective the others submitted: its identity
 * contribution (zeros), its receive buffer; freed when it completes. NULL: no memory. */
struct hv_handle *hv__join_phantom(hv_comm_t *comm, const char *name, const hv__meta_t *meta);
/* Why a collective cannot complete while ranks have joined, or NULL when it can. */
const char *hv__join_unsupported(const hv__meta_t *meta);
static inline int hv__is_join(const hv__meta_t *m) { return m->coll == HV__COLL_BARRIER && m->root == HV__JOIN_ROOT; }

/* ---- engine (engine_thread.c, negotiate_*.c, engine_execute.c, engine_inline.c) ---- */
/* Starts the background thread (engine_thread.c), or makes the engine threadless
 * (engine_threadless.c, simulated builds). */
hv_result_t hv__engine_start(hv_comm_t *comm);
/* Once rounds are over (failure, or the shutdown round agreed; round_lock held, and
 * released here): fails everything left and reports a fault (engine_teardown.c). */
void hv__engine_teardown(hv_comm_t *comm, hv_result_t failure);
/* Asks the background thread to stop and joins it. */
void hv__engine_stop(hv_comm_t *comm);
/* out = AND over ranks of in (words uint64); tmp is scratch of the same size. */
hv_result_t hv__negotiate_vector_and(hv_comm_t *comm, const uint64_t *in, uint64_t *out, uint64_t *tmp, int words);
hv_result_t hv__negotiate_round(hv_comm_t *comm, int shutdown, int *shutdown_agreed,
                                int *productive);
hv_result_t hv__execute_list(hv_comm_t *comm);
/* memmove that accepts NULL buffers when there is nothing to move (count 0 tensors
 * may come with NULL pointers; the C library's functions must not see those). */
void hv__move_bytes(void *dst, const void *src, size_t n);
/* A collective of exec[from] failed: exec[from, count) move to the front of the
 * list, for the engine to fail with rc (engine_execute.c). Returns rc. */
hv_result_t hv__exec_stop_at(hv_comm_t *comm, size_t from, hv_result_t rc);
int hv__exec_add(hv_comm_t *comm, struct hv_handle *h); /* -1 when out of memory */
/* Alltoallv, gather(v), scatter(v), send and recv (engine_vector.c). A fault of the
 * splits found on every rank alike: HV_SUCCESS with *detail (and *code) set. */
hv_result_t hv__run_vector(hv_comm_t *comm, struct hv_handle *h, hv_result_t *code, char **detail);
/* One rank's splits of an alltoallv, gatherv or scatterv (coll: HV__COLL_ALLTOALLV,
 * GATHERV, SCATTERV, for the lists' names in messages), its declared totals (-1:
 * none), and the prefix of messages ("tensor 'x' (alltoallv)", "hv_alltoallv_cuda"). */
typedef struct hv__splits {
  int coll;
  const char *prefix;
  const int64_t *send, *recv; /* size entries each */
  int64_t total_send, total_recv;
} hv__splits_t;
/* Collective over mpi: every rank's splits checked together (engine_vector.c); a fault
 * anywhere: HV_SUCCESS with the same *detail and *code on every rank. */
hv_result_t hv__splits_agree(hv_comm_t *comm, MPI_Comm mpi, const hv__splits_t *s, hv_result_t *code, char **detail);
/* ---- fusion (fusion.c) ---- */
/* Whether allreduce b can be fused after a (same wire dtype and reduction). */
int hv__fusion_fusable(const struct hv_handle *a, const struct hv_handle *b);
/* Runs exec[from, to), allreduce requests sharing wire dtype and op, as fused
 * batches of whole tensors, completing each request with its last batch. */
hv_result_t hv__fusion_run_allreduce(hv_comm_t *comm, size_t from, size_t to);
/* The grow-only fusion buffer, at least bytes long. */
hv_result_t hv__fusion_reserve(hv_comm_t *comm, size_t bytes);
/* One round and its execution list (engine_inline.c); round_lock held. */
hv_result_t hv__round(hv_comm_t *comm, int shutdown, int *shutdown_agreed, int *productive);
/* Blocking calls: takes round_lock if it is free (returns 1), so the request can be
 * submitted without waking the background thread and then run inline. */
int hv__inline_begin(hv_comm_t *comm);
/* Runs a few rounds on this thread until h completes, if round_lock is free (or
 * `locked`: taken by hv__inline_begin); releases it and wakes the background thread
 * for whatever is left. */
void hv__inline_rounds(hv_comm_t *comm, struct hv_handle *h, int locked);
/* One round on this thread if round_lock is free: hv_test's progress when there is
 * no background thread (engine_threadless.c). */
void hv__inline_poll(hv_comm_t *comm);
/* Set on this thread by a blocking call around its submission: the background
 * thread is not woken, the caller runs the round itself. */
extern _Thread_local int hv__submit_quiet;
/* Fails every pending handle of the background thread with result/message. */
void hv__fail_all_pending(hv_comm_t *comm, hv_result_t result, const char *why);
void hv__pending_remove(hv_comm_t *comm, struct hv_handle *h);
/* Closes the holes removals left in comm->pending_list, keeping the order. */
void hv__pending_compact(hv_comm_t *comm);
hv_result_t hv__coordinator_create(hv_comm_t *comm);
void hv__coordinator_destroy(hv_comm_t *comm);

#endif /* HV_INTERNAL_H */
