/* join.c: hv_join, for inputs of uneven length (Horovod's join, DDP's Join). A rank
 * that has run out of data calls hv_join; until every rank has, the collectives the
 * others submit complete without it: it takes part with a stand-in ("phantom")
 * request holding the identity (zeros for a sum), and an average divides by the
 * ranks that contributed.
 *
 * How the ranks agree (negotiate_round.c, negotiate_coordinator.c): hv_join submits
 * a barrier named "hv.join" whose root is HV__JOIN_ROOT. The coordinator marks its
 * rank joined and tells every rank in the same round's responses (JOINED), so from
 * the next round on every rank knows the count, and every rank sends its requests in
 * full instead of by cache bit: the coordinator, which knows who joined, then calls a
 * name ready when every rank has either submitted it or joined, and answers OK with
 * the number of ranks that contributed. A joined rank turns each OK it holds nothing
 * for into a phantom request. When the last rank joins, "hv.join" is ready everywhere,
 * every rank's hv_join returns, and the count goes back to 0 in that same round.
 * Allreduce (sum and average), broadcast from a rank that has not joined, and
 * barriers complete this way; any other collective fails on every rank, naming the
 * ranks that joined. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv_internal.h"

hv_result_t hv_join(hv_comm_t *comm) {
  if (!comm) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "hv_join: communicator is NULL");
  pthread_mutex_lock(&comm->mutex);
  const int already = comm->join_local;
  comm->join_local = 1;
  pthread_mutex_unlock(&comm->mutex);
  if (already)
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT,
                         "hv_join: this rank is already in hv_join (another thread's call): join once per round of joins");
  hv_handle_t h = NULL;
  hv_result_t rc = hv__join_submit(comm, &h);
  if (rc == HV_SUCCESS) rc = hv_wait(h);
  pthread_mutex_lock(&comm->mutex);
  comm->join_local = 0;
  pthread_mutex_unlock(&comm->mutex);
  return rc;
}

const char *hv__join_unsupported(const hv__meta_t *m) {
  switch (m->coll) {
    case HV__COLL_ALLREDUCE:
      if (m->op != HV_SUM && m->op != HV_AVERAGE) return "only sum and average allreduces complete without a joined rank";
      if (m->ntensors) return "grouped allreduces do not complete without a joined rank";
      return NULL;
    case HV__COLL_BROADCAST:
    case HV__COLL_BARRIER: return NULL;
    default: return "only allreduce (sum, average), broadcast and barrier complete without a joined rank";
  }
}

struct hv_handle *hv__join_phantom(hv_comm_t *comm, const char *name, const hv__meta_t *meta) {
  struct hv_handle *h = hv__handle_new(comm, name, meta);
  if (!h) return NULL;
  h->phantom = 1;
  const size_t bytes = (size_t)meta->count * hv_dtype_size((hv_dtype_t)meta->dtype);
  if (bytes) {
    /* Zeros: the identity of a sum, and what an average's divisor leaves out. A
     * broadcast overwrites them. */
    h->phantom_buf = calloc(1, bytes);
    if (!h->phantom_buf) {
      hv__handle_free(h);
      return NULL;
    }
  }
  unsigned long long seq;
  if (meta->coll == HV__COLL_BARRIER && sscanf(name, "hv.barrier.%llu", &seq) == 1) {
    /* Barriers are named by each rank's count of them (api.c): the joined rank's
     * next one must have the others' next number. */
    pthread_mutex_lock(&comm->mutex);
    if (comm->barrier_seq <= seq) comm->barrier_seq = seq + 1;
    pthread_mutex_unlock(&comm->mutex);
  }
  h->sendbuf = h->recvbuf = h->phantom_buf;
  if (meta->coll == HV__COLL_ALLREDUCE) {
    h->single = (hv_tensor_t){h->phantom_buf, h->phantom_buf, (size_t)meta->count};
    h->tensors = &h->single;
    h->ntensors = 1;
  }
  return h;
}
