/* unit_flight_recorder.c: the flight recorder's ring (flight_recorder.c) without MPI
 * traffic: sequence numbers in submission order, wraparound keeping the newest
 * HV_FLIGHT_RECORDER_SIZE events, updates of an overwritten event skipped, ordered
 * calls numbered apart, the live phase and counts, pending events shown from their
 * handles; the table of names (each event's name exact while the ring shows it,
 * whatever the table evicted: entries reused, names with the same hash told apart,
 * names beyond the table copied, long names cut alike everywhere); and the JSON
 * strings of flight_dump.c (escapes, bytes that are not UTF-8). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flight_recorder.h"
#include "hv_internal.h"

/* A request as api.c makes it: its name hashed (or, to make collisions, given a hash). */
static struct hv_handle *handle_hashed(hv_comm_t *comm, const char *name, size_t count, uint64_t hash) {
  struct hv_handle *h = calloc(1, sizeof *h);
  h->comm = comm;
  h->name = strdup(name);
  h->name_hash = hash;
  h->meta.coll = HV__COLL_ALLREDUCE;
  h->meta.dtype = HV_FLOAT32;
  h->meta.count = count;
  h->t_submit = hv__coarse_now_us();
  return h;
}

static struct hv_handle *handle(hv_comm_t *comm, const char *name, size_t count) {
  return handle_hashed(comm, name, count, hv__hash_string(name));
}

static void release(struct hv_handle *h) {
  free(h->name);
  free(h);
}

/* Submission and completion as api.c and handle.c do them, under comm->mutex. */
static void submit(hv_comm_t *comm, struct hv_handle *h) {
  pthread_mutex_lock(&comm->mutex);
  CHECK(hv__map_insert_new_hashed(&comm->names_in_flight, h->name, h->name_hash, h) == 0, "%s submitted", h->name);
  hv__fr_submit(comm, h);
  pthread_mutex_unlock(&comm->mutex);
}

static void complete(hv_comm_t *comm, struct hv_handle *h, hv_result_t result, const char *error) {
  pthread_mutex_lock(&comm->mutex);
  hv__map_remove_hashed(&comm->names_in_flight, h->name, h->name_hash);
  hv__fr_finish(comm, h, result, error, hv__coarse_now_us(), 0);
  pthread_mutex_unlock(&comm->mutex);
}

/* What a document shows. */
static hv__fr_view_t *views;
static size_t nviews;

static void snapshot(hv_comm_t *comm) {
  free(views);
  views = calloc(comm->flight->size, sizeof *views);
  pthread_mutex_lock(&comm->mutex);
  nviews = hv__fr_events(comm, views);
  pthread_mutex_unlock(&comm->mutex);
}

static const hv__fr_view_t *shown(uint64_t pos) {
  for (size_t i = 0; i < nviews; i++)
    if (views[i].e.pos == pos) return &views[i];
  return NULL;
}

/* The name of the event shown at pos; a missing event fails the check and reads as a
 * name no comparison accepts (instead of a NULL dereference). */
static const char *shown_name(uint64_t pos) {
  const hv__fr_view_t *v = shown(pos);
  CHECK(v != NULL, "event %llu is shown", (unsigned long long)pos);
  return v ? v->name : "<not shown>";
}

static void expect_json(const char *in, const char *want) {
  hv__json_t j = {0};
  hv__json_string(&j, in);
  CHECK(!j.oom && strcmp(j.data, want) == 0, "json of %s: got %s, want %s", want, j.data, want);
  free(j.data);
}

static hv_comm_t *new_comm(size_t size) {
  hv_comm_t *comm = calloc(1, sizeof *comm);
  pthread_mutex_init(&comm->mutex, NULL);
  comm->size = 4;
  comm->config.flight_recorder_size = size;
  CHECK(hv__fr_create(comm) == 0 && comm->flight, "recorder of %zu events", size);
  return comm;
}

static void free_comm(hv_comm_t *comm) {
  hv__fr_free(comm);
  hv__map_free(&comm->names_in_flight);
  free(comm->exec);
  pthread_mutex_destroy(&comm->mutex);
  free(comm);
}

