/* flight_recorder.c: the flight recorder of a communicator: a fixed ring of the last
 * HV_FLIGHT_RECORDER_SIZE collective events (metadata only), its live phase, and the
 * snapshot handoff from the thread running rounds (flight_recorder.h says who locks
 * what). Submission only takes a ring position: the event stays in its handle while
 * it is negotiated and runs, and is written to the ring, one cache line with its name
 * interned, when it completes. Once the ring has moved past a position (a newer event
 * holds or will hold its slot), the event is no longer shown nor written. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flight_recorder.h"
#include "negotiate.h"

/* hv__fr_finish writes an event as 8-byte words: the layout it assumes. */
_Static_assert(offsetof(hv__fr_event_t, t_submit) == 16 && offsetof(hv__fr_event_t, count) == 48 &&
                   offsetof(hv__fr_event_t, name) == 56 && offsetof(hv__fr_event_t, coll) == 58 &&
                   offsetof(hv__fr_event_t, dtype) == 59 && offsetof(hv__fr_event_t, ordered) == 60 &&
                   offsetof(hv__fr_event_t, state) == 61 && offsetof(hv__fr_event_t, algo) == 62,
               "hv__fr_finish's words");

const char *const hv__fr_algo_names[] = {"",    "shm",  "ring",     "rd",   "rab",  "2d",    "mpi",  "hier",
                                         "hier_shm", "none", "pairwise", "nccl", "local", "check", "auto", NULL};

int hv__fr_algo_index(const char *algo) {
  for (int i = 1; algo && hv__fr_algo_names[i]; i++)
    if (strcmp(algo, hv__fr_algo_names[i]) == 0) return i;
  return 0;
}

int hv__fr_create(hv_comm_t *comm) {
  size_t size = comm->config.flight_recorder_size;
  if (size == 0) return 0;
  hv__flight_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  size_t nnames = 1;
  while (nnames < size && nnames < HV__FR_INTERN_MAX) nnames *= 2;
  /* Aligned: each event, and the start of each name, is one cache line. The cold
   * slots' pages (calloc) are touched only when an event needs one. */
  f->ring = aligned_alloc(64, size * sizeof *f->ring);
  if (f->ring) memset(f->ring, 0, size * sizeof *f->ring);
  f->cold = calloc(size, sizeof *f->cold);
  f->names = aligned_alloc(64, nnames * sizeof *f->names);
  if (f->names) memset(f->names, 0, nnames * sizeof *f->names);
  f->long_names = calloc(nnames, sizeof *f->long_names);
  f->name_index = calloc(2 * nnames, sizeof *f->name_index);
  if (!f->ring || !f->cold || !f->names || !f->long_names || !f->name_index) {
    free(f->ring), free(f->cold), free(f->names), free(f->long_names), free(f->name_index);
    free(f);
    return -1;
  }
  f->size = size;
  f->names_mask = nnames - 1;
  f->last_name = f->names_mask; /* the first name is tried in entry 0 */
  f->since = hv__coarse_now_us();
  f->snap_peer = -1;
  atomic_init(&f->snap_request, 0);
  pthread_mutex_init(&f->snap_lock, NULL);
  pthread_cond_init(&f->snap_cv, NULL);
  comm->flight = f;
  return 0;
}

void hv__fr_free(hv_comm_t *comm) {
  hv__flight_t *f = comm->flight;
  if (!f) return;
  pthread_mutex_destroy(&f->snap_lock);
  pthread_cond_destroy(&f->snap_cv);
  free(f->snap_coordinator);
  free(f->ring);
  free(f->cold);
  free(f->names);
  free(f->long_names);
  free(f->name_index);
  free(f);
  comm->flight = NULL;
}

/* The event at ring position pos, or NULL when the ring has moved past it (or it was
 * never written). */
static hv__fr_event_t *event_at(hv__flight_t *f, uint64_t pos) {
  if (!pos || pos < hv__fr_first_shown(f)) return NULL;
  hv__fr_event_t *e = &f->ring[(pos - 1) % f->size];
  return e->pos == pos ? e : NULL;
}

