/* flight_recorder.h: the flight recorder of a communicator (flight_recorder.c), its
 * JSON document and dumps (flight_dump.c), and the per-process status socket
 * (doctor_server.c). The format is tools/hvrun/FLIGHT_RECORDER.md.
 *
 * Locking: every write to the ring and to the live state below happens under
 * comm->mutex, which submission and completion hold anyway (so recording costs them a
 * few stores and no lock of its own); negotiation and execution take it once per
 * round or fused batch. A reader (status thread, a dump) copies under it. What only
 * the thread running rounds may read (the coordinator's table, what the current wait
 * is on) comes through a snapshot request that thread answers (hv__fr_answer). */
#ifndef HV_FLIGHT_RECORDER_H
#define HV_FLIGHT_RECORDER_H

#include <stdatomic.h>
#include <stdint.h>

#include "hv_internal.h"

#define HV__FR_NAME_LEN 96   /* a longer name is kept cut (bounded copy) */
#define HV__FR_ERROR_LEN 160 /* a failed event's error, cut */

enum { HV__FR_SUBMITTED = 0, HV__FR_NEGOTIATED, HV__FR_RUNNING, HV__FR_DONE, HV__FR_FAILED };
enum { HV__PHASE_USER = 0, HV__PHASE_NEGOTIATING, HV__PHASE_EXECUTING, HV__PHASE_STOPPED };

/* What every update touches fits the first cache line, and a name shorter than 64
 * bytes the second: the ring (a megabyte or more) is colder than the engine's own
 * data, and each line first touched is a miss on the hot path. */
typedef struct hv__fr_event {
  uint64_t pos;        /* ring position + 1 (0: an empty slot); a handle's hv_handle.fr_pos */
  uint64_t seq;        /* per communicator: submissions, or ordered calls when ordered */
  double t_submit, t_negotiated, t_started, t_finished; /* CLOCK_MONOTONIC us, 0: not yet */
  uint64_t count;
  uint8_t coll, dtype, ordered, state;
  uint8_t algo; /* index into hv__fr_algo_names, 0 ("") before it ran */
  char name[HV__FR_NAME_LEN] __attribute__((aligned(64)));
  int32_t device;  /* ordered events only (else -1 in documents) */
  uint64_t stream; /* ordered events only */
  char error[HV__FR_ERROR_LEN]; /* meaningful only in state HV__FR_FAILED */
} hv__fr_event_t;

/* The algorithms an event may name ("" first); hv__fr_algo_index finds one (0 when
 * unknown). */
extern const char *const hv__fr_algo_names[];
int hv__fr_algo_index(const char *algo);

typedef struct hv__flight {
  /* under comm->mutex */
  hv__fr_event_t *ring; /* size slots */
  size_t size;
  uint64_t next_pos;    /* events recorded */
  size_t next_slot;     /* next_pos % size */
  uint64_t submitted, completed, ordered_calls, running;
  uint64_t last_completed_pos; /* 0: none */
  int phase;
  double since; /* monotonic us */
  int index;    /* creation order among the process's communicators (flight_dump.c) */
  /* snapshot requests (another thread asks, the thread running rounds answers) */
  atomic_int snap_request;
  pthread_mutex_t snap_lock;
  pthread_cond_t snap_cv;
  uint64_t snap_asked, snap_answered; /* under snap_lock */
  char *snap_coordinator;             /* JSON or NULL (rank 0's table), under snap_lock */
  char snap_waiting[512];
  int snap_peer;
} hv__flight_t;

/* ---- the recorder (flight_recorder.c) ---- */
/* comm->flight from comm->config (NULL when HV_FLIGHT_RECORDER_SIZE=0); 0, or -1 when
 * out of memory. */
int hv__fr_create(hv_comm_t *comm);
void hv__fr_free(hv_comm_t *comm);
/* comm->mutex held: a request accepted by submit (api.c). */
void hv__fr_submit(hv_comm_t *comm, struct hv_handle *h);
/* Fetches the event at pos for writing ahead of its update (a batch's completions). */
static inline void hv__fr_prefetch(const hv_comm_t *comm, const struct hv_handle *h) {
  if (comm->flight && h->fr_pos) __builtin_prefetch(&comm->flight->ring[h->fr_slot], 1, 1);
}
/* comm->mutex held: h completes at now (hv__coarse_now_us, read once per batch; handle.c). */
void hv__fr_finish(hv_comm_t *comm, struct hv_handle *h, hv_result_t result, const char *error, double now);
/* Takes comm->mutex: the execution list of a round is negotiated (negotiate_round.c). */
void hv__fr_negotiated(hv_comm_t *comm);
/* Takes comm->mutex: the n requests (adjacent duplicates counted once) start in algo. */
void hv__fr_started(hv_comm_t *comm, struct hv_handle *const *hs, size_t n, const char *algo);
/* Takes comm->mutex: an ordered call (hv_cuda.h, or its host test entry) starts;
 * returns its ring position for hv__fr_ordered_finish (0: recorder off). */
