/* doctor_load.c: reads flight-recorder documents (FLIGHT_RECORDER.md, version 1) into
 * the model of doctor.h, and refuses what it cannot trust with one line naming the file
 * and the cause: an empty directory, a truncated or unparsable dump, a document of
 * another format or version, dumps of different jobs or versions mixed, a field missing
 * or of the wrong type (named by its path, e.g. comms[0].events[3].count), a rank out of
 * range or given twice. Parsing is jansson's; this file only checks and copies.
 * Unknown fields are ignored, so that the engine may add some without breaking readers. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor.h"

#if HVRUN_HAVE_JANSSON
#include <jansson.h>
#endif

void doctor_model_init(doctor_model_t *m) {
  memset(m, 0, sizeof *m);
  m->version = -1;
}

int doctor_model_reserve(doctor_model_t *m, int world_size, char *err, size_t errlen) {
  if (world_size <= m->world_size) return 0;
  if (world_size > 1000000) {
    snprintf(err, errlen, "world size %d is not plausible", world_size);
    return -1;
  }
  doctor_rank_t *r = realloc(m->ranks, (size_t)world_size * sizeof *r);
  if (!r) {
    snprintf(err, errlen, "out of memory for %d ranks", world_size);
    return -1;
  }
  memset(r + m->world_size, 0, (size_t)(world_size - m->world_size) * sizeof *r);
  for (int w = m->world_size; w < world_size; w++) r[w].proc = DOCTOR_PROC_NONE;
  m->ranks = r;
  m->world_size = world_size;
  return 0;
}

static void event_free(doctor_event_t *e) {
  free(e->name), free(e->coll), free(e->dtype), free(e->algo), free(e->state), free(e->error);
}

static void comm_free(doctor_comm_t *c) {
  free(c->phase), free(c->waiting), free(c->error);
  for (int i = 0; i < c->npending; i++) free(c->pending[i].name), free(c->pending[i].coll);
  free(c->pending);
  if (c->last_completed) event_free(c->last_completed);
  free(c->last_completed);
  for (int i = 0; i < c->ncwait; i++) {
    free(c->cwait[i].name), free(c->cwait[i].coll);
    free(c->cwait[i].submitted_by), free(c->cwait[i].missing);
  }
  free(c->cwait);
  for (int i = 0; i < c->nevents; i++) event_free(&c->events[i]);
  free(c->events);
}

static void rank_clear(doctor_rank_t *r) {
  free(r->job), free(r->host), free(r->hv_version), free(r->reason), free(r->reason_detail);
  for (int i = 0; i < r->ncomms; i++) comm_free(&r->comms[i]);
  free(r->comms);
  r->job = r->host = r->hv_version = r->reason = r->reason_detail = NULL;
  r->comms = NULL;
  r->ncomms = 0;
  r->present = 0;
}

void doctor_model_free(doctor_model_t *m) {
  for (int w = 0; w < m->world_size; w++) rank_clear(&m->ranks[w]);
  free(m->ranks);
  free(m->job);
  memset(m, 0, sizeof *m);
}

#if HVRUN_HAVE_JANSSON

/* The reading context: where a bad field is reported. */
typedef struct {
  const char *source;
  char *err;
  size_t errlen;
  int failed;
} rd_t;

static void rd_fail(rd_t *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rd_fail(rd_t *rd, const char *fmt, ...) {
  if (rd->failed) return;
  rd->failed = 1;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(rd->err, rd->errlen, "%s: %s", rd->source, msg);
}

static const char *json_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  case JSON_NULL: return "null";
  }
  return "something else";
}

/* Field `key` of obj; NULL (and a failure unless optional) when absent. */
static json_t *rd_field(rd_t *rd, json_t *obj, const char *path, const char *key, int optional) {
  json_t *v = json_object_get(obj, key);
  if (!v && !optional) rd_fail(rd, "field '%s%s' is missing", path, key);
  return v;
}

static char *rd_str(rd_t *rd, json_t *obj, const char *path, const char *key, int optional) {
  json_t *v = rd_field(rd, obj, path, key, optional);
  if (!v) return strdup("");
  if (!json_is_string(v)) {
    rd_fail(rd, "field '%s%s' is %s, expected a string", path, key, json_kind(v));
    return strdup("");
  }
  return strdup(json_string_value(v));
}

