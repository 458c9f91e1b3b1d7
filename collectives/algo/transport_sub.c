/* transport_sub.c: a transport over a subset of another transport's ranks (a row or
 * a column of the 2-D allreduce's grid), so an algorithm written for a whole
 * transport runs unchanged on the subset. Sub-rank i is the parent's rank ranks[i];
 * each tag is moved up by the sub-transport's offset, so phases over different
 * subsets (or over the parent) never match one another's messages. Requests, waits
 * and their timeouts are the parent's own: the same code serves MPI and the
 * in-process transport, with no communicator to create. */
#include "algo.h"

static hv__transport_sub_t *sub_of(hv__transport_t *t) { return t->impl; }

static hv_result_t bad_peer(hv__transport_t *t, int peer) {
  return hv__fail(&t->host->errors, HV_ERR_INTERNAL, "sub-transport: no rank %d of %d", peer, t->size);
}

static hv_result_t sub_isend(hv__transport_t *t, int peer, int tag, const void *buf, size_t bytes,
                             hv__request_t *req) {
  hv__transport_sub_t *s = sub_of(t);
  if (peer < 0 || peer >= t->size) return bad_peer(t, peer);
  return s->parent->isend(s->parent, s->ranks[peer], tag + s->tag_offset, buf, bytes, req);
}

static hv_result_t sub_irecv(hv__transport_t *t, int peer, int tag, void *buf, size_t bytes,
                             hv__request_t *req) {
  hv__transport_sub_t *s = sub_of(t);
  if (peer < 0 || peer >= t->size) return bad_peer(t, peer);
  return s->parent->irecv(s->parent, s->ranks[peer], tag + s->tag_offset, buf, bytes, req);
}

static hv_result_t sub_wait(hv__transport_t *t, hv__request_t *req) {
  hv__transport_t *p = sub_of(t)->parent;
  return p->wait(p, req);
}

static hv_result_t sub_waitall(hv__transport_t *t, hv__request_t *reqs, int n) {
  hv__transport_t *p = sub_of(t)->parent;
  return p->waitall(p, reqs, n);
}

static hv_result_t sub_test(hv__transport_t *t, hv__request_t *req, int *done) {
  hv__transport_t *p = sub_of(t)->parent;
  return p->test(p, req, done);
}

hv_result_t hv__transport_sub_init(hv__transport_t *t, hv__transport_sub_t *sub, hv__transport_t *parent,
                                   const int *ranks, int size, int tag_offset) {
  *sub = (hv__transport_sub_t){parent, ranks, tag_offset};
  t->name = "sub";
  t->rank = -1;
  for (int i = 0; i < size; i++) {
    if (ranks[i] < 0 || ranks[i] >= parent->size)
      return hv__fail(&parent->host->errors, HV_ERR_INTERNAL, "sub-transport: rank %d is not one of %d", ranks[i],
                      parent->size);
    if (ranks[i] == parent->rank) t->rank = i;
  }
  if (t->rank < 0)
    return hv__fail(&parent->host->errors, HV_ERR_INTERNAL, "sub-transport: rank %d is not in its own subset",
                    parent->rank);
  t->size = size;
  t->isend = sub_isend;
  t->irecv = sub_irecv;
  t->wait = sub_wait;
  t->waitall = sub_waitall;
  t->test = sub_test;
  t->impl = sub;
  t->host = parent->host;
  return HV_SUCCESS;
}
