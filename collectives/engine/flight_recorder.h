/* flight_recorder.h: the flight recorder of a communicator (flight_recorder.c), its
 * JSON document and dumps (flight_dump.c), and the per-process status socket
 * (doctor_server.c). The format is tools/hvrun/FLIGHT_RECORDER.md.
 *
 * Locking: every write to the ring, the table of names, a handle's fr_* fields and
 * the live state below happens under comm->mutex, which submission and completion
 * hold anyway (so recording costs them a few stores and no lock of its own);
 * negotiation and execution take it once per round or fused batch. A reader (status thread, a dump) copies under it. What only
 * the thread running rounds may read (the coordinator's table, what the current wait
 * is on) comes through a snapshot request that thread answers (hv__fr_answer). */
#ifndef HV_FLIGHT_RECORDER_H
#define HV_FLIGHT_RECORDER_H

#include <stdatomic.h>
#include <stdint.h>

#include "hv_internal.h"

/* Events are written to the ring with streaming stores where there are (x86-64):
 * a write-only log whose lines need not be read first nor kept in the cache. Plain
 * stores under ThreadSanitizer, which sees those. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HV__FR_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define HV__FR_TSAN 1
#endif
#ifndef HV__FR_STREAM
#if defined(__x86_64__) && defined(__SSE2__) && !defined(HV__FR_TSAN)
#define HV__FR_STREAM 1
#else
#define HV__FR_STREAM 0
#endif
#endif
#if HV__FR_STREAM
#include <emmintrin.h>
#endif

#define HV__FR_NAME_LEN 96   /* a longer name is kept cut to 95 bytes, wherever it is stored */
#define HV__FR_ERROR_LEN 160 /* a failed event's error, cut */
#define HV__FR_INTERN_MAX 1024 /* entries of a communicator's table of names, at most */
#define HV__FR_PROBE 8         /* entries tried for a new name before it is copied instead */

enum { HV__FR_SUBMITTED = 0, HV__FR_NEGOTIATED, HV__FR_RUNNING, HV__FR_DONE, HV__FR_FAILED };
enum { HV__PHASE_USER = 0, HV__PHASE_NEGOTIATING, HV__PHASE_EXECUTING, HV__PHASE_STOPPED };

/* An event in the ring: one cache line, written once, when the request completes
 * (an ordered call: when it starts, updated when it ends). Until then a request's
 * event lives in its handle (hv_handle.fr_*), which the engine touches anyway, and
 * documents read it from there (hv__fr_events). The name is an index into the
 * communicator's table of names (hv__fr_name_t), or the slot's own copy when the
 * table had no room for it (hv__fr_cold_t). */
typedef struct hv__fr_event {
  uint64_t pos;        /* ring position + 1 (0: an empty slot); a handle's hv_handle.fr_pos */
  uint64_t seq;        /* per communicator: submissions, or ordered calls when ordered */
  double t_submit, t_negotiated, t_started, t_finished; /* CLOCK_MONOTONIC us, 0: not yet */
  uint64_t count;
  uint16_t name; /* hv__flight_t.names entry + 1; 0: hv__fr_cold_t.name of its slot */
  uint8_t coll, dtype, ordered, state;
  uint8_t algo; /* index into hv__fr_algo_names, 0 ("") before it ran */
  uint8_t pad;
} __attribute__((aligned(64))) hv__fr_event_t;
_Static_assert(sizeof(hv__fr_event_t) == 64, "a flight recorder event is one cache line");

/* What only some events need, per ring slot (a parallel array whose pages stay
 * untouched until then). */
typedef struct hv__fr_cold {
  char name[HV__FR_NAME_LEN];   /* a name the table had no room for */
  int32_t device;               /* ordered events only (else -1 in documents) */
  uint64_t stream;              /* ordered events only */
  char error[HV__FR_ERROR_LEN]; /* meaningful only in state HV__FR_FAILED */
} hv__fr_cold_t;

/* A name of the table: stored once per communicator, shared by its events; a
 * request takes its entry when it is submitted, its event in the ring the entry's
 * index. Entries are taken in the order names first come and found in that order
 * step after step (flight_recorder.c: intern), so the table is read in order. An entry is
 * given to another name only once no event the ring shows names it (last_pos, the
 * newest event naming it, pending or completed, has left the ring), so an index never
 * shows a wrong name; two names are the same only when hash, length and bytes are.
 * 32 bytes: a name of up to HV__FR_INLINE_NAME bytes is kept in the entry, a longer
 * one (cut to HV__FR_NAME_LEN - 1) in hv__flight_t.long_names. */
#define HV__FR_INLINE_NAME 14
typedef struct hv__fr_name {
  uint64_t hash;     /* hv__hash_string of the whole name */
  uint64_t last_pos; /* the newest event naming it; 0: never used */
  uint16_t len;      /* of the (cut) name */
  char inl[HV__FR_INLINE_NAME]; /* the name when len <= HV__FR_INLINE_NAME (no terminator) */
} hv__fr_name_t;
_Static_assert(sizeof(hv__fr_name_t) == 32, "two names of the table per cache line");

/* An event as documents show it: copied, its name and cold fields filled in. */
typedef struct hv__fr_view {
  hv__fr_event_t e;
  char name[HV__FR_NAME_LEN];
  int32_t device;
  uint64_t stream;
  char error[HV__FR_ERROR_LEN];
} hv__fr_view_t;

/* The algorithms an event may name ("" first); hv__fr_algo_index finds one (0 when
 * unknown). */
extern const char *const hv__fr_algo_names[];
int hv__fr_algo_index(const char *algo);

typedef struct hv__flight {
  /* under comm->mutex */
  hv__fr_event_t *ring; /* size slots */
  hv__fr_cold_t *cold;  /* size slots */
  size_t size;
  hv__fr_name_t *names; /* the table of names: names_mask + 1 entries (a power of two) */
  char (*long_names)[HV__FR_NAME_LEN]; /* per entry: its name when longer than inline */
  uint16_t *name_index; /* 2 x entries: hash -> entry + 1 (a hint, checked), 0: none */
  size_t names_mask;
  size_t last_name, next_name; /* the entry last used; where the next new name goes */
  uint64_t name_copies; /* events whose name went to their slot's copy (tests) */
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
/* After a batch of hv__fr_finish, before comm->mutex is released: the events it
 * wrote (streaming stores) are ordered before what follows. */
static inline void hv__fr_fence(const hv_comm_t *comm) {
#if HV__FR_STREAM
  if (comm->flight) _mm_sfence();
#else
  (void)comm;
#endif
}
/* comm->mutex held: h completes at now (hv__coarse_now_us, read once per batch; handle.c);
 * hv__fr_fence follows. */
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
/* comm->mutex held: the events the ring shows (at most size, the newest), oldest
 * first, into out (size entries): the completed from the ring, the pending from
 * their handles (comm->names_in_flight). Returns how many. */
size_t hv__fr_events(hv_comm_t *comm, hv__fr_view_t *out);
/* comm->mutex held: the last completed event into out while the ring still shows it;
 * 1, else 0. */
int hv__fr_last_completed(hv_comm_t *comm, hv__fr_view_t *out);
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