static long long rd_int(rd_t *rd, json_t *obj, const char *path, const char *key, int optional, long long dflt) {
  json_t *v = rd_field(rd, obj, path, key, optional);
  if (!v) return dflt;
  if (json_is_integer(v)) return json_integer_value(v);
  if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) && fabs(json_real_value(v)) < 9e15)
    return (long long)json_real_value(v);
  rd_fail(rd, "field '%s%s' is %s, expected a whole number", path, key, json_kind(v));
  return dflt;
}

/* A time (or any number); NAN for null when nullable. */
static double rd_num(rd_t *rd, json_t *obj, const char *path, const char *key, int optional, int nullable) {
  json_t *v = rd_field(rd, obj, path, key, optional);
  if (!v || (nullable && json_is_null(v))) return NAN;
  if (!json_is_number(v)) {
    rd_fail(rd, "field '%s%s' is %s, expected a number%s", path, key, json_kind(v), nullable ? " or null" : "");
    return NAN;
  }
  return json_number_value(v);
}

static int rd_bool(rd_t *rd, json_t *obj, const char *path, const char *key, int optional) {
  json_t *v = rd_field(rd, obj, path, key, optional);
  if (!v) return 0;
  if (!json_is_boolean(v)) {
    rd_fail(rd, "field '%s%s' is %s, expected true or false", path, key, json_kind(v));
    return 0;
  }
  return json_is_true(v);
}

/* An array field; its size in *n (0 when absent and optional). */
static json_t *rd_array(rd_t *rd, json_t *obj, const char *path, const char *key, int optional, size_t *n) {
  json_t *v = rd_field(rd, obj, path, key, optional);
  *n = 0;
  if (!v || (optional && json_is_null(v))) return NULL;
  if (!json_is_array(v)) {
    rd_fail(rd, "field '%s%s' is %s, expected an array", path, key, json_kind(v));
    return NULL;
  }
  *n = json_array_size(v);
  return v;
}

static int rd_is_object(rd_t *rd, json_t *v, const char *path) {
  if (json_is_object(v)) return 1;
  rd_fail(rd, "'%s' is %s, expected an object", path, json_kind(v));
  return 0;
}

static void rd_event(rd_t *rd, json_t *o, const char *path, doctor_event_t *e) {
  memset(e, 0, sizeof *e);
  e->t_submit = e->t_negotiated = e->t_started = e->t_finished = NAN;
  if (!rd_is_object(rd, o, path)) {
    e->name = strdup(""), e->coll = strdup(""), e->dtype = strdup(""), e->algo = strdup("");
    e->state = strdup(""), e->error = strdup("");
    return;
  }
  char p[128];
  snprintf(p, sizeof p, "%s.", path);
  e->seq = rd_int(rd, o, p, "seq", 0, -1);
  e->name = rd_str(rd, o, p, "name", 0);
  e->coll = rd_str(rd, o, p, "coll", 0);
  e->dtype = rd_str(rd, o, p, "dtype", 1);
  e->count = rd_int(rd, o, p, "count", 1, -1);
  e->bytes = rd_int(rd, o, p, "bytes", 1, -1);
  e->algo = rd_str(rd, o, p, "algo", 1);
  e->ordered = rd_bool(rd, o, p, "ordered", 1);
  e->device = (int)rd_int(rd, o, p, "device", 1, -1);
  e->t_submit = rd_num(rd, o, p, "t_submit", 0, 0);
  e->t_negotiated = rd_num(rd, o, p, "t_negotiated", 1, 1);
  e->t_started = rd_num(rd, o, p, "t_started", 1, 1);
  e->t_finished = rd_num(rd, o, p, "t_finished", 1, 1);
  e->state = rd_str(rd, o, p, "state", 0);
  e->error = rd_str(rd, o, p, "error", 1);
  static const char *states[] = {"submitted", "negotiated", "running", "done", "failed"};
  int known = 0;
  for (size_t i = 0; i < sizeof states / sizeof *states; i++) known |= !strcmp(e->state, states[i]);
  if (!known && !rd->failed)
    rd_fail(rd, "field '%sstate' is '%s', expected submitted, negotiated, running, done or failed", p, e->state);
}

