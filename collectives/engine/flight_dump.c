/* flight_dump.c: the flight recorder's document (tools/hvrun/FLIGHT_RECORDER.md) of
 * every live communicator of the process, and the dumps: written to a temporary name
 * and renamed (0600, directories 0700), announced by one stderr line, a failure (a
 * full disk) by one warning line. Also the process's registry of communicators, whose
 * first and last start and stop the status server (doctor_server.c).
 *
 * A document reads each communicator's recorder and live state under comm->mutex (a
 * copy, then formatted unlocked). What only the thread running rounds may read (the
 * coordinator's table, the wait in progress) it asks that thread for; without an
 * answer within SNAPSHOT_WAIT_MS it says "snapshot": "partial". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flight_recorder.h"

#define SNAPSHOT_WAIT_MS 200

/* ---- JSON text ---- */

static int json_reserve(hv__json_t *j, size_t more) {
  if (j->oom) return -1;
  if (j->len + more + 1 <= j->cap) return 0;
  size_t cap = j->cap ? j->cap : 4096;
  while (cap < j->len + more + 1) cap *= 2;
  char *d = realloc(j->data, cap);
  if (!d) {
    j->oom = 1;
    return -1;
  }
  j->data = d;
  j->cap = cap;
  return 0;
}

void hv__json_printf(hv__json_t *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0 || json_reserve(j, (size_t)n)) return;
  if ((size_t)n < sizeof small) {
    memcpy(j->data + j->len, small, (size_t)n + 1);
  } else {
    va_start(ap, fmt);
    vsnprintf(j->data + j->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  j->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0. */
static int utf8_length(const unsigned char *s) {
  if (s[0] < 0x80) return 1;
  int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
  if (n == 0 || s[0] > 0xf4) return 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) return 0; /* overlong, surrogate */
  if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))) return 0;
  return n;
}

void hv__json_string(hv__json_t *j, const char *text) {
  const unsigned char *s = (const unsigned char *)(text ? text : "");
  if (json_reserve(j, strlen((const char *)s) * 6 + 2)) return;
  char *o = j->data + j->len;
  *o++ = '"';
  while (*s) {
    int n = utf8_length(s);
    if (*s == '"' || *s == '\\') {
      *o++ = '\\', *o++ = (char)*s++;
    } else if (*s == '\n') {
      *o++ = '\\', *o++ = 'n', s++;
    } else if (*s == '\t') {
      *o++ = '\\', *o++ = 't', s++;
    } else if (*s < 0x20 || *s == 0x7f || n == 0) {
      /* Control characters, and bytes that are not UTF-8 (a name cut inside a
       * character, or not text at all): escaped, so the document stays valid JSON. */
      o += sprintf(o, "\\u%04x", *s++);
    } else {
      memcpy(o, s, (size_t)n);
      o += n, s += n;
    }
  }
  *o++ = '"';
  *o = '\0';
  j->len = (size_t)(o - j->data);
}

/* Added to CLOCK_MONOTONIC seconds gives CLOCK_REALTIME: read once per document (or
 * snapshot answer) by the thread that writes it. */
static _Thread_local double mono_to_real_s;

static double realtime_s(void);

void hv__json_clock(void) {
  struct timespec mono;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  mono_to_real_s = realtime_s() - ((double)mono.tv_sec + (double)mono.tv_nsec * 1e-9);
}

void hv__json_time(hv__json_t *j, double mono_us) {
  if (mono_us <= 0) hv__json_printf(j, "null");
  else hv__json_printf(j, "%.6f", mono_us * 1e-6 + mono_to_real_s);
}

static double realtime_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- identity ---- */

static char job_id[256];
static int world_rank = -1, world_size = 0;

static pthread_once_t identity_once = PTHREAD_ONCE_INIT;