/* The ring, its states and counts (4 events). */
static void test_ring(void) {
  hv_comm_t *comm = calloc(1, sizeof *comm);
  comm->config.flight_recorder_size = 0;
  CHECK(hv__fr_create(comm) == 0 && comm->flight == NULL, "size 0 turns the recorder off");
  free(comm);
  comm = new_comm(4);
  hv__flight_t *f = comm->flight;
  CHECK(f->phase == HV__PHASE_USER, "a new recorder is in user code");

  /* 6 submissions into 4 slots: the first two are no longer shown. */
  struct hv_handle *h[6];
  char names[6][16];
  for (int i = 0; i < 6; i++) {
    snprintf(names[i], sizeof names[i], "t%d", i);
    h[i] = handle(comm, names[i], 10 + (size_t)i);
    submit(comm, h[i]);
    CHECK(h[i]->fr_pos == (uint64_t)i + 1, "t%d: position %llu", i, (unsigned long long)h[i]->fr_pos);
  }
  CHECK(f->submitted == 6 && f->next_pos == 6, "6 submitted");
  CHECK(f->phase == HV__PHASE_NEGOTIATING, "requests pending: negotiating");
  snapshot(comm);
  CHECK(nviews == 4, "4 pending events shown, got %zu", nviews);
  for (int i = 2; i < 6; i++) {
    const hv__fr_view_t *v = shown((uint64_t)i + 1);
    CHECK(v && v == &views[i - 2] && v->e.seq == (uint64_t)i + 1 && strcmp(v->name, names[i]) == 0 &&
              v->e.count == 10 + (uint64_t)i && hv__fr_bytes(&v->e, 4) == 4 * (10 + (uint64_t)i) &&
              v->e.state == HV__FR_SUBMITTED && !v->e.ordered && v->device == -1,
          "t%d shown pending, in order (seq %llu, name %s)", i, v ? (unsigned long long)v->e.seq : 0ull,
          v ? v->name : "-");
  }
  /* t0 is older than anything shown: its completion is counted, not recorded. */
  complete(comm, h[0], HV_SUCCESS, NULL);
  CHECK(f->ring[0].pos == 0, "an event the ring moved past is not written");
  CHECK(f->completed == 1 && f->last_completed_pos == 0, "t0 counted, but not kept as the last completed");
  snapshot(comm);
  CHECK(nviews == 4 && !shown(1), "t0 not shown");

  /* t2..t5 run through the execution list and finish; t3 fails. */
  comm->exec = calloc(4, sizeof *comm->exec);
  comm->exec_cap = 4;
  for (int i = 2; i < 6; i++) hv__exec_add(comm, h[i]);
  hv__fr_negotiated(comm);
  snapshot(comm);
  CHECK(shown(3)->e.state == HV__FR_NEGOTIATED && shown(3)->e.t_negotiated > 0, "negotiated");
  struct hv_handle *batch[] = {h[2], h[3], h[3], h[4]};
  hv__fr_started(comm, batch, 4, "ring");
  CHECK(f->running == 3 && f->phase == HV__PHASE_EXECUTING, "3 running (t3's two pieces count once)");
  snapshot(comm);
  CHECK(shown(4)->e.state == HV__FR_RUNNING && shown(4)->e.t_started > 0 &&
            strcmp(hv__fr_algo_names[shown(4)->e.algo], "ring") == 0,
        "t3 runs in ring");
  complete(comm, h[2], HV_SUCCESS, NULL);
  complete(comm, h[3], HV_ERR_MISMATCH, "tensor 't3' differs");
  snapshot(comm);
  CHECK(nviews == 4 && shown(3)->e.state == HV__FR_DONE && shown(3)->e.t_finished > 0 && shown(3)->e.t_negotiated > 0 &&
            strcmp(shown(3)->name, "t2") == 0 && shown(3)->e.seq == 3,
        "t2 done, its times and name kept");
  CHECK(shown(4)->e.state == HV__FR_FAILED && strcmp(shown(4)->error, "tensor 't3' differs") == 0 &&
            strcmp(shown(4)->name, "t3") == 0,
        "t3 failed with its error");
  CHECK(shown(5)->e.state == HV__FR_RUNNING && shown(6)->e.state == HV__FR_NEGOTIATED, "t4 running, t5 negotiated");
  for (size_t i = 0; i + 1 < nviews; i++) CHECK(views[i].e.pos < views[i + 1].e.pos, "oldest first");
  CHECK(f->last_completed_pos == 4, "t3 is the last completed");
  hv__fr_view_t last;
  pthread_mutex_lock(&comm->mutex);
  CHECK(hv__fr_last_completed(comm, &last) && last.e.pos == 4 && strcmp(last.name, "t3") == 0, "last completed: t3");
  pthread_mutex_unlock(&comm->mutex);
  complete(comm, h[4], HV_SUCCESS, NULL);
  complete(comm, h[5], HV_SUCCESS, NULL);
  complete(comm, h[1], HV_SUCCESS, NULL);
  CHECK(f->completed == 6 && f->running == 0 && f->phase == HV__PHASE_USER, "all completed: user code");

  /* Ordered calls: their own numbering, in the same ring. */
  uint64_t p1 = hv__fr_ordered_begin(comm, "hv_allreduce_cuda", HV__COLL_ALLREDUCE, 100, HV_FLOAT32, 0, 0x1234);
  hv__fr_ordered_finish(comm, p1, HV_SUCCESS, "nccl");
  uint64_t p2 = hv__fr_ordered_begin(comm, "hv_allgather_cuda", HV__COLL_ALLGATHER, 8, HV_INT32, 1, 0x1234);
  snapshot(comm);
  const hv__fr_view_t *o2 = shown(p2);
  CHECK(p1 == 7 && p2 == 8 && o2 && o2->e.ordered && o2->e.seq == 2 && o2->e.state == HV__FR_RUNNING &&
            o2->stream == 0x1234 && o2->device == 1 && strcmp(o2->name, "hv_allgather_cuda") == 0,
        "ordered calls numbered 1, 2 (got seq %llu)", o2 ? (unsigned long long)o2->e.seq : 0ull);
  hv__fr_ordered_finish(comm, p2, HV_ERR_MISMATCH, "check");
  snapshot(comm);
  CHECK(shown(p2)->e.state == HV__FR_FAILED && shown(p1)->e.state == HV__FR_DONE &&
            strcmp(hv__fr_algo_names[shown(p1)->e.algo], "nccl") == 0 && f->phase == HV__PHASE_USER,
        "ordered calls done, failed");
  CHECK(shown(p1 - 1) && strcmp(shown(p1 - 1)->name, "t5") == 0 && nviews == 4, "t4, t5 and the two ordered calls shown");

  /* A name longer than the copies is cut, alike pending and completed. */
  char longname[300];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  struct hv_handle *hl = handle(comm, longname, 1);
  submit(comm, hl);
  uint64_t pl = hl->fr_pos;
  snapshot(comm);
  CHECK(strlen(shown_name(pl)) == HV__FR_NAME_LEN - 1 && strncmp(shown_name(pl), longname, HV__FR_NAME_LEN - 1) == 0,
        "a long pending name is cut");
  complete(comm, hl, HV_SUCCESS, NULL);
  snapshot(comm);
  CHECK(strlen(shown_name(pl)) == HV__FR_NAME_LEN - 1 && strncmp(shown_name(pl), longname, HV__FR_NAME_LEN - 1) == 0,
        "a long completed name is cut the same");

  for (int i = 0; i < 6; i++) release(h[i]);
  release(hl);
  free_comm(comm);
}

