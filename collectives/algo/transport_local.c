/* transport_local.c: the transport interface for R ranks that are R threads of one
 * process, so algorithm tests run without mpirun (transport.h).
 *
 * Sends are eager: a send whose receive is already posted copies straight into the
 * receiver's buffer; otherwise the message is copied into the receiver's mailbox,
 * and the send is complete either way. A receive takes the oldest mailbox message
 * from its (source, tag), or waits posted until a send fills it. Matching by source
 * and tag in posting order is MPI's non-overtaking rule, which the algorithms rely
 * on. One mutex guards the whole world: tests move little data, and correctness,
 * not speed, is what they measure. Waits are bounded by the host's HV_TIMEOUT and
 * ask its fault poll, like MPI waits. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo.h"

typedef struct local_message {
  struct local_message *next;
  int source, tag;
  size_t bytes;
  char data[];
} local_message_t;

typedef struct local_recv {
  struct local_recv *next;
  int source, tag;
  void *buf;
  size_t bytes;
  int done, truncated;
} local_recv_t;

typedef struct local_mailbox {
  local_message_t *unexpected, **unexpected_tail; /* arrived, not yet received */
  local_recv_t *posted, **posted_tail;            /* receives waiting for a send */
} local_mailbox_t;

struct hv__local_world {
  int size;
  pthread_mutex_t mutex;
  pthread_cond_t arrived;
  local_mailbox_t *boxes; /* one per destination rank */
};

hv__local_world_t *hv__local_world_create(int size) {
  hv__local_world_t *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->boxes = calloc((size_t)size, sizeof *w->boxes);
  if (!w->boxes) {
    free(w);
    return NULL;
  }
  w->size = size;
  for (int r = 0; r < size; r++) {
    w->boxes[r].unexpected_tail = &w->boxes[r].unexpected;
    w->boxes[r].posted_tail = &w->boxes[r].posted;
  }
  pthread_mutex_init(&w->mutex, NULL);
  pthread_cond_init(&w->arrived, NULL);
  return w;
}

void hv__local_world_destroy(hv__local_world_t *w) {
  if (!w) return;
  for (int r = 0; r < w->size; r++)
    for (local_message_t *m = w->boxes[r].unexpected, *next; m; m = next) {
      next = m->next;
      free(m);
    }
  pthread_mutex_destroy(&w->mutex);
  pthread_cond_destroy(&w->arrived);
  free(w->boxes);
  free(w);
}

static hv__local_world_t *world_of(hv__transport_t *t) { return t->impl; }

static hv_result_t check_peer(hv__transport_t *t, int peer, size_t bytes) {
  if (peer < 0 || peer >= t->size)
    return hv__fail(&t->host->errors, HV_ERR_INTERNAL, "in-process transport: no rank %d of %d", peer, t->size);
  if (bytes > HV__TRANSPORT_MAX_MESSAGE)
    return hv__fail(&t->host->errors, HV_ERR_INTERNAL, "transport message of %zu bytes too large", bytes);
  return HV_SUCCESS;
}

/* Copies a message into a receive; a longer message than the receive is MPI's
 * truncation error, reported by the wait. */
static void deliver(local_recv_t *rv, const void *data, size_t bytes) {
  if (bytes > rv->bytes) rv->truncated = 1;
  else if (bytes) memcpy(rv->buf, data, bytes);
  rv->done = 1;
}

static hv_result_t local_isend(hv__transport_t *t, int peer, int tag, const void *buf, size_t bytes,
                               hv__request_t *req) {
  HV_CHECK(check_peer(t, peer, bytes));
  hv__local_world_t *w = world_of(t);
  local_mailbox_t *box = &w->boxes[peer];
  req->local = NULL; /* eager: complete at once */
  pthread_mutex_lock(&w->mutex);
  for (local_recv_t **p = &box->posted; *p; p = &(*p)->next) {
    local_recv_t *rv = *p;
    if (rv->source != t->rank || rv->tag != tag) continue;
    *p = rv->next;
    if (!*p) box->posted_tail = p;
    deliver(rv, buf, bytes);
    pthread_cond_broadcast(&w->arrived);
    pthread_mutex_unlock(&w->mutex);
    return HV_SUCCESS;
  }
  local_message_t *m = malloc(sizeof *m + bytes);
  if (!m) {
    pthread_mutex_unlock(&w->mutex);
    return hv__fail(&t->host->errors, HV_ERR_NO_MEMORY, "in-process transport: a %zu-byte message", bytes);
  }
  m->next = NULL;
  m->source = t->rank;
  m->tag = tag;
  m->bytes = bytes;
  if (bytes) memcpy(m->data, buf, bytes);
  *box->unexpected_tail = m;
  box->unexpected_tail = &m->next;
  pthread_mutex_unlock(&w->mutex);
  return HV_SUCCESS;
}