/* The stored bytes of entry i. */
static const char *entry_name(const hv__flight_t *f, size_t i) {
  return f->names[i].len <= HV__FR_INLINE_NAME ? f->names[i].inl : f->long_names[i];
}

/* hv__fr_name_of's guess (the entry after the last one used) failed: the hash index,
 * which only points (a collision or a reused entry overwrites it: the name is then
 * stored again, never taken for another), else a new entry. */
uint16_t hv__fr_intern(hv__flight_t *f, const char *name, uint64_t hash, uint64_t pos) {
  const size_t mask = f->names_mask;
  uint16_t *slot = &f->name_index[hash & (2 * mask + 1)];
  size_t i = *slot ? *slot - 1u : 0;
  if (!*slot || !hv__fr_entry_is(f, i, name, hash)) {
    /* A new entry: one that no event the ring shows names (unused, or its newest
     * event has left the ring), from where the last was taken. */
    const uint64_t first = hv__fr_first_shown(f);
    size_t k = 0;
    for (i = f->next_name; k < HV__FR_PROBE && f->names[i].last_pos >= first; k++) i = (i + 1) & mask;
    if (k == HV__FR_PROBE) return 0;
    f->next_name = (i + 1) & mask;
    const size_t len = strnlen(name, HV__FR_NAME_LEN - 1);
    hv__fr_name_t *n = &f->names[i];
    n->hash = hash;
    n->len = (uint16_t)len;
    if (len <= HV__FR_INLINE_NAME) {
      memcpy(n->inl, name, len);
    } else {
      memcpy(f->long_names[i], name, len);
      f->long_names[i][len] = '\0';
    }
    *slot = (uint16_t)(i + 1);
  }
  return hv__fr_take_name(f, i, pos);
}

/* The copy of a name the table had no room for, in the slot of the event at pos. */
static void copy_name(hv__flight_t *f, uint64_t pos, const char *name) {
  char *copy = f->cold[(pos - 1) % f->size].name;
  size_t n = strnlen(name, HV__FR_NAME_LEN - 1);
  memcpy(copy, name, n);
  copy[n] = '\0';
  f->name_copies++;
}

uint64_t hv__fr_bytes(const hv__fr_event_t *e, int size) {
  uint64_t es = e->dtype < HV_NUM_DTYPES ? hv_dtype_size((hv_dtype_t)e->dtype) : 0, n = e->count;
  /* The larger of the rank's buffers: the gathered or scattered whole. */
  if (!e->ordered && (e->coll == HV__COLL_ALLGATHER || e->coll == HV__COLL_ALLTOALL || e->coll == HV__COLL_REDUCESCATTER))
    n *= (uint64_t)size;
  return n * es;
}

static void set_error(hv__flight_t *f, uint64_t pos, hv_result_t result, const char *error) {
  const char *why = error && *error ? error : hv_strerror(result);
  char *to = f->cold[(pos - 1) % f->size].error;
  size_t n = strlen(why);
  if (n >= HV__FR_ERROR_LEN) n = HV__FR_ERROR_LEN - 1;
  memcpy(to, why, n);
  to[n] = '\0';
}

void hv__fr_finish_rare(hv__flight_t *f, const struct hv_handle *h, uint64_t pos, hv_result_t result,
                        const char *error) {
  if (!h->fr_name) copy_name(f, pos, h->name);
  if (result != HV_SUCCESS) set_error(f, pos, result, error);
}

void hv__fr_negotiated(hv_comm_t *comm) {
  hv__flight_t *f = comm->flight;
  if (!f || !comm->exec_count) return;
  double now = hv__coarse_now_us();
  pthread_mutex_lock(&comm->mutex);
  for (size_t i = 0; i < comm->exec_count; i++) {
    struct hv_handle *h = comm->exec[i].handle;
    if (h && h->fr_pos && h->fr_state == HV__FR_SUBMITTED) h->fr_t_negotiated = now, h->fr_state = HV__FR_NEGOTIATED;
  }
  pthread_mutex_unlock(&comm->mutex);
}