static int *rd_rank_list(rd_t *rd, json_t *o, const char *path, const char *key, int *n) {
  size_t len;
  json_t *a = rd_array(rd, o, path, key, 0, &len);
  int *out = calloc(len ? len : 1, sizeof *out);
  *n = 0;
  for (size_t i = 0; a && out && i < len; i++) {
    json_t *v = json_array_get(a, i);
    if (!json_is_integer(v)) {
      rd_fail(rd, "'%s%s[%zu]' is %s, expected a rank", path, key, i, json_kind(v));
      break;
    }
    out[(*n)++] = (int)json_integer_value(v);
  }
  return out;
}

static void rd_comm(rd_t *rd, json_t *o, int ci, doctor_comm_t *c) {
  char p[96], q[128];
  snprintf(p, sizeof p, "comms[%d]", ci);
  memset(c, 0, sizeof *c);
  c->waiting_peer = -1;
  if (!rd_is_object(rd, o, p)) {
    c->phase = strdup(""), c->waiting = strdup(""), c->error = strdup("");
    return;
  }
  snprintf(p, sizeof p, "comms[%d].", ci);
  c->index = (int)rd_int(rd, o, p, "index", 0, ci);
  c->rank = (int)rd_int(rd, o, p, "rank", 0, -1);
  c->size = (int)rd_int(rd, o, p, "size", 0, 0);
  c->phase = rd_str(rd, o, p, "phase", 0);
  c->since = rd_num(rd, o, p, "since", 0, 0);
  c->waiting = rd_str(rd, o, p, "waiting", 0);
  c->waiting_peer = (int)rd_int(rd, o, p, "waiting_peer", 0, -1);
  c->error = rd_str(rd, o, p, "error", 0);
  c->submitted = rd_int(rd, o, p, "submitted", 0, 0);
  c->completed = rd_int(rd, o, p, "completed", 0, 0);
  if (!rd->failed && (c->size < 1 || c->rank < 0 || c->rank >= c->size))
    rd_fail(rd, "'%srank' %d is outside the communicator's size %d", p, c->rank, c->size);
  if (!rd->failed && (c->waiting_peer >= c->size || c->waiting_peer < -1))
    rd_fail(rd, "'%swaiting_peer' %d is outside the communicator's size %d", p, c->waiting_peer, c->size);
  static const char *phases[] = {"user", "negotiating", "executing", "stopped"};
  int known = 0;
  for (size_t i = 0; i < sizeof phases / sizeof *phases; i++) known |= !strcmp(c->phase, phases[i]);
  if (!known && !rd->failed)
    rd_fail(rd, "field '%sphase' is '%s', expected user, negotiating, executing or stopped", p, c->phase);

  size_t n;
  json_t *a = rd_array(rd, o, p, "pending", 0, &n);
  c->pending = calloc(n ? n : 1, sizeof *c->pending);
  for (size_t i = 0; a && c->pending && i < n && !rd->failed; i++) {
    json_t *v = json_array_get(a, i);
    snprintf(q, sizeof q, "%spending[%zu]", p, i);
    if (!rd_is_object(rd, v, q)) break;
    snprintf(q, sizeof q, "%spending[%zu].", p, i);
    doctor_pending_t *pe = &c->pending[c->npending++];
    pe->name = rd_str(rd, v, q, "name", 0);
    pe->coll = rd_str(rd, v, q, "coll", 0);
    pe->t_submit = rd_num(rd, v, q, "t_submit", 0, 0);
  }

  json_t *lc = rd_field(rd, o, p, "last_completed", 0);
  if (lc && !json_is_null(lc)) {
    c->last_completed = malloc(sizeof *c->last_completed);
    snprintf(q, sizeof q, "%slast_completed", p);
    if (c->last_completed) rd_event(rd, lc, q, c->last_completed);
  }

  json_t *co = rd_field(rd, o, p, "coordinator", 1);
  if (co && !json_is_null(co)) {
    snprintf(q, sizeof q, "%scoordinator", p);
    if (rd_is_object(rd, co, q)) {
      c->has_coordinator = 1;
      snprintf(q, sizeof q, "%scoordinator.", p);
      a = rd_array(rd, co, q, "waiting", 0, &n);
      c->cwait = calloc(n ? n : 1, sizeof *c->cwait);
      for (size_t i = 0; a && c->cwait && i < n && !rd->failed; i++) {
        json_t *v = json_array_get(a, i);
        char r[160];
        snprintf(r, sizeof r, "%scoordinator.waiting[%zu]", p, i);
        if (!rd_is_object(rd, v, r)) break;
        snprintf(r, sizeof r, "%scoordinator.waiting[%zu].", p, i);
        doctor_cwait_t *w = &c->cwait[c->ncwait++];
        w->name = rd_str(rd, v, r, "name", 0);
        w->coll = rd_str(rd, v, r, "coll", 1);
        w->submitted_by = rd_rank_list(rd, v, r, "submitted_by", &w->nsubmitted);
        w->missing = rd_rank_list(rd, v, r, "missing", &w->nmissing);
        w->first_seen = rd_num(rd, v, r, "first_seen", 1, 1);
        for (int k = 0; k < w->nsubmitted + w->nmissing && !rd->failed; k++) {
          int who = k < w->nsubmitted ? w->submitted_by[k] : w->missing[k - w->nsubmitted];
          if (who < 0 || who >= c->size)
            rd_fail(rd, "'%s%s' names rank %d, outside the communicator's size %d", r,
                    k < w->nsubmitted ? "submitted_by" : "missing", who, c->size);
        }
      }
    }
  }

  a = rd_array(rd, o, p, "events", 0, &n);
  c->events = calloc(n ? n : 1, sizeof *c->events);
  for (size_t i = 0; a && c->events && i < n && !rd->failed; i++) {
    snprintf(q, sizeof q, "%sevents[%zu]", p, i);
    rd_event(rd, json_array_get(a, i), q, &c->events[c->nevents++]);
  }
  if ((!c->pending || !c->events) && !rd->failed) rd_fail(rd, "out of memory");
}

