/* flight_recorder.h: the flight recorder of a communicator (flight_recorder.c), its
 * JSON document and dumps (flight_dump.c), and the per-process status socket
 * (doctor_server.c). The format is tools/hvrun/FLIGHT_RECORDER.md.
 *
 * Locking: every write to the ring, the table of names, a handle's fr_* fields and
 * the live state below happens under comm->mutex, which submission and completion
 * hold anyway (so recording costs them a few stores and no lock of its own);
 * negotiation and execution take it once per round or fused batch (hv__fr_negotiated,
 * hv__fr_started), not per request: those two locks are about 0.1% of the 256 x 4 KiB
 * fused benchmark, while without them a reader could not see a pending request's
 * state, nor the phase, consistently. A reader (status thread, a dump) copies under
 * it. What only the thread running rounds may read (the coordinator's table, what
 * the current wait is on) comes through a snapshot request that thread answers
 * (hv__fr_answer). */
#ifndef HV_FLIGHT_RECORDER_H
#define HV_FLIGHT_RECORDER_H

#include <stdatomic.h>
#include <stdint.h>

#include "hv_internal.h"

/* Events are written to the ring 16 bytes at a time from registers where SSE2 is
 * (x86-64): a large batch's with streaming stores (a write-only log whose lines need
 * not be read first nor kept in the cache) and one sfence for the batch, which orders
 * them before the mutex's release; a small batch's with plain stores, because that
 * fence (about 500 cycles, waiting for the write-combining buffer) was a tenth of a
 * lone 4 KiB allreduce on one node. Field by field under ThreadSanitizer, which sees
 * those. */
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
/* ---- what runs per request: inline, since a call per request cost about as much
 * as the recording (the 256 x 4 KiB fused benchmark; README.md) ---- */

/* The oldest ring position the ring shows: an event before it is gone, even while
 * its slot still holds it (a newer event of that slot has not completed yet). */
static inline uint64_t hv__fr_first_shown(const hv__flight_t *f) {
  return f->next_pos >= f->size ? f->next_pos - f->size + 1 : 1;
}

static inline void hv__fr_set_phase(hv__flight_t *f, int phase, double now) {
  if (f->phase == phase || f->phase == HV__PHASE_STOPPED) return;
  f->phase = phase;
  f->since = now;
}

/* Entry i holds name (hashed): the same bytes, as long (a name cut to
 * HV__FR_NAME_LEN - 1 bytes: the same first bytes). No library call: the names of
 * a step are short, and this runs for each. */
static inline int hv__fr_entry_is(const hv__flight_t *f, size_t i, const char *name, uint64_t hash) {
  const hv__fr_name_t *n = &f->names[i];
  if (n->hash != hash || !n->last_pos) return 0;
  const size_t len = n->len;
  const char *stored = len <= HV__FR_INLINE_NAME ? n->inl : f->long_names[i];
  for (size_t j = 0; j < len; j++)
    if (stored[j] != name[j]) return 0;
  return len == HV__FR_NAME_LEN - 1 || name[len] == '\0';
}

/* Entry i names the event at pos too: its index + 1. */
static inline uint16_t hv__fr_take_name(hv__flight_t *f, size_t i, uint64_t pos) {
  hv__fr_name_t *n = &f->names[i];
  if (n->last_pos < pos) n->last_pos = pos;
  f->last_name = i;
  return (uint16_t)(i + 1);
}

/* flight_recorder.c: the rest of hv__fr_name_of. */
uint16_t hv__fr_intern(hv__flight_t *f, const char *name, uint64_t hash, uint64_t pos);

/* The name of the event at pos, which the ring shows until it completes at least:
 * its table entry + 1, or 0 when the table has no room (the event's slot then keeps
 * a copy). Entries are taken in the order names first come, and a step submits its
 * names in the order of the step before: the entry after the last one used is tried
 * first, so that the table is read in order, as the ring is written; then the hash
 * index (hv__fr_intern). */
static inline uint16_t hv__fr_name_of(hv__flight_t *f, const char *name, uint64_t hash, uint64_t pos) {
  const size_t i = (f->last_name + 1) & f->names_mask;
  return hv__fr_entry_is(f, i, name, hash) ? hv__fr_take_name(f, i, pos) : hv__fr_intern(f, name, hash, pos);
}

/* comm->mutex held: a request accepted by submit (api.c). Only a position: the event
 * is the handle's until it completes. */