static hv_result_t local_irecv(hv__transport_t *t, int peer, int tag, void *buf, size_t bytes,
                               hv__request_t *req) {
  HV_CHECK(check_peer(t, peer, bytes));
  hv__local_world_t *w = world_of(t);
  local_mailbox_t *box = &w->boxes[t->rank];
  local_recv_t *rv = calloc(1, sizeof *rv);
  if (!rv) return hv__fail(&t->host->errors, HV_ERR_NO_MEMORY, "in-process transport: a receive");
  *rv = (local_recv_t){NULL, peer, tag, buf, bytes, 0, 0};
  req->local = rv;
  pthread_mutex_lock(&w->mutex);
  for (local_message_t **p = &box->unexpected; *p; p = &(*p)->next) {
    local_message_t *m = *p;
    if (m->source != peer || m->tag != tag) continue;
    *p = m->next;
    if (!*p) box->unexpected_tail = p;
    deliver(rv, m->data, m->bytes);
    free(m);
    pthread_mutex_unlock(&w->mutex);
    return HV_SUCCESS;
  }
  *box->posted_tail = rv;
  box->posted_tail = &rv->next;
  pthread_mutex_unlock(&w->mutex);
  return HV_SUCCESS;
}

/* Releases a finished receive; its truncation is the wait's error. */
static hv_result_t finish(hv__transport_t *t, hv__request_t *req) {
  local_recv_t *rv = req->local;
  req->local = NULL;
  const int truncated = rv->truncated, source = rv->source, tag = rv->tag;
  free(rv);
  if (truncated)
    return hv__fail(&t->host->errors, HV_ERR_INTERNAL,
                    "in-process transport: a message from rank %d (tag %d) is longer than its receive", source, tag);
  return HV_SUCCESS;
}

static hv_result_t local_wait(hv__transport_t *t, hv__request_t *req) {
  local_recv_t *rv = req->local;
  if (!rv) return HV_SUCCESS;
  hv__local_world_t *w = world_of(t);
  const double start = hv__now_us();
  hv__wait_watch_t watch = {0, 0};
  pthread_mutex_lock(&w->mutex);
  while (!rv->done) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 10 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&w->arrived, &w->mutex, &until);
    if (rv->done) break;
    const double waited = hv__now_us() - start;
    const char *what = "an in-process transfer";
    hv_result_t rc = hv__algo_host_poll(t->host, &watch, waited, what);
    if (rc == HV_SUCCESS && t->host->timeout_s > 0 && waited > t->host->timeout_s * 1e6)
      rc = hv__algo_host_timeout(t->host, what);
    if (rc != HV_SUCCESS) {
      /* The receive stays posted (a late send may still fill it): it is leaked, as
       * MPI's unfinished requests are, on a communicator that is dead now. */
      pthread_mutex_unlock(&w->mutex);
      return rc;
    }
  }
  pthread_mutex_unlock(&w->mutex);
  return finish(t, req);
}

static hv_result_t local_waitall(hv__transport_t *t, hv__request_t *reqs, int n) {
  for (int i = 0; i < n; i++) HV_CHECK(local_wait(t, &reqs[i]));
  return HV_SUCCESS;
}

static hv_result_t local_test(hv__transport_t *t, hv__request_t *req, int *done) {
  local_recv_t *rv = req->local;
  if (!rv) {
    *done = 1;
    return HV_SUCCESS;
  }
  hv__local_world_t *w = world_of(t);
  pthread_mutex_lock(&w->mutex);
  *done = rv->done;
  pthread_mutex_unlock(&w->mutex);
  return *done ? finish(t, req) : HV_SUCCESS;
}

void hv__transport_local_init(hv__transport_t *t, const hv__algo_host_t *host, hv__local_world_t *world, int rank) {
  t->name = "local";
  t->rank = rank;
  t->size = world->size;
  t->isend = local_isend;
  t->irecv = local_irecv;
  t->wait = local_wait;
  t->waitall = local_waitall;
  t->test = local_test;
  t->impl = world;
  t->host = host;
}
