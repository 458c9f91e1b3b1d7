/* flight_recorder.c: the flight recorder of a communicator: a fixed ring of the last
 * HV_FLIGHT_RECORDER_SIZE collective events (metadata only), its live phase, and the
 * snapshot handoff from the thread running rounds (flight_recorder.h says who locks
 * what). A handle remembers its event's ring position; once the ring has wrapped
 * past it, its slot holds a newer event and updates of the old one are skipped. */
#include <stdlib.h>
#include <string.h>

#include "flight_recorder.h"
#include "negotiate.h"

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
  /* Aligned: each event's first line is one cache line. The pages are touched only as
   * the ring fills. */
  f->ring = aligned_alloc(64, size * sizeof *f->ring);
  if (f->ring) memset(f->ring, 0, size * sizeof *f->ring);
  if (!f->ring) {
    free(f);
    return -1;
  }
  f->size = size;
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
  free(f);
  comm->flight = NULL;
}

/* The event at ring position pos (in slot), or NULL when the ring has moved past it. */
static hv__fr_event_t *event_at(hv__flight_t *f, uint64_t pos, size_t slot) {
  if (!pos) return NULL;
  hv__fr_event_t *e = &f->ring[slot];
  return e->pos == pos ? e : NULL;
}

/* A handle's event. */
static hv__fr_event_t *event_of(hv__flight_t *f, const struct hv_handle *h) { return event_at(f, h->fr_pos, h->fr_slot); }

static hv__fr_event_t *new_event(hv__flight_t *f, const char *name) {
  uint64_t pos = ++f->next_pos;
  hv__fr_event_t *e = &f->ring[f->next_slot];
  if (++f->next_slot == f->size) f->next_slot = 0;
  e->pos = pos;
  e->t_negotiated = e->t_started = e->t_finished = 0;
  e->algo = 0;
  e->ordered = 0;
  /* device, stream and error are read only for ordered or failed events: their
   * cache lines stay untouched. */
  e->state = HV__FR_SUBMITTED;
  size_t n = strlen(name);
  if (n >= sizeof e->name) n = sizeof e->name - 1;
  memcpy(e->name, name, n);
  e->name[n] = '\0';
  return e;
}

static void set_phase(hv__flight_t *f, int phase, double now) {
  if (f->phase == phase || f->phase == HV__PHASE_STOPPED) return;
  f->phase = phase;
  f->since = now;
}

uint64_t hv__fr_bytes(const hv__fr_event_t *e, int size) {
  uint64_t es = e->dtype < HV_NUM_DTYPES ? hv_dtype_size((hv_dtype_t)e->dtype) : 0, n = e->count;
  /* The larger of the rank's buffers: the gathered or scattered whole. */
  if (!e->ordered && (e->coll == HV__COLL_ALLGATHER || e->coll == HV__COLL_ALLTOALL || e->coll == HV__COLL_REDUCESCATTER))
    n *= (uint64_t)size;
  return n * es;
}

void hv__fr_submit(hv_comm_t *comm, struct hv_handle *h) {
  hv__flight_t *f = comm->flight;
  if (!f) return;
  hv__fr_event_t *e = new_event(f, h->name);
  e->seq = ++f->submitted;
  e->t_submit = h->t_submit;
  e->coll = h->meta.coll;
  e->dtype = h->meta.dtype;
  e->count = h->meta.count;
  h->fr_pos = e->pos;
  h->fr_slot = (uint32_t)(e - f->ring);
  /* A slot a few submissions ahead, for writing: its misses overlap this work. */
  size_t ahead = h->fr_slot + 8 < f->size ? h->fr_slot + 8 : (h->fr_slot + 8) % f->size;
  __builtin_prefetch(&f->ring[ahead], 1, 1);
  __builtin_prefetch(f->ring[ahead].name, 1, 1);
  if (f->phase == HV__PHASE_USER) set_phase(f, HV__PHASE_NEGOTIATING, h->t_submit);
}

static void finish_event(hv__flight_t *f, hv__fr_event_t *e, hv_result_t result, const char *error, double now) {
  e->t_finished = now;
  e->state = result == HV_SUCCESS ? HV__FR_DONE : HV__FR_FAILED;
  if (result != HV_SUCCESS) {
    const char *why = error && *error ? error : hv_strerror(result);
    size_t n = strlen(why);
    if (n >= sizeof e->error) n = sizeof e->error - 1;
    memcpy(e->error, why, n);
    e->error[n] = '\0';
  }
  f->last_completed_pos = e->pos;
}