static void set_job(void) {
  const char *v, *step;
  if ((v = getenv("HV_JOB_ID")) && *v) snprintf(job_id, sizeof job_id, "%s", v);
  else if ((v = getenv("SLURM_JOB_ID")) && *v)
    snprintf(job_id, sizeof job_id, "slurm-%s.%s", v, (step = getenv("SLURM_STEP_ID")) ? step : "");
  else if ((v = getenv("OMPI_MCA_ess_base_jobid")) && *v) snprintf(job_id, sizeof job_id, "ompi-%s", v);
  else if ((v = getenv("PMIX_NAMESPACE")) && *v) snprintf(job_id, sizeof job_id, "pmix-%s", v);
  else snprintf(job_id, sizeof job_id, "local");
  for (char *p = job_id; *p; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' ||
          *p == '_' || *p == '-'))
      *p = '_';
}

/* The job and this process's rank in MPI_COMM_WORLD, once (at the first
 * registration, from hv_init's thread). */
static void set_identity(void) {
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  set_job();
}

const char *hv__flight_job(void) {
  pthread_once(&identity_once, set_identity);
  return job_id;
}

int hv__flight_world_rank(void) {
  pthread_once(&identity_once, set_identity);
  return world_rank;
}

/* mkdir -p, each missing directory 0700. */
static int make_dirs(const char *path) {
  char p[1024];
  if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) return errno = ENAMETOOLONG, -1;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0700) != 0 && errno != EEXIST) return -1;
      *s = c;
      if (!c) break;
    }
  }
  return 0;
}

int hv__flight_dump_dir(char *out, size_t len, char *err, size_t errlen) {
  const char *v;
  int n, chosen = 1; /* a directory the user named is theirs to choose */
  if ((v = getenv("HV_FLIGHT_RECORDER")) && *v) n = snprintf(out, len, "%s", v);
  else if ((v = getenv("HV_RUN_DIR")) && *v) n = snprintf(out, len, "%s/flight", v);
  else {
    chosen = 0;
    const char *tmp = getenv("TMPDIR");
    n = snprintf(out, len, "%s/hv-%u/flight-%s", tmp && *tmp ? tmp : "/tmp", (unsigned)getuid(), hv__flight_job());
  }
  if (n < 0 || (size_t)n >= len) {
    snprintf(err, errlen, "the dump directory's path is too long");
    return -1;
  }
  if (make_dirs(out)) {
    snprintf(err, errlen, "cannot create %s: %s", out, strerror(errno));
    return -1;
  }
  return chosen ? 0 : hv__flight_own_dir(out, err, errlen);
}

int hv__flight_own_dir(const char *dir, char *err, size_t errlen) {
  /* A directory another user made (in a shared /tmp) could have its files swapped. */
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022)) {
    snprintf(err, errlen, "%s is not a directory of this user writable by it alone", dir);
    return -1;
  }
  return 0;
}

/* ---- the registry ---- */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static hv_comm_t **live;
static size_t nlive, live_cap;
static int next_index;

void hv__flight_register(hv_comm_t *comm) {
  if (!comm->flight) return;
  pthread_once(&identity_once, set_identity);
  pthread_mutex_lock(&registry_lock);
  if (nlive == live_cap) {
    size_t cap = live_cap ? live_cap * 2 : 8;
    hv_comm_t **l = realloc(live, cap * sizeof *l);
    if (!l) { /* no document for it: the recorder still records */
      pthread_mutex_unlock(&registry_lock);
      return;
    }
    live = l, live_cap = cap;
  }
  comm->flight->index = next_index++;
  live[nlive++] = comm;
  pthread_mutex_unlock(&registry_lock);
  hv__doctor_sync(comm->config.flight_signal);
}

int hv__flight_live_count(void) {
  pthread_mutex_lock(&registry_lock);
  int n = (int)nlive;
  pthread_mutex_unlock(&registry_lock);
  return n;
}

void hv__flight_unregister(hv_comm_t *comm) {
  if (!comm->flight) return;
  pthread_mutex_lock(&registry_lock);
  for (size_t i = 0; i < nlive; i++)
    if (live[i] == comm) {
      memmove(live + i, live + i + 1, (nlive - i - 1) * sizeof *live);
      nlive--;
      if (nlive == 0) {
        free(live);
        live = NULL, live_cap = 0;
      }
      break;
    }
  pthread_mutex_unlock(&registry_lock);
  /* Unlocked: the server may be building a document (the registry lock held), and
   * stopping it waits for that. */
  hv__doctor_sync(comm->config.flight_signal);
}

/* ---- one communicator ---- */