static inline void hv__fr_submit(hv_comm_t *comm, struct hv_handle *h) {
  hv__flight_t *f = comm->flight;
  if (!f) return;
  h->fr_pos = ++f->next_pos;
  h->fr_slot = (uint32_t)f->next_slot;
  if (++f->next_slot == f->size) f->next_slot = 0;
  h->fr_seq = ++f->submitted;
  h->fr_state = HV__FR_SUBMITTED;
  h->fr_algo = 0;
  h->fr_t_negotiated = h->fr_t_started = 0;
  h->fr_name = hv__fr_name_of(f, h->name, h->name_hash, h->fr_pos);
  if (f->phase == HV__PHASE_USER) hv__fr_set_phase(f, HV__PHASE_NEGOTIATING, h->t_submit);
}

/* Batches of at least this many completions stream their events (one fence for all). */
#define HV__FR_STREAM_MIN 8

/* After a batch of hv__fr_finish that streamed, before comm->mutex is released: the
 * events are ordered before what follows. */
static inline void hv__fr_fence(const hv_comm_t *comm) {
#if HV__FR_STREAM
  if (comm->flight) _mm_sfence();
#else
  (void)comm;
#endif
}

/* flight_recorder.c: what only some completions write (a name copy, an error). */
void hv__fr_finish_rare(hv__flight_t *f, const struct hv_handle *h, uint64_t pos, hv_result_t result,
                        const char *error);

/* comm->mutex held: h completes at now (hv__coarse_now_us, read once per batch; handle.c).
 * stream: the batch is large enough for streaming stores (HV__FR_STREAM_MIN), and
 * hv__fr_fence follows it. Its event is written to the ring, unless the ring has
 * moved past it (an older event than any it shows). */
static inline void hv__fr_finish(hv_comm_t *comm, struct hv_handle *h, hv_result_t result, const char *error,
                                 double now, int stream) {
  hv__flight_t *f = comm->flight;
  if (!f || !h->fr_pos) return;
  if (h->fr_state == HV__FR_RUNNING && f->running) f->running--;
  const uint64_t pos = h->fr_pos;
  h->fr_pos = 0;
  f->completed++;
  hv__fr_set_phase(
      f, f->completed >= f->submitted ? HV__PHASE_USER : f->running ? HV__PHASE_EXECUTING : HV__PHASE_NEGOTIATING, now);
  if (pos < hv__fr_first_shown(f)) return;
  const uint8_t state = result == HV_SUCCESS ? HV__FR_DONE : HV__FR_FAILED;
  hv__fr_event_t *e = &f->ring[h->fr_slot];
#if HV__FR_STREAM
  /* Stored from registers: an event built on the stack and loaded back 16 bytes at a
   * time stalls on the narrow stores that built it (a store that cannot be forwarded
   * to a wider load), which was most of the recorder's cost. The last 8 bytes are
   * hv__fr_event_t's name .. pad, little-endian (flight_recorder.c asserts the
   * layout). */
  const uint64_t tail = (uint64_t)h->fr_name | (uint64_t)h->meta.coll << 16 | (uint64_t)h->meta.dtype << 24 |
                        (uint64_t)state << 40 | (uint64_t)h->fr_algo << 48; /* ordered 0, pad 0 */
  __m128i *to = (__m128i *)e;
  const __m128i v0 = _mm_set_epi64x((long long)h->fr_seq, (long long)pos);
  const __m128i v1 = _mm_castpd_si128(_mm_set_pd(h->fr_t_negotiated, h->t_submit));
  const __m128i v2 = _mm_castpd_si128(_mm_set_pd(now, h->fr_t_started));
  const __m128i v3 = _mm_set_epi64x((long long)tail, (long long)h->meta.count);
  if (stream) {
    _mm_stream_si128(to, v0), _mm_stream_si128(to + 1, v1), _mm_stream_si128(to + 2, v2), _mm_stream_si128(to + 3, v3);
  } else {
    _mm_store_si128(to, v0), _mm_store_si128(to + 1, v1), _mm_store_si128(to + 2, v2), _mm_store_si128(to + 3, v3);
  }
#else
  (void)stream;
  *e = (hv__fr_event_t){.pos = pos,
                        .seq = h->fr_seq,
                        .t_submit = h->t_submit,
                        .t_negotiated = h->fr_t_negotiated,
                        .t_started = h->fr_t_started,
                        .t_finished = now,
                        .count = h->meta.count,
                        .name = h->fr_name,
                        .coll = h->meta.coll,
                        .dtype = h->meta.dtype,
                        .state = state,
                        .algo = h->fr_algo};
#endif
  if (__builtin_expect(!h->fr_name || result != HV_SUCCESS, 0)) hv__fr_finish_rare(f, h, pos, result, error);
  f->last_completed_pos = pos;
}

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