void hv__fr_finish(hv_comm_t *comm, struct hv_handle *h, hv_result_t result, const char *error, double now) {
  hv__flight_t *f = comm->flight;
  if (!f || !h->fr_pos) return;
  hv__fr_event_t *e = event_of(f, h);
  if (e) {
    if (e->state == HV__FR_RUNNING && f->running) f->running--;
    finish_event(f, e, result, error, now);
  }
  h->fr_pos = 0;
  f->completed++;
  set_phase(f, f->completed >= f->submitted ? HV__PHASE_USER : f->running ? HV__PHASE_EXECUTING : HV__PHASE_NEGOTIATING,
            now);
}

void hv__fr_negotiated(hv_comm_t *comm) {
  hv__flight_t *f = comm->flight;
  if (!f || !comm->exec_count) return;
  double now = hv__coarse_now_us();
  /* The submitting thread wrote these events on its core: fetch them well ahead, so
   * that their transfers overlap instead of following one another. */
  const size_t ahead = 16;
  for (size_t i = 0; i < comm->exec_count && i < ahead; i++)
    if (comm->exec[i].handle) hv__fr_prefetch(comm, comm->exec[i].handle);
  pthread_mutex_lock(&comm->mutex);
  for (size_t i = 0; i < comm->exec_count; i++) {
    if (i + ahead < comm->exec_count && comm->exec[i + ahead].handle) hv__fr_prefetch(comm, comm->exec[i + ahead].handle);
    const struct hv_handle *h = comm->exec[i].handle;
    hv__fr_event_t *e = h ? event_of(f, h) : NULL;
    if (e && e->state == HV__FR_SUBMITTED) e->t_negotiated = now, e->state = HV__FR_NEGOTIATED;
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
  const int a = last_index;
  pthread_mutex_lock(&comm->mutex);
  for (size_t i = 0; i < n; i++) {
    if (i && hs[i] == hs[i - 1]) continue;
    hv__fr_event_t *e = event_of(f, hs[i]);
    if (!e) continue;
    e->algo = (uint8_t)a;
    if (e->state < HV__FR_RUNNING) {
      e->state = HV__FR_RUNNING;
      e->t_started = now;
      f->running++;
    }
  }
  set_phase(f, HV__PHASE_EXECUTING, now);
  pthread_mutex_unlock(&comm->mutex);
}

uint64_t hv__fr_ordered_begin(hv_comm_t *comm, const char *function, int coll, size_t count, hv_dtype_t dtype,
                              int device, uint64_t stream) {
  hv__flight_t *f = comm->flight;
  if (!f) return 0;
  double now = hv__coarse_now_us();
  pthread_mutex_lock(&comm->mutex);
  hv__fr_event_t *e = new_event(f, function);
  e->seq = ++f->ordered_calls;
  e->ordered = 1;
  e->coll = (uint8_t)coll;
  e->dtype = (uint8_t)dtype;
  e->count = count;
  e->device = device;
  e->stream = stream;
  e->t_submit = e->t_negotiated = e->t_started = now;
  e->state = HV__FR_RUNNING;
  f->submitted++;
  f->running++;
  uint64_t pos = e->pos;
  set_phase(f, HV__PHASE_EXECUTING, now);
  pthread_mutex_unlock(&comm->mutex);
  return pos;
}

void hv__fr_ordered_finish(hv_comm_t *comm, uint64_t pos, hv_result_t result, const char *algo) {
  hv__flight_t *f = comm->flight;
  if (!f || !pos) return;
  double now = hv__coarse_now_us();
  pthread_mutex_lock(&comm->mutex);
  hv__fr_event_t *e = pos ? event_at(f, pos, (pos - 1) % f->size) : NULL;
  if (e) {
    if (algo) e->algo = (uint8_t)hv__fr_algo_index(algo);
    finish_event(f, e, result, result != HV_SUCCESS ? comm->last_error : NULL, now);
  }
  if (f->running) f->running--;
  f->completed++;
  set_phase(f, f->completed >= f->submitted ? HV__PHASE_USER : f->running ? HV__PHASE_EXECUTING : HV__PHASE_NEGOTIATING,
            now);
  pthread_mutex_unlock(&comm->mutex);
}

void hv__fr_stopped(hv_comm_t *comm) {
  hv__flight_t *f = comm->flight;
  if (f) set_phase(f, HV__PHASE_STOPPED, hv__coarse_now_us());
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