/* Set by a thread that dumps from inside the rounds it runs: what it waits on, and
 * why its engine stops. */
static _Thread_local const char *self_waiting, *self_error;

typedef struct pending_copy {
  char name[HV__FR_NAME_LEN];
  uint8_t coll;
  double t_submit;
  uint64_t pos;
} pending_copy_t;

static int by_pos(const void *a, const void *b) {
  const pending_copy_t *x = a, *y = b;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int algo_count(void) {
  int n = 0;
  while (hv__fr_algo_names[n]) n++;
  return n;
}

static const char *const state_names[] = {"submitted", "negotiated", "running", "done", "failed"};
static const char *const phase_names[] = {"user", "negotiating", "executing", "stopped"};

static void event_json(hv__json_t *j, const hv__fr_view_t *v, int size) {
  const hv__fr_event_t *e = &v->e;
  hv__json_printf(j, "{\"seq\": %llu, \"name\": ", (unsigned long long)e->seq);
  hv__json_string(j, v->name);
  hv__json_printf(j, ", \"coll\": \"%s\", \"dtype\": \"%s\", \"count\": %llu, \"bytes\": %llu, \"algo\": ",
                  hv__coll_name((hv__coll_t)e->coll),
                  e->dtype < HV_NUM_DTYPES ? hv_dtype_name((hv_dtype_t)e->dtype) : "?", (unsigned long long)e->count,
                  (unsigned long long)hv__fr_bytes(e, size));
  hv__json_string(j, hv__fr_algo_names[e->algo < algo_count() ? e->algo : 0]);
  hv__json_printf(j, ", \"ordered\": %s, \"device\": %d, \"stream\": \"0x%llx\", \"t_submit\": ", e->ordered ? "true" : "false",
                  e->ordered ? v->device : -1, e->ordered ? (unsigned long long)v->stream : 0ull);
  hv__json_time(j, e->t_submit);
  hv__json_printf(j, ", \"t_negotiated\": ");
  hv__json_time(j, e->t_negotiated);
  hv__json_printf(j, ", \"t_started\": ");
  hv__json_time(j, e->t_started);
  hv__json_printf(j, ", \"t_finished\": ");
  hv__json_time(j, e->t_finished);
  hv__json_printf(j, ", \"state\": \"%s\", \"error\": ", state_names[e->state < 5 ? e->state : 0]);
  hv__json_string(j, e->state == HV__FR_FAILED ? v->error : "");
  hv__json_printf(j, "}");
}

/* The engine-owned part: from this thread when it runs comm's rounds, read directly
 * once rounds are over, else asked of the thread that runs them. */
static int engine_part(hv_comm_t *comm, char **coordinator, char *waiting, size_t wlen, int *peer) {
  hv__flight_t *f = comm->flight;
  *coordinator = NULL, waiting[0] = '\0', *peer = -1;
  if (hv__engine_thread_comm == comm) {
    *coordinator = hv__coordinator_json(comm);
    snprintf(waiting, wlen, "%s", self_waiting ? self_waiting : "");
    *peer = hv__fr_peer_of(self_waiting);
    return 1;
  }
  pthread_mutex_lock(&comm->mutex);
  int stopped = comm->engine_stopped;
  pthread_mutex_unlock(&comm->mutex);
  if (stopped) {
    *coordinator = hv__coordinator_json(comm);
    return 1;
  }
  if (comm->threadless) return 0;
  pthread_mutex_lock(&f->snap_lock);
  uint64_t ticket = ++f->snap_asked;
  atomic_store(&f->snap_request, 1);
  pthread_mutex_unlock(&f->snap_lock);
  pthread_mutex_lock(&comm->mutex);
  pthread_cond_signal(&comm->queue_cv); /* an idle engine answers too (engine_thread.c) */
  pthread_mutex_unlock(&comm->mutex);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += SNAPSHOT_WAIT_MS * 1000000L;
  until.tv_sec += until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  pthread_mutex_lock(&f->snap_lock);
  while (f->snap_answered < ticket)
    if (pthread_cond_timedwait(&f->snap_cv, &f->snap_lock, &until) != 0) break;
  int answered = f->snap_answered >= ticket;
  if (answered) {
    *coordinator = f->snap_coordinator;
    f->snap_coordinator = NULL;
    snprintf(waiting, wlen, "%s", f->snap_waiting);
    *peer = f->snap_peer;
  }
  pthread_mutex_unlock(&f->snap_lock);
  if (answered) return 1;
  /* The engine stopped meanwhile: its state is frozen now. */
  pthread_mutex_lock(&comm->mutex);
  stopped = comm->engine_stopped;
  pthread_mutex_unlock(&comm->mutex);
  if (stopped) *coordinator = hv__coordinator_json(comm);
  return stopped;
}

static void comm_json(hv__json_t *j, hv_comm_t *comm) {
  hv__flight_t *f = comm->flight;
  char *coordinator, waiting[512];
  int peer;
  int full = engine_part(comm, &coordinator, waiting, sizeof waiting, &peer);

  /* Everything else under comm->mutex, copied. */
  hv__fr_view_t *events = aligned_alloc(64, f->size * sizeof *events);
  pthread_mutex_lock(&comm->mutex);
  size_t npending = comm->names_in_flight.count, np = 0;
  pending_copy_t *pending = npending ? malloc(npending * sizeof *pending) : NULL;
  if (npending && !pending) j->oom = 1;
  for (size_t i = 0; pending && i < comm->names_in_flight.capacity; i++) {
    const struct hv_handle *h = comm->names_in_flight.slots[i].value;
    if (!comm->names_in_flight.slots[i].key || !h || np == npending) continue;
    snprintf(pending[np].name, sizeof pending[np].name, "%s", h->name);
    pending[np].coll = h->meta.coll;
    pending[np].t_submit = h->t_submit;
    pending[np++].pos = h->fr_pos;
  }
  size_t nev = events ? hv__fr_events(comm, events) : 0;
  hv__fr_view_t last_done;
  int have_last = hv__fr_last_completed(comm, &last_done);
  int phase = f->phase;
  double since = f->since;
  uint64_t submitted = f->submitted, completed = f->completed;
  char error[sizeof comm->stopped_why];
  snprintf(error, sizeof error, "%s", comm->engine_stopped && comm->async_error != HV_SUCCESS ? comm->stopped_why : "");
  pthread_mutex_unlock(&comm->mutex);
  if (!error[0] && self_error && hv__engine_thread_comm == comm) snprintf(error, sizeof error, "%s", self_error);
  if (pending) qsort(pending, np, sizeof *pending, by_pos);

  hv__json_printf(j, "{\"index\": %d, \"rank\": %d, \"size\": %d, \"recorder_size\": %zu, \"snapshot\": \"%s\",\n",
                  f->index, comm->rank, comm->size, f->size, full ? "full" : "partial");
  hv__json_printf(j, "    \"phase\": \"%s\", \"since\": ", phase_names[phase & 3]);
  hv__json_time(j, since);
  hv__json_printf(j, ",\n    \"pending\": [");
  for (size_t i = 0; i < np; i++) {
    hv__json_printf(j, "%s{\"name\": ", i ? ", " : "");
    hv__json_string(j, pending[i].name);
    hv__json_printf(j, ", \"coll\": \"%s\", \"t_submit\": ", hv__coll_name((hv__coll_t)pending[i].coll));
    hv__json_time(j, pending[i].t_submit);
    hv__json_printf(j, "}");
  }
  hv__json_printf(j, "],\n    \"waiting\": ");
  hv__json_string(j, waiting);
  hv__json_printf(j, ", \"waiting_peer\": %d, \"error\": ", peer);
  hv__json_string(j, error);
  hv__json_printf(j, ",\n    \"submitted\": %llu, \"completed\": %llu, \"last_completed\": ", (unsigned long long)submitted,
                  (unsigned long long)completed);
  if (have_last) event_json(j, &last_done, comm->size);
  else hv__json_printf(j, "null");
  hv__json_printf(j, ",\n    \"coordinator\": %s,\n    \"events\": [", coordinator ? coordinator : "null");
  for (size_t i = 0; i < nev; i++) {
    hv__json_printf(j, "%s\n      ", i ? "," : "");
    event_json(j, &events[i], comm->size);
  }
  hv__json_printf(j, "]}");
  if (!events) j->oom = 1;
  free(events);
  free(pending);
  free(coordinator);
}

char *hv__flight_document(const char *reason, const char *detail, size_t *len) {
  hv__json_t j = {0};
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  hv__json_clock();
  double now = realtime_s();
  pthread_mutex_lock(&registry_lock);
  hv__json_printf(&j, "{\"format\": \"hv-flight-recorder\", \"version\": 1, \"hv_version\": \"%d.%d.%d\",\n",
                  HV_VERSION_MAJOR, HV_VERSION_MINOR, HV_VERSION_PATCH);
  hv__json_printf(&j, "  \"job\": ");
  hv__json_string(&j, hv__flight_job());
  hv__json_printf(&j, ", \"world_rank\": %d, \"world_size\": %d, \"host\": ", world_rank, world_size);
  hv__json_string(&j, host);
  hv__json_printf(&j, ", \"pid\": %ld,\n  \"reason\": \"%s\", \"reason_detail\": ", (long)getpid(), reason);
  hv__json_string(&j, detail ? detail : "");
  hv__json_printf(&j, ",\n  \"time\": %.6f,\n  \"comms\": [", now);
  for (size_t i = 0; i < nlive; i++) {
    hv__json_printf(&j, "%s\n   ", i ? "," : "");
    comm_json(&j, live[i]);
  }
  pthread_mutex_unlock(&registry_lock);
  hv__json_printf(&j, "]}\n");
  if (j.oom) {
    free(j.data);
    return NULL;
  }
  *len = j.len;
  return j.data;
}

/* ---- dumps ---- */

static void say(const char *line) {
  /* One write: ranks' lines interleave whole in mpirun's output. */
  ssize_t ignored = write(2, line, strlen(line));
  (void)ignored;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w, n -= (size_t)w;
  }
  return 0;
}

