/* engine_vector.c: runs the collectives whose block differs per pair of ranks:
 * alltoallv, gather(v), scatter(v) and the send/recv pair, all through hv__alltoallv
 * (algo/alltoallv.c) with the blocks of the pairs that exchange nothing empty.
 *
 * The splits of alltoallv, gatherv and scatterv are each rank's own, so negotiation
 * (one fixed-size record per rank) does not carry them. They are checked here, by
 * every rank together, before any data moves: each rank checks its own (negative,
 * not summing to its declared total), an MPI_Alltoall tells each rank what every
 * other means to send it, and an MPI_Allgather of one record per rank tells every
 * rank the first fault anywhere. So all ranks fail alike with the same message, or
 * all run: never one rank failing while the others wait for its data. Horovod's
 * alltoall exchanges its splits on every call too; MoE-style splits change every
 * step, so caching them would not pay. */
#include <stdlib.h>
#include <string.h>

#include "hv_internal.h"

enum { FAULT_NONE = 0, FAULT_NEG_SEND, FAULT_NEG_RECV, FAULT_SUM_SEND, FAULT_SUM_RECV, FAULT_DISAGREE };

/* One rank's verdict on its splits: kind, the peer (index) it concerns, two values. */
typedef struct fault {
  int64_t kind, peer, a, b;
} fault_t;

/* How the call names its lists, for messages: alltoallv's sendsplits/recvsplits,
 * gatherv's sendcount/recvcounts, scatterv's sendcounts/recvcount. */
static const char *send_name(int coll) {
  return coll == HV__COLL_ALLTOALLV ? "sendsplits" : coll == HV__COLL_GATHERV ? "sendcount" : "sendcounts";
}
static const char *recv_name(int coll) {
  return coll == HV__COLL_ALLTOALLV ? "recvsplits" : coll == HV__COLL_GATHERV ? "recvcounts" : "recvcount";
}
static int send_is_list(int coll) { return coll != HV__COLL_GATHERV; }
static int recv_is_list(int coll) { return coll != HV__COLL_SCATTERV; }

/* This rank's own faults: a negative split, splits that do not sum to the total. */
static fault_t own_fault(const hv__splits_t *s, int n) {
  fault_t f = {FAULT_NONE, 0, 0, 0};
  int64_t sum_send = 0, sum_recv = 0;
  for (int q = 0; q < n; q++) {
    if (s->send[q] < 0) return (fault_t){FAULT_NEG_SEND, q, s->send[q], 0};
    if (s->recv[q] < 0) return (fault_t){FAULT_NEG_RECV, q, s->recv[q], 0};
    /* Each split is at most INT64_MAX: a sum past it is saturated, and unequal to any total. */
    if (__builtin_add_overflow(sum_send, s->send[q], &sum_send)) sum_send = INT64_MAX;
    if (__builtin_add_overflow(sum_recv, s->recv[q], &sum_recv)) sum_recv = INT64_MAX;
  }
  if (s->total_send >= 0 && sum_send != s->total_send) return (fault_t){FAULT_SUM_SEND, 0, sum_send, s->total_send};
  if (s->total_recv >= 0 && sum_recv != s->total_recv) return (fault_t){FAULT_SUM_RECV, 0, sum_recv, s->total_recv};
  return f;
}

static char *describe(const hv__splits_t *s, int p, const fault_t *f, hv_result_t *code) {
  int c = s->coll;
  *code = HV_ERR_INVALID_ARGUMENT;
  char si[32] = "", ri[32] = "";
  switch (f->kind) {
    case FAULT_NEG_SEND:
    case FAULT_NEG_RECV: {
      int snd = f->kind == FAULT_NEG_SEND;
      return hv__strdup_printf("%s: rank %d's %s[%lld] is %lld: counts must not be negative", s->prefix, p,
                               snd ? send_name(c) : recv_name(c), (long long)f->peer, (long long)f->a);
    }
    case FAULT_SUM_SEND:
    case FAULT_SUM_RECV: {
      int snd = f->kind == FAULT_SUM_SEND;
      return hv__strdup_printf("%s: rank %d's %s sum to %lld, not to its %s %lld", s->prefix, p,
                               snd ? send_name(c) : recv_name(c), (long long)f->a, snd ? "sendcount" : "recvcount",
                               (long long)f->b);
    }
    default:
      *code = HV_ERR_MISMATCH;
      if (send_is_list(c)) snprintf(si, sizeof si, "[%d]", p);
      if (recv_is_list(c)) snprintf(ri, sizeof ri, "[%lld]", (long long)f->peer);
      return hv__strdup_printf("%s: the counts disagree: rank %lld sends %lld elements to rank %d (its %s%s), rank %d "
                               "expects %lld from rank %lld (its %s%s)", s->prefix, (long long)f->peer,
                               (long long)f->a, p, send_name(c), si, p, (long long)f->b, (long long)f->peer,
                               recv_name(c), ri);
  }
}