/* Names, hashes and the table's eviction: each event the ring shows has its own name. */
#define RING 64
static char expected[RING][HV__FR_NAME_LEN]; /* by slot: the name of the newest event written there */

static void expect_names(hv_comm_t *comm, const char *what) {
  snapshot(comm);
  int bad = 0;
  for (size_t i = 0; i < nviews && !bad; i++) {
    const hv__fr_view_t *v = &views[i];
    if (strcmp(v->name, expected[(v->e.pos - 1) % RING]) != 0) {
      CHECK(0, "%s: event %llu shows '%s', not '%s'", what, (unsigned long long)v->e.pos, v->name,
            expected[(v->e.pos - 1) % RING]);
      bad = 1;
    }
  }
}

static void record(struct hv_handle *h) { snprintf(expected[h->fr_slot], sizeof expected[0], "%s", h->name); }

static void test_names(void) {
  hv_comm_t *comm = new_comm(RING);
  hv__flight_t *f = comm->flight;
  CHECK(f->names_mask + 1 == RING, "a table of %d names", RING);

  /* The same names step after step: one entry each, no copies. */
  for (int step = 0; step < 5; step++) {
    struct hv_handle *h[20];
    for (int i = 0; i < 20; i++) {
      char name[32];
      snprintf(name, sizeof name, "grad/layer%d", i);
      h[i] = handle(comm, name, 1);
      submit(comm, h[i]);
      record(h[i]);
    }
    for (int i = 19; i >= 0; i--) complete(comm, h[i], HV_SUCCESS, NULL), release(h[i]);
    expect_names(comm, "repeated names");
  }
  size_t used = 0;
  for (size_t i = 0; i <= f->names_mask; i++) used += f->names[i].last_pos != 0;
  CHECK(used == 20 && f->name_copies == 0, "20 names, 20 entries (got %zu), no copies (got %llu)", used,
        (unsigned long long)f->name_copies);

  /* Two names with the same hash and length: never confused, either way round. */
  struct hv_handle *a = handle_hashed(comm, "alpha", 1, 77), *b = handle_hashed(comm, "bravo", 1, 77);
  submit(comm, a), record(a);
  submit(comm, b), record(b);
  complete(comm, b, HV_SUCCESS, NULL);
  complete(comm, a, HV_SUCCESS, NULL);
  expect_names(comm, "same hash");
  struct hv_handle *a2 = handle_hashed(comm, "alpha", 1, 77);
  submit(comm, a2), record(a2);
  complete(comm, a2, HV_SUCCESS, NULL);
  expect_names(comm, "same hash, again");
  CHECK(f->name_copies == 0, "two names of one hash: two entries");
  release(a), release(b), release(a2);

  /* Names about the length kept in an entry, of one hash: 14 bytes (inline), 15 and
   * 16 (kept apart), the one a prefix of the other. */
  const char *edge[] = {"abcdefghijklmn", "abcdefghijklmno", "abcdefghijklmnop", "abcdefghijklmnoq"};
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < 4; i++) {
      struct hv_handle *h = handle_hashed(comm, edge[i], 1, 5);
      submit(comm, h), record(h);
      complete(comm, h, HV_SUCCESS, NULL);
      release(h);
    }
  expect_names(comm, "names about the inline length");
  CHECK(f->name_copies == 0, "4 names of one hash: 4 entries");

  /* Many names of one hash, alternating: the index points at one of them at a time. */
  for (int i = 0; i < 3 * HV__FR_PROBE; i++) {
    char name[32];
    snprintf(name, sizeof name, "same/%d", i % 3 ? i : 0);
    struct hv_handle *h = handle_hashed(comm, name, 1, 1000);
    submit(comm, h), record(h);
    complete(comm, h, HV_SUCCESS, NULL);
    release(h);
  }
  expect_names(comm, "one hash, many names");

  /* Long names: the same first 95 bytes and different hashes, and a long name with a
   * short one's hash. */
  char l1[200], l2[200];
  memset(l1, 'y', sizeof l1 - 1), l1[sizeof l1 - 1] = '\0';
  memcpy(l2, l1, sizeof l2), l2[150] = 'z';
  struct hv_handle *x1 = handle(comm, l1, 1), *x2 = handle(comm, l2, 1), *x3 = handle_hashed(comm, l1, 1, 77);
  /* (x3 is another request of x1's name: it waits for x1 to complete, as api.c has it) */
  submit(comm, x1), record(x1);
  submit(comm, x2), record(x2);
  const uint64_t p1 = x1->fr_pos, p2 = x2->fr_pos;
  complete(comm, x2, HV_SUCCESS, NULL);
  complete(comm, x1, HV_SUCCESS, NULL);
  submit(comm, x3), record(x3);
  const uint64_t p3 = x3->fr_pos;
  complete(comm, x3, HV_SUCCESS, NULL);
  expect_names(comm, "long names");
  CHECK(strlen(shown_name(p1)) == HV__FR_NAME_LEN - 1 && strcmp(shown_name(p1), shown_name(p2)) == 0 &&
            strcmp(shown_name(p1), shown_name(p3)) == 0,
        "long names cut alike");
  release(x1), release(x2), release(x3);

  /* Eviction: thousands of distinct names through few hashes, some requests left
   * pending while others complete, the ring wrapping many times; after every
   * completion each event shown must have its own name. */
  struct hv_handle *live[8] = {0};
  unsigned seed = 12345;
  for (int i = 0; i < 4000; i++) {
    char name[64];
    seed = seed * 1103515245u + 12345u;
    if (seed % 5 == 0) snprintf(name, sizeof name, "recurring/%u", (seed >> 8) % 40);
    else snprintf(name, sizeof name, "once/%d/%s", i, i % 7 ? "" : "a-much-longer-name-of-some-tensor-in-a-deep-model");
    if (hv__map_get(&comm->names_in_flight, name)) snprintf(name, sizeof name, "again/%d", i);
    int k = (int)((seed >> 16) % 8);
    if (live[k]) {
      complete(comm, live[k], HV_SUCCESS, NULL);
      release(live[k]);
      live[k] = NULL;
      if (i % 3 == 0) expect_names(comm, "eviction");
    }
    struct hv_handle *h = handle_hashed(comm, name, 1, (seed >> 20) % 6 * 9); /* 6 hashes, 9 apart */
    if (strncmp(name, "recurring/", 10) == 0) h->name_hash = hv__hash_string(name);
    submit(comm, h), record(h);
    live[k] = h;
  }
  for (int k = 0; k < 8; k++)
    if (live[k]) complete(comm, live[k], HV_SUCCESS, NULL), release(live[k]);
  expect_names(comm, "eviction, all completed");
  CHECK(nviews == RING, "the ring full: %zu events", nviews);
  CHECK(f->name_copies > 0, "names beyond the table's room were copied");
  free_comm(comm);
}