void hv__fr_started(hv_comm_t *comm, struct hv_handle *const *hs, size_t n, const char *algo) {
  hv__flight_t *f = comm->flight;
  if (!f) return;
  double now = hv__coarse_now_us();
  /* The same algorithm batch after batch: its index is looked up once. */
  static _Thread_local const char *last_algo;
  static _Thread_local int last_index;
  if (algo != last_algo) last_index = hv__fr_algo_index(algo), last_algo = algo;
  const uint8_t a = (uint8_t)last_index;
  pthread_mutex_lock(&comm->mutex);
  for (size_t i = 0; i < n; i++) {
    struct hv_handle *h = hs[i];
    if ((i && h == hs[i - 1]) || !h->fr_pos) continue;
    h->fr_algo = a;
    if (h->fr_state < HV__FR_RUNNING) {
      h->fr_state = HV__FR_RUNNING;
      h->fr_t_started = now;
      f->running++;
    }
  }
  hv__fr_set_phase(f, HV__PHASE_EXECUTING, now);
  pthread_mutex_unlock(&comm->mutex);
}

uint64_t hv__fr_ordered_begin(hv_comm_t *comm, const char *function, int coll, size_t count, hv_dtype_t dtype,
                              int device, uint64_t stream) {
  hv__flight_t *f = comm->flight;
  if (!f) return 0;
  double now = hv__coarse_now_us();
  const uint64_t hash = hv__hash_string(function);
  pthread_mutex_lock(&comm->mutex);
  /* Written at once: an ordered call has no handle to hold it meanwhile. */
  uint64_t pos = ++f->next_pos;
  hv__fr_event_t *e = &f->ring[f->next_slot];
  hv__fr_cold_t *cold = &f->cold[f->next_slot];
  if (++f->next_slot == f->size) f->next_slot = 0;
  e->pos = pos;
  e->seq = ++f->ordered_calls;
  e->ordered = 1;
  e->coll = (uint8_t)coll;
  e->dtype = (uint8_t)dtype;
  e->count = count;
  e->algo = 0;
  cold->device = device;
  cold->stream = stream;
  e->t_submit = e->t_negotiated = e->t_started = now;
  e->t_finished = 0;
  e->state = HV__FR_RUNNING;
  e->name = hv__fr_name_of(f, function, hash, pos);
  if (!e->name) copy_name(f, pos, function);
  f->submitted++;
  f->running++;
  hv__fr_set_phase(f, HV__PHASE_EXECUTING, now);
  pthread_mutex_unlock(&comm->mutex);
  return pos;
}

void hv__fr_ordered_finish(hv_comm_t *comm, uint64_t pos, hv_result_t result, const char *algo) {
  hv__flight_t *f = comm->flight;
  if (!f || !pos) return;
  double now = hv__coarse_now_us();
  pthread_mutex_lock(&comm->mutex);
  hv__fr_event_t *e = event_at(f, pos);
  if (e) {
    if (algo) e->algo = (uint8_t)hv__fr_algo_index(algo);
    e->t_finished = now;
    e->state = result == HV_SUCCESS ? HV__FR_DONE : HV__FR_FAILED;
    if (result != HV_SUCCESS) set_error(f, pos, result, comm->last_error);
    f->last_completed_pos = pos;
  }
  if (f->running) f->running--;
  f->completed++;
  hv__fr_set_phase(f, f->completed >= f->submitted ? HV__PHASE_USER : f->running ? HV__PHASE_EXECUTING : HV__PHASE_NEGOTIATING,
            now);
  pthread_mutex_unlock(&comm->mutex);
}