hv_result_t hv__splits_agree(hv_comm_t *comm, MPI_Comm mpi, const hv__splits_t *s, hv_result_t *code, char **detail) {
  int n = comm->size;
  int64_t *incoming = malloc(sizeof(int64_t) * (size_t)n);
  fault_t *all = malloc(sizeof(fault_t) * (size_t)n);
  if (!incoming || !all) {
    free(incoming);
    free(all);
    return hv__set_error(comm, HV_ERR_NO_MEMORY, "%s: the splits' exchange", s->prefix);
  }
  hv_result_t rc = HV_SUCCESS;
  fault_t mine = own_fault(s, n);
  MPI_Request req;
  int mpi_rc = MPI_Ialltoall(s->send, 1, MPI_INT64_T, incoming, 1, MPI_INT64_T, mpi, &req);
  if (mpi_rc != MPI_SUCCESS) rc = hv__fail_mpi(&comm->host.errors, mpi_rc, "MPI_Ialltoall", __FILE__, __LINE__);
  if (rc == HV_SUCCESS) rc = hv__wait_mpi(&comm->host, 1, &req, "the exchange of splits", 0);
  for (int q = 0; rc == HV_SUCCESS && mine.kind == FAULT_NONE && q < n; q++)
    if (incoming[q] >= 0 && incoming[q] != s->recv[q]) mine = (fault_t){FAULT_DISAGREE, q, incoming[q], s->recv[q]};
  if (rc == HV_SUCCESS) {
    mpi_rc = MPI_Iallgather(&mine, 4, MPI_INT64_T, all, 4, MPI_INT64_T, mpi, &req);
    if (mpi_rc != MPI_SUCCESS) rc = hv__fail_mpi(&comm->host.errors, mpi_rc, "MPI_Iallgather", __FILE__, __LINE__);
    if (rc == HV_SUCCESS) rc = hv__wait_mpi(&comm->host, 1, &req, "the verdicts on the splits", 0);
  }
  for (int p = 0; rc == HV_SUCCESS && p < n; p++)
    if (all[p].kind != FAULT_NONE) {
      *detail = describe(s, p, &all[p], code);
      break;
    }
  free(incoming);
  free(all);
  return rc;
}

/* Every rank's splits checked together (see the top). HV_SUCCESS with *detail set:
 * a fault, the same on every rank; the collective is not run. */
static hv_result_t agree_on_splits(hv_comm_t *comm, struct hv_handle *h, hv_result_t *code, char **detail) {
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "tensor '%s' (%s)", h->name, hv__coll_name((hv__coll_t)h->meta.coll));
  hv__splits_t s = {h->meta.coll, prefix, h->splits_send, h->splits_recv, h->total_send, h->total_recv};
  return hv__splits_agree(comm, comm->algo.mpi, &s, code, detail);
}

/* off (n + 1 entries) = the prefix sums of len times es. */
static void offsets(size_t *off, const int64_t *len, int n, size_t es) {
  off[0] = 0;
  for (int q = 0; q < n; q++) off[q + 1] = off[q] + (size_t)len[q] * es;
}

hv_result_t hv__run_vector(hv_comm_t *comm, struct hv_handle *h, hv_result_t *code, char **detail) {
  int n = comm->size, c = h->meta.coll, root = h->meta.root;
  size_t es = hv_dtype_size((hv_dtype_t)h->meta.dtype);
  int64_t count = (int64_t)h->meta.count;
  int64_t *lens = NULL;
  if (!h->splits_send) {
    /* Equal counts (gather, scatter) or one peer (send, recv): negotiation compared
     * them already, so the blocks follow without an exchange. */
    lens = calloc(2 * (size_t)n, sizeof(int64_t));
    if (!lens) return hv__set_error(comm, HV_ERR_NO_MEMORY, "tensor '%s': block sizes", h->name);
    int64_t *send = lens, *recv = lens + n;
    if (c == HV__COLL_GATHER) {
      send[root] = count;
      if (comm->rank == root)
        for (int q = 0; q < n; q++) recv[q] = count;
    } else if (c == HV__COLL_SCATTER) {
      recv[root] = count;
      if (comm->rank == root)
        for (int q = 0; q < n; q++) send[q] = count;
    } else if (c == HV__COLL_SEND) {
      send[root] = count;
    } else {
      recv[root] = count;
    }
  } else {
    /* The implied split of gatherv and scatterv: this rank's count, to or from the root. */
    if (c == HV__COLL_GATHERV) h->splits_send[root] = count;
    if (c == HV__COLL_SCATTERV) h->splits_recv[root] = count;
    HV_CHECK(agree_on_splits(comm, h, code, detail));
    if (*detail) return HV_SUCCESS;
  }
  const int64_t *send = lens ? lens : h->splits_send, *recv = lens ? lens + n : h->splits_recv;
  size_t *off = malloc(sizeof(size_t) * 2 * ((size_t)n + 1));
  if (!off) {
    free(lens);
    return hv__set_error(comm, HV_ERR_NO_MEMORY, "tensor '%s': block offsets", h->name);
  }
  /* Sums fit: the totals were checked against size_t at the call, or are count x size. */
  offsets(off, send, n, es);
  offsets(off + n + 1, recv, n, es);
  hv_result_t rc = hv__alltoallv(&comm->algo, h->sendbuf, off, h->recvbuf, off + n + 1);
  free(off);
  free(lens);
  return rc;
}