/* More names the ring shows than the table has entries: the rest copied. */
static void test_full_table(void) {
  hv_comm_t *comm = new_comm(2 * HV__FR_INTERN_MAX);
  hv__flight_t *f = comm->flight;
  CHECK(f->names_mask + 1 == HV__FR_INTERN_MAX, "the table has %d entries", HV__FR_INTERN_MAX);
  char (*names)[32] = calloc(2 * HV__FR_INTERN_MAX, sizeof *names);
  for (int i = 0; i < 2 * HV__FR_INTERN_MAX; i++) {
    snprintf(names[i], sizeof names[i], i % 2 ? "n%d" : "a-longer-name/%d", i);
    struct hv_handle *h = handle(comm, names[i], 1);
    submit(comm, h);
    complete(comm, h, HV_SUCCESS, NULL);
    release(h);
  }
  snapshot(comm);
  int bad = 0;
  for (size_t i = 0; i < nviews && !bad; i++) bad = strcmp(views[i].name, names[views[i].e.pos - 1]) != 0;
  CHECK(nviews == 2 * HV__FR_INTERN_MAX && !bad, "every name kept");
  CHECK(f->name_copies == HV__FR_INTERN_MAX, "the names beyond the table copied (%llu)", (unsigned long long)f->name_copies);
  free(names);
  free_comm(comm);
}

int main(void) {
  test_ring();
  test_names();
  test_full_table();

  CHECK(hv__fr_peer_of("point-to-point transfers from rank 2 on host n1") == 2, "peer from a wait");
  CHECK(hv__fr_peer_of("negotiation (gather of sizes)") == -1, "no peer");

  expect_json("plain", "\"plain\"");
  expect_json("q\"b\\n\nt\tc\x01", "\"q\\\"b\\\\n\\nt\\tc\\u0001\"");
  expect_json("\xc3\xa9", "\"\xc3\xa9\"");
  expect_json("cut\xc3", "\"cut\\u00c3\"");
  expect_json("\xff\xed\xa0\x80", "\"\\u00ff\\u00ed\\u00a0\\u0080\"");
  free(views);
  return check_failures ? 1 : 0;
}