/* The one line for a jansson error: truncated (ends early) or not JSON at all. */
static void parse_error(const json_error_t *je, const char *source, size_t len, char *err, size_t errlen) {
  if (len == 0)
    snprintf(err, errlen, "%s is empty (0 bytes): not a flight-recorder dump (a dump is written whole and "
                          "renamed; the disk may have filled)", source);
  else if (json_error_code(je) == json_error_premature_end_of_input)
    snprintf(err, errlen, "%s is truncated: the JSON document ends early after %zu bytes (the disk may have "
                          "filled while it was written)", source, len);
  else
    snprintf(err, errlen, "%s is not a valid JSON document (line %d, column %d: %s)", source, je->line,
             je->column, je->text);
}

int doctor_load_doc(doctor_model_t *m, const char *text, size_t len, const char *source, char *err, size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    parse_error(&je, source, len, err, errlen);
    return -1;
  }
  rd_t rd = {source, err, errlen, 0};
  int rc = -1;
  if (!json_is_object(root)) {
    rd_fail(&rd, "the document is %s, expected an object (a flight-recorder dump)", json_kind(root));
    goto out;
  }
  json_t *fmt = json_object_get(root, "format");
  if (!json_is_string(fmt) || strcmp(json_string_value(fmt), DOCTOR_FORMAT) != 0) {
    rd_fail(&rd, "not a flight-recorder document ('format' is %s%s%s, expected \"" DOCTOR_FORMAT "\")",
            fmt && json_is_string(fmt) ? "\"" : "", fmt ? (json_is_string(fmt) ? json_string_value(fmt) : json_kind(fmt)) : "missing",
            fmt && json_is_string(fmt) ? "\"" : "");
    goto out;
  }
  int version = (int)rd_int(&rd, root, "", "version", 0, -1);
  char *job = rd_str(&rd, root, "", "job", 0);
  if (rd.failed) {
    free(job);
    goto out;
  }
  /* Mixed inputs first: they explain a version this hvrun does not read. */
  if (m->version >= 0 && version != m->version) {
    snprintf(err, errlen, "dumps of different versions of the format mixed: %s is version %d, %s is version %d "
                          "(analyze one job's dumps at a time)", m->first_source, m->version, source, version);
    free(job);
    goto out;
  }
  if (m->job && strcmp(job, m->job) != 0) {
    snprintf(err, errlen, "dumps of different jobs mixed: %s is of job '%s', %s of job '%s' (analyze one job at "
                          "a time: --job ID picks one, or move the other's dumps away)", m->first_source, m->job, source, job);
    free(job);
    goto out;
  }
  if (version != DOCTOR_VERSION) {
    snprintf(err, errlen, "%s: version %d of the flight-recorder format; this hvrun reads version %d (use the "
                          "hvrun of the hv that wrote it)", source, version, DOCTOR_VERSION);
    free(job);
    goto out;
  }
  int w = (int)rd_int(&rd, root, "", "world_rank", 0, -1);
  int size = (int)rd_int(&rd, root, "", "world_size", 0, 0);
  if (!rd.failed && (size < 1 || w < 0 || w >= size))
    rd_fail(&rd, "world_rank %d is outside world_size %d", w, size);
  if (rd.failed) {
    free(job);
    goto out;
  }
  if (m->doc_world_size > 0 && size != m->doc_world_size) {
    snprintf(err, errlen, "%s says world_size %d, %s says %d: not the same job", source, size, m->first_source,
             m->doc_world_size);
    free(job);
    goto out;
  }
  if (doctor_model_reserve(m, size, err, errlen) != 0) {
    free(job);
    goto out;
  }
  doctor_rank_t *r = &m->ranks[w];
  if (r->present) {
    snprintf(err, errlen, "two documents of rank %d: %s and %s (one job's dumps only, one per rank)", w, r->source,
             source);
    free(job);
    goto out;
  }
  r->job = job;
  r->hv_version = rd_str(&rd, root, "", "hv_version", 0);
  r->host = rd_str(&rd, root, "", "host", 0);
  r->pid = rd_int(&rd, root, "", "pid", 0, 0);
  r->reason = rd_str(&rd, root, "", "reason", 0);
  r->reason_detail = rd_str(&rd, root, "", "reason_detail", 0);
  r->time = rd_num(&rd, root, "", "time", 0, 0);
  size_t n;
  json_t *a = rd_array(&rd, root, "", "comms", 0, &n);
  r->comms = calloc(n ? n : 1, sizeof *r->comms);
  for (size_t i = 0; a && r->comms && i < n && !rd.failed; i++) rd_comm(&rd, json_array_get(a, i), (int)i, &r->comms[r->ncomms++]);
  if (!rd.failed && r->ncomms > 0 && r->comms[0].index == 0 && r->comms[0].size != size)
    rd_fail(&rd, "comms[0] (the world) has size %d, but world_size is %d", r->comms[0].size, size);
  if (!rd.failed && r->ncomms > 0 && r->comms[0].index == 0 && r->comms[0].rank != w)
    rd_fail(&rd, "comms[0] (the world) has rank %d, but world_rank is %d", r->comms[0].rank, w);
  if (rd.failed) {
    rank_clear(r);
    goto out;
  }
  r->present = 1;
  r->proc = DOCTOR_PROC_ANSWERED;
  snprintf(r->source, sizeof r->source, "%s", source);
  if (!m->job) {
    m->job = strdup(job);
    m->version = version;
    m->doc_world_size = size;
    snprintf(m->first_source, sizeof m->first_source, "%s", source);
  }
  m->ndocs++;
  rc = 0;
