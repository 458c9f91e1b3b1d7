/* unit_flight_recorder.c: the flight recorder's ring (flight_recorder.c) without MPI
 * traffic: sequence numbers in submission order, wraparound keeping the newest
 * HV_FLIGHT_RECORDER_SIZE events, updates of an overwritten event skipped, ordered
 * calls numbered apart, the live phase and counts; and the JSON strings of
 * flight_dump.c (escapes, bytes that are not UTF-8). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flight_recorder.h"
#include "hv_internal.h"

static struct hv_handle *handle(hv_comm_t *comm, const char *name, size_t count) {
  struct hv_handle *h = calloc(1, sizeof *h);
  h->comm = comm;
  h->name = (char *)name;
  h->meta.coll = HV__COLL_ALLREDUCE;
  h->meta.dtype = HV_FLOAT32;
  h->meta.count = count;
  h->t_submit = hv__coarse_now_us();
  return h;
}

static const hv__fr_event_t *slot_of(const hv__flight_t *f, uint64_t pos) {
  return &f->ring[(pos - 1) % f->size];
}

static void expect_json(const char *in, const char *want) {
  hv__json_t j = {0};
  hv__json_string(&j, in);
  CHECK(!j.oom && strcmp(j.data, want) == 0, "json of %s: got %s, want %s", want, j.data, want);
  free(j.data);
}

int main(void) {
  hv_comm_t *comm = calloc(1, sizeof *comm);
  pthread_mutex_init(&comm->mutex, NULL);
  comm->size = 4;
  comm->config.flight_recorder_size = 0;
  CHECK(hv__fr_create(comm) == 0 && comm->flight == NULL, "size 0 turns the recorder off");
  comm->config.flight_recorder_size = 4;
  CHECK(hv__fr_create(comm) == 0 && comm->flight, "recorder of 4 events");
  hv__flight_t *f = comm->flight;
  CHECK(f->phase == HV__PHASE_USER, "a new recorder is in user code");

  /* 6 submissions into 4 slots: the first two are overwritten. */
  struct hv_handle *h[6];
  char names[6][16];
  pthread_mutex_lock(&comm->mutex);
  for (int i = 0; i < 6; i++) {
    snprintf(names[i], sizeof names[i], "t%d", i);
    h[i] = handle(comm, names[i], 10 + (size_t)i);
    hv__fr_submit(comm, h[i]);
    CHECK(h[i]->fr_pos == (uint64_t)i + 1, "t%d: position %llu", i, (unsigned long long)h[i]->fr_pos);
  }
  pthread_mutex_unlock(&comm->mutex);
  CHECK(f->submitted == 6 && f->next_pos == 6, "6 submitted");
  CHECK(f->phase == HV__PHASE_NEGOTIATING, "requests pending: negotiating");
  for (int i = 2; i < 6; i++) {
    const hv__fr_event_t *e = slot_of(f, (uint64_t)i + 1);
    CHECK(e->pos == (uint64_t)i + 1 && e->seq == (uint64_t)i + 1 && strcmp(e->name, names[i]) == 0 &&
              e->count == 10 + (uint64_t)i && hv__fr_bytes(e, 4) == 4 * (10 + (uint64_t)i) && e->state == HV__FR_SUBMITTED,
          "t%d kept in its slot (seq %llu, name %s)", i, (unsigned long long)e->seq, e->name);
  }
  /* t0's slot holds t4: completing t0 must leave t4 alone. */
  pthread_mutex_lock(&comm->mutex);
  hv__fr_finish(comm, h[0], HV_SUCCESS, NULL, hv__coarse_now_us());
  pthread_mutex_unlock(&comm->mutex);
  CHECK(slot_of(f, 5)->state == HV__FR_SUBMITTED && slot_of(f, 5)->seq == 5, "an overwritten event's update is skipped");
  CHECK(f->completed == 1 && f->last_completed_pos == 0, "t0 counted, but not kept as the last completed");

  /* t2..t5 run through the execution list and finish; t3 fails. */
  comm->exec = calloc(4, sizeof *comm->exec);
  comm->exec_cap = 4;
  for (int i = 2; i < 6; i++) hv__exec_add(comm, h[i]);
  hv__fr_negotiated(comm);
  CHECK(slot_of(f, 3)->state == HV__FR_NEGOTIATED && slot_of(f, 3)->t_negotiated > 0, "negotiated");
  struct hv_handle *batch[] = {h[2], h[3], h[3], h[4]};
  hv__fr_started(comm, batch, 4, "ring");
  CHECK(f->running == 3 && f->phase == HV__PHASE_EXECUTING, "3 running (t3's two pieces count once)");
  CHECK(slot_of(f, 4)->state == HV__FR_RUNNING && strcmp(hv__fr_algo_names[slot_of(f, 4)->algo], "ring") == 0, "t3 runs in ring");
  pthread_mutex_lock(&comm->mutex);
  hv__fr_finish(comm, h[2], HV_SUCCESS, NULL, hv__coarse_now_us());
  hv__fr_finish(comm, h[3], HV_ERR_MISMATCH, "tensor 't3' differs", hv__coarse_now_us());
  pthread_mutex_unlock(&comm->mutex);
  CHECK(slot_of(f, 3)->state == HV__FR_DONE && slot_of(f, 3)->t_finished > 0, "t2 done");
  CHECK(slot_of(f, 4)->state == HV__FR_FAILED && strcmp(slot_of(f, 4)->error, "tensor 't3' differs") == 0,
        "t3 failed with its error");
  CHECK(f->last_completed_pos == 4, "t3 is the last completed");
  pthread_mutex_lock(&comm->mutex);
  hv__fr_finish(comm, h[4], HV_SUCCESS, NULL, hv__coarse_now_us());
  hv__fr_finish(comm, h[5], HV_SUCCESS, NULL, hv__coarse_now_us());
  hv__fr_finish(comm, h[1], HV_SUCCESS, NULL, hv__coarse_now_us());
  pthread_mutex_unlock(&comm->mutex);
  CHECK(f->completed == 6 && f->running == 0 && f->phase == HV__PHASE_USER, "all completed: user code");

  /* Ordered calls: their own numbering, in the same ring. */
  uint64_t p1 = hv__fr_ordered_begin(comm, "hv_allreduce_cuda", HV__COLL_ALLREDUCE, 100, HV_FLOAT32, 0, 0x1234);
  hv__fr_ordered_finish(comm, p1, HV_SUCCESS, "nccl");
  uint64_t p2 = hv__fr_ordered_begin(comm, "hv_allgather_cuda", HV__COLL_ALLGATHER, 8, HV_INT32, 0, 0x1234);
  const hv__fr_event_t *o2 = slot_of(f, p2);
  CHECK(p1 == 7 && p2 == 8 && o2->ordered && o2->seq == 2 && o2->state == HV__FR_RUNNING && o2->stream == 0x1234,
        "ordered calls numbered 1, 2 (got seq %llu)", (unsigned long long)o2->seq);
  hv__fr_ordered_finish(comm, p2, HV_SUCCESS, "nccl");
  CHECK(o2->state == HV__FR_DONE && f->phase == HV__PHASE_USER, "ordered call done");

  /* A name longer than the slot's copy is cut, terminated. */
  char longname[300];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  struct hv_handle *hl = handle(comm, longname, 1);
  pthread_mutex_lock(&comm->mutex);
  hv__fr_submit(comm, hl);
  pthread_mutex_unlock(&comm->mutex);
  CHECK(strlen(slot_of(f, hl->fr_pos)->name) == HV__FR_NAME_LEN - 1, "a long name is cut to the slot");

  CHECK(hv__fr_peer_of("point-to-point transfers from rank 2 on host n1") == 2, "peer from a wait");
  CHECK(hv__fr_peer_of("negotiation (gather of sizes)") == -1, "no peer");

  expect_json("plain", "\"plain\"");
  expect_json("q\"b\\n\nt\tc\x01", "\"q\\\"b\\\\n\\nt\\tc\\u0001\"");
  expect_json("\xc3\xa9", "\"\xc3\xa9\"");
  expect_json("cut\xc3", "\"cut\\u00c3\"");
  expect_json("\xff\xed\xa0\x80", "\"\\u00ff\\u00ed\\u00a0\\u0080\"");

  for (int i = 0; i < 6; i++) free(h[i]);
  free(hl);
  free(comm->exec);
  hv__fr_free(comm);
  pthread_mutex_destroy(&comm->mutex);
  free(comm);
  return check_failures ? 1 : 0;
}