uint64_t hv__fr_ordered_begin(hv_comm_t *comm, const char *function, int coll, size_t count, hv_dtype_t dtype,
                              int device, uint64_t stream);
void hv__fr_ordered_finish(hv_comm_t *comm, uint64_t pos, hv_result_t result, const char *algo);
/* comm->mutex held: the engine stopped. */
void hv__fr_stopped(hv_comm_t *comm);
/* An event's bytes: count x element size, x size for the gathered or scattered
 * collectives (the buffer the user sees). */
uint64_t hv__fr_bytes(const hv__fr_event_t *e, int size);
/* The thread running rounds (hv__engine_thread_comm == comm, or the background thread
 * between rounds with round_lock held): answers a pending snapshot request; `what` is
 * the wait in progress (NULL: none). Cheap when nothing is asked. */
void hv__fr_answer(hv_comm_t *comm, const char *what);
static inline void hv__fr_poll(hv_comm_t *comm, const char *what) {
  if (comm->flight && atomic_load_explicit(&comm->flight->snap_request, memory_order_relaxed)) hv__fr_answer(comm, what);
}
/* The coordinator's table as JSON ({"waiting": [...]}), or NULL (not rank 0, or
 * out of memory); the thread running rounds, or any once rounds are over
 * (negotiate_coordinator.c). */
char *hv__coordinator_json(hv_comm_t *comm);
/* The communicator rank named in a wait's description ("... from rank 2 on host h"), or -1. */
int hv__fr_peer_of(const char *what);

/* ---- documents and dumps (flight_dump.c) ---- */
/* A growable JSON text; oom set once an append failed (the text is then unusable). */
typedef struct hv__json {
  char *data;
  size_t len, cap;
  int oom;
} hv__json_t;
void hv__json_printf(hv__json_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string (quotes included): escaped, bytes that are not UTF-8 as \u00XX. */
void hv__json_string(hv__json_t *j, const char *s);
/* A CLOCK_MONOTONIC time in us as CLOCK_REALTIME seconds, or null when 0; the
 * offset between the clocks is this thread's, read by hv__json_clock. */
void hv__json_clock(void);
void hv__json_time(hv__json_t *j, double mono_us);

/* Adds comm to the process's live communicators (index: creation order), starts the
 * status server with the first; removes it (waiting for a document being built), and
 * stops the server with the last. */
void hv__flight_register(hv_comm_t *comm);
void hv__flight_unregister(hv_comm_t *comm);
/* The document (contract) of every live communicator, malloc'd, or NULL when out of
 * memory. */
char *hv__flight_document(const char *reason, const char *detail, size_t *len);
/* Writes the dump (reason: exit, signal, timeout, stall, error, peer_lost) to the dump
 * directory, with its stderr line; a failure is one warning line. `comm` (may be
 * NULL) only needs a recorder: nothing is written when it has none. */
void hv__flight_dump(hv_comm_t *comm, const char *reason, const char *detail);
/* The same from the thread running comm's rounds, which knows what it waits on
 * (or NULL) and why its engine stops (or NULL). */
void hv__flight_dump_from_rounds(hv_comm_t *comm, const char *reason, const char *detail, const char *waiting,
                                 const char *error);
/* The first stall report of the process dumps (reason stall); later ones do not.
 * The thread running comm's rounds. */
void hv__flight_stall(hv_comm_t *comm, const char *detail, const char *waiting);
/* The job string of the contract (sanitised). */
const char *hv__flight_job(void);
int hv__flight_world_rank(void);
/* 0 when dir is a directory of this user that others cannot write (not a link), else
 * -1 with a message in err. */
int hv__flight_own_dir(const char *dir, char *err, size_t errlen);
/* The dump directory (created 0700); 0, or -1 with a message in err. */
int hv__flight_dump_dir(char *out, size_t len, char *err, size_t errlen);

/* ---- the status server (doctor_server.c) ---- */
/* Starts the server (and the SIGUSR1 handler, sigusr1 permitting) when the process
 * has a live communicator with a recorder, stops it when it has none (flight_dump.c,
 * after each registration and removal; never with the registry lock held). */
void hv__doctor_sync(int sigusr1);
int hv__flight_live_count(void); /* flight_dump.c */

#endif