out:
  json_decref(root);
  return rc;
}

int doctor_load_raw_line(doctor_model_t *m, const char *line, size_t len, const char *source, char *err,
                         size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb(line, len, 0, &je);
  if (!root) {
    parse_error(&je, source, len, err, errlen);
    return -1;
  }
  json_t *fmt = json_object_get(root, "format");
  if (json_is_string(fmt) && !strcmp(json_string_value(fmt), DOCTOR_PROBE_FORMAT)) {
    /* {"format":"hv-status-probe","world_rank":W,"state":"gone|stopped|busy|no_socket","detail":"...",
     *  "host":"probing node","pid":P} */
    rd_t rd = {source, err, errlen, 0};
    int w = (int)rd_int(&rd, root, "", "world_rank", 0, -1);
    char *state = rd_str(&rd, root, "", "state", 0);
    char *detail = rd_str(&rd, root, "", "detail", 1);
    char *host = rd_str(&rd, root, "", "host", 1);
    long long pid = rd_int(&rd, root, "", "pid", 1, 0);
    int rc = -1;
    if (!rd.failed && (w < 0 || w > 1000000)) rd_fail(&rd, "world_rank %d is not plausible", w);
    if (!rd.failed && doctor_model_reserve(m, w + 1, err, errlen) == 0) {
      doctor_rank_t *r = &m->ranks[w];
      doctor_proc_t p = !strcmp(state, "gone")      ? DOCTOR_PROC_GONE
                        : !strcmp(state, "stopped") ? DOCTOR_PROC_STOPPED
                        : !strcmp(state, "busy")    ? DOCTOR_PROC_BUSY
                        : !strcmp(state, "no_socket") ? DOCTOR_PROC_NO_SOCKET
                                                      : DOCTOR_PROC_NONE;
      if (!r->present) {
        r->proc = p;
        snprintf(r->proc_detail, sizeof r->proc_detail, "%s", detail);
        snprintf(r->probe_host, sizeof r->probe_host, "%s", host);
        r->probe_pid = pid;
      }
      rc = 0;
    }
    free(state), free(detail), free(host);
    json_decref(root);
    return rc;
  }
  json_decref(root);
  return doctor_load_doc(m, line, len, source, err, errlen);
}