/* The view of the event e, which the ring shows. */
static void view_of(const hv__flight_t *f, const hv__fr_event_t *e, hv__fr_view_t *v) {
  const hv__fr_cold_t *cold = &f->cold[(e->pos - 1) % f->size];
  v->e = *e;
  if (e->name) {
    const hv__fr_name_t *n = &f->names[e->name - 1];
    memcpy(v->name, entry_name(f, e->name - 1u), n->len);
    v->name[n->len] = '\0';
  } else {
    snprintf(v->name, sizeof v->name, "%s", cold->name);
  }
  v->device = e->ordered ? cold->device : -1;
  v->stream = e->ordered ? cold->stream : 0;
  snprintf(v->error, sizeof v->error, "%s", e->state == HV__FR_FAILED ? cold->error : "");
}

static int by_pos(const void *a, const void *b) {
  const hv__fr_view_t *x = a, *y = b;
  return x->e.pos < y->e.pos ? -1 : x->e.pos > y->e.pos;
}

size_t hv__fr_events(hv_comm_t *comm, hv__fr_view_t *out) {
  hv__flight_t *f = comm->flight;
  size_t n = 0;
  int sorted = 1;
  for (uint64_t pos = hv__fr_first_shown(f); pos <= f->next_pos; pos++) {
    const hv__fr_event_t *e = &f->ring[(pos - 1) % f->size];
    if (e->pos == pos) view_of(f, e, &out[n++]);
  }
  /* The pending: still their handles'. */
  const uint64_t first = hv__fr_first_shown(f);
  for (size_t i = 0; i < comm->names_in_flight.capacity && n < f->size; i++) {
    const struct hv_handle *h = comm->names_in_flight.slots[i].value;
    if (!comm->names_in_flight.slots[i].key || !h || !h->fr_pos || h->fr_pos < first) continue;
    hv__fr_view_t *v = &out[n++];
    memset(&v->e, 0, sizeof v->e);
    v->e.pos = h->fr_pos;
    v->e.seq = h->fr_seq;
    v->e.t_submit = h->t_submit;
    v->e.t_negotiated = h->fr_t_negotiated;
    v->e.t_started = h->fr_t_started;
    v->e.count = h->meta.count;
    v->e.coll = h->meta.coll;
    v->e.dtype = h->meta.dtype;
    v->e.state = h->fr_state;
    v->e.algo = h->fr_algo;
    snprintf(v->name, sizeof v->name, "%s", h->name);
    v->device = -1;
    v->stream = 0;
    v->error[0] = '\0';
    sorted = 0;
  }
  if (!sorted) qsort(out, n, sizeof *out, by_pos);
  return n;
}

int hv__fr_last_completed(hv_comm_t *comm, hv__fr_view_t *out) {
  hv__flight_t *f = comm->flight;
  const hv__fr_event_t *e = event_at(f, f->last_completed_pos);
  if (e) view_of(f, e, out);
  return e != NULL;
}

void hv__fr_stopped(hv_comm_t *comm) {
  hv__flight_t *f = comm->flight;
  if (f) hv__fr_set_phase(f, HV__PHASE_STOPPED, hv__coarse_now_us());
}

int hv__fr_peer_of(const char *what) {
  /* transport_mpi.c's description ends "from rank Q on host H" or "to rank Q ...". */
  const char *p = what ? strstr(what, " rank ") : NULL, *last = NULL;
  for (; p; p = strstr(p + 1, " rank ")) last = p;
  if (!last) return -1;
  char *end;
  long q = strtol(last + 6, &end, 10);
  return end != last + 6 && q >= 0 && q < (1L << 30) ? (int)q : -1;
}

void hv__fr_answer(hv_comm_t *comm, const char *what) {
  hv__flight_t *f = comm->flight;
  if (!atomic_exchange(&f->snap_request, 0)) return;
  hv__json_clock();
  char *coordinator = hv__coordinator_json(comm);
  pthread_mutex_lock(&f->snap_lock);
  free(f->snap_coordinator);
  f->snap_coordinator = coordinator;
  snprintf(f->snap_waiting, sizeof f->snap_waiting, "%s", what ? what : "");
  f->snap_peer = hv__fr_peer_of(what);
  f->snap_answered = f->snap_asked;
  pthread_cond_broadcast(&f->snap_cv);
  pthread_mutex_unlock(&f->snap_lock);
}