void hv__flight_dump(hv_comm_t *comm, const char *reason, const char *detail) {
  if (comm && !comm->flight) return;
  char dir[900], err[1100], path[1300], tmp[1400], line[2700];
  const int rank = hv__flight_world_rank();
  if (hv__flight_dump_dir(dir, sizeof dir, err, sizeof err)) {
    snprintf(line, sizeof line, "hv: rank %d: warning: flight recorder dump (%s) not written: %s\n", rank, reason, err);
    say(line);
    return;
  }
  snprintf(path, sizeof path, "%s/hv-flight.%s.rank%d.json", dir, hv__flight_job(), rank);
  snprintf(tmp, sizeof tmp, "%s/.hv-flight.%s.rank%d.%ld.tmp", dir, hv__flight_job(), rank, (long)getpid());
  size_t len = 0;
  char *doc = hv__flight_document(reason, detail, &len);
  if (!doc) {
    snprintf(line, sizeof line, "hv: rank %d: warning: flight recorder dump (%s) not written: out of memory\n", rank,
             reason);
    say(line);
    return;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  int failed = fd < 0 || write_all(fd, doc, len) != 0, saved = failed ? errno : 0;
  if (fd >= 0 && close(fd) != 0 && !failed) failed = 1, saved = errno;
  if (!failed && rename(tmp, path) != 0) failed = 1, saved = errno;
  if (failed) {
    if (fd >= 0) unlink(tmp);
    snprintf(line, sizeof line, "hv: rank %d: warning: flight recorder dump (%s) not written to %s: %s\n", rank, reason,
             path, strerror(saved));
  } else {
    snprintf(line, sizeof line, "hv: rank %d: flight recorder dump (%s) written to %s\n", rank, reason, path);
  }
  free(doc);
  say(line);
}

void hv__flight_dump_from_rounds(hv_comm_t *comm, const char *reason, const char *detail, const char *waiting,
                                 const char *error) {
  self_waiting = waiting, self_error = error;
  hv__flight_dump(comm, reason, detail);
  self_waiting = self_error = NULL;
}

static atomic_int stall_dumped;

void hv__flight_stall(hv_comm_t *comm, const char *detail, const char *waiting) {
  if (!comm->flight || atomic_exchange(&stall_dumped, 1)) return;
  hv__flight_dump_from_rounds(comm, "stall", detail, waiting, NULL);
}