#else /* !HVRUN_HAVE_JANSSON */

#define NO_JANSSON "hvrun was built without jansson (libjansson-dev, tools/deps/launch.txt): --analyze and --status " \
                   "cannot read flight-recorder documents; install it and rebuild hvrun"

int doctor_load_doc(doctor_model_t *m, const char *text, size_t len, const char *source, char *err, size_t errlen) {
  (void)m, (void)text, (void)len, (void)source;
  snprintf(err, errlen, NO_JANSSON);
  return -1;
}

int doctor_load_raw_line(doctor_model_t *m, const char *line, size_t len, const char *source, char *err,
                         size_t errlen) {
  return doctor_load_doc(m, line, len, source, err, errlen);
}

#endif

/* dump names: hv-flight.<job>.rank<W>.json */
static int is_dump_name(const char *name, const char *job) {
  size_t n = strlen(name);
  if (strncmp(name, "hv-flight.", 10) != 0 || n < 16 || strcmp(name + n - 5, ".json") != 0) return 0;
  if (!job) return 1;
  size_t j = strlen(job);
  return n > 10 + j + 1 && !strncmp(name + 10, job, j) && !strncmp(name + 10 + j, ".rank", 5);
}

static int load_file(doctor_model_t *m, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
    len += got;
    if (len == cap) {
      char *b = cap > ((size_t)1 << 31) ? NULL : realloc(buf, cap *= 2);
      if (!b) free(buf);
      buf = b;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    snprintf(err, errlen, "cannot read %s: %s", path, buf ? "read error" : "out of memory (or over 2 GiB)");
    free(buf);
    return -1;
  }
  int rc = doctor_load_doc(m, buf, len, path, err, errlen);
  free(buf);
  return rc;
}

int doctor_load_dir(doctor_model_t *m, const char *dir, const char *job, char *err, size_t errlen) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    snprintf(err, errlen, "cannot read %s: %s", dir, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) return load_file(m, dir, err, errlen);
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort);
  if (n < 0) {
    snprintf(err, errlen, "cannot read the directory %s: %s", dir, strerror(errno));
    return -1;
  }
  int rc = 0, found = 0, others = 0;
  for (int i = 0; i < n; i++) {
    if (rc == 0 && is_dump_name(names[i]->d_name, job)) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
      found++;
      rc = load_file(m, path, err, errlen);
    } else if (is_dump_name(names[i]->d_name, NULL))
      others++;
    free(names[i]);
  }
  free(names);
  if (rc == 0 && !found) {
    if (job && others)
      snprintf(err, errlen, "no flight-recorder dump of job '%s' in %s (%d of other jobs)", job, dir, others);
    else
      snprintf(err, errlen, "no flight-recorder dumps (hv-flight.<job>.rank<W>.json) in %s: is it the "
                            "HV_FLIGHT_RECORDER directory of a job that wrote some?", dir);
    return -1;
  }
  return rc;
}
