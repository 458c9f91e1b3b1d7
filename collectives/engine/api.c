/* api.c: the collective calls of hv.h: argument checks (invalid arguments fail at the
 * call, with the detail in hv_comm_last_error), request creation, the thread-safe
 * queue, grouped submission and the blocking forms. */
#include <stdlib.h>
#include <string.h>

#include "flight_recorder.h"
#include "hv_internal.h"
#include "reduce.h"

/* Grouped submission is per thread: requests wait here until hv_group_end(). */
static _Thread_local struct {
  hv_comm_t *comm;
  struct hv_handle *head, *tail;
} group;

static hv_result_t bad(hv_comm_t *comm, const char *name, const char *fmt, const char *what) {
  return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "rank %d, tensor '%s': %s%s",
                       comm ? comm->rank : -1, name ? name : "(null)", fmt, what ? what : "");
}

static hv_result_t check_common(hv_comm_t *comm, const char *name, hv_dtype_t dtype,
                                hv_handle_t *handle) {
  if (!comm) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "communicator is NULL (call hv_init first)");
  if (!handle) return bad(comm, name, "the handle pointer is NULL", NULL);
  if (!name || !*name) return bad(comm, name, "the tensor name is empty", NULL);
  if (strlen(name) > 4096) return bad(comm, name, "the tensor name is longer than 4096 bytes", NULL);
  if ((unsigned)dtype >= HV_NUM_DTYPES) return bad(comm, name, "unknown dtype", NULL);
  return HV_SUCCESS;
}

static hv_result_t check_op(hv_comm_t *comm, const char *name, hv_dtype_t dtype, hv_op_t op) {
  if ((unsigned)op >= HV_NUM_OPS) return bad(comm, name, "unknown reduction op", NULL);
  if (op == HV_AVERAGE && !hv__dtype_is_float(dtype))
    return bad(comm, name, "HV_AVERAGE needs a float dtype; use HV_SUM and divide, for ", hv_dtype_name(dtype));
  return HV_SUCCESS;
}

/* count x times elements of dtype must fit in size_t (and so in the buffers the caller
 * says it has): a product that wraps would make a huge request look small. */
static hv_result_t check_size(hv_comm_t *comm, const char *name, const char *what, size_t count, size_t times,
                              hv_dtype_t dtype) {
  size_t es = hv_dtype_size(dtype), elements;
  if (!__builtin_mul_overflow(count, times, &elements) && elements <= SIZE_MAX / es) return HV_SUCCESS;
  char detail[200];
  snprintf(detail, sizeof detail, "%s: %zu elements x %zu x %zu bytes (%s) overflows size_t", what, count, times, es,
           hv_dtype_name(dtype));
  return bad(comm, name, detail, NULL);
}

static int overlap(const void *a, size_t abytes, const void *b, size_t bbytes) {
  const char *x = a, *y = b;
  return abytes && bbytes && x < y + bbytes && y < x + abytes;
}

/* A request with room for ntensors tensors (a grouped allreduce's list) after it. */
static struct hv_handle *new_handle_with(hv_comm_t *comm, const char *name, hv__coll_t coll,
                                         hv_dtype_t dtype, size_t count, size_t ntensors) {
  /* The tensor list and the name are stored after the handle, in the same block: one
   * allocation and one free per request, which a fused step makes hundreds of. */
  const size_t name_size = strlen(name) + 1;
  if (ntensors > (SIZE_MAX - sizeof(struct hv_handle) - name_size) / sizeof(hv_tensor_t)) return NULL;
  struct hv_handle *h = calloc(1, sizeof *h + ntensors * sizeof(hv_tensor_t) + name_size);
  if (!h) return NULL;
  h->tensors = (hv_tensor_t *)(h + 1);
  h->name = memcpy((char *)(h + 1) + ntensors * sizeof(hv_tensor_t), name, name_size);
  h->comm = comm;
  h->name_hash = hv__hash_bytes(h->name, name_size - 1);
  memset(&h->meta, 0, sizeof h->meta);
  h->meta.coll = (uint8_t)coll;
  h->meta.dtype = (uint8_t)dtype;
  h->meta.count = count;
  h->meta.compression = HV_COMPRESSION_NONE;
  h->prescale = h->postscale = 1.0;
  h->cache_bit = -1;
  /* Stall ages need seconds; the timeline's QUEUE span needs microseconds. */
  h->t_submit = comm->timeline ? hv__now_us() : hv__coarse_now_us();
  return h;
}

static struct hv_handle *new_handle(hv_comm_t *comm, const char *name, hv__coll_t coll,
                                    hv_dtype_t dtype, size_t count) {
  return new_handle_with(comm, name, coll, dtype, count, 0);
}

static hv_result_t submit(hv_comm_t *comm, struct hv_handle *h, hv_handle_t *out) {
  if (!h) return hv__set_error(comm, HV_ERR_NO_MEMORY, "out of memory creating a request");
  pthread_mutex_lock(&comm->mutex);
  if (comm->engine_stopped || comm->shutdown_requested) {
    hv_result_t first = comm->async_error;
    hv_result_t rc = first != HV_SUCCESS ? HV_ERR_ABORTED : HV_ERR_SHUT_DOWN;
    /* The first error wins: a later call names it (out of memory...), not only that
     * the communicator is unusable. */
    char why[sizeof comm->stopped_why];
    memcpy(why, comm->stopped_why, sizeof why);
    pthread_mutex_unlock(&comm->mutex);
    if (first != HV_SUCCESS && why[0])
      hv__set_error(comm, rc, "tensor '%s': the communicator is aborted: %s (%s)", h->name, hv_strerror(first), why);
    else
      hv__set_error(comm, rc, "tensor '%s': the communicator is %s", h->name,
                    rc == HV_ERR_ABORTED ? "aborted" : "shut down");
    hv__handle_free(h);
    return rc;
  }
  const int inserted = hv__map_insert_new_hashed(&comm->names_in_flight, h->name, h->name_hash, h);
  if (inserted == 1) {
    pthread_mutex_unlock(&comm->mutex);
    hv_result_t rc = bad(comm, h->name, "a request with this name is already pending on this rank; "
                         "wait for it before submitting the name again", NULL);
    hv__handle_free(h);
    return rc;
  }
  if (inserted < 0) {
    pthread_mutex_unlock(&comm->mutex);
    hv__handle_free(h);
    return hv__set_error(comm, HV_ERR_NO_MEMORY, "out of memory queueing a request");
  }
  hv__straggler_submitted(comm, h);
  hv__fr_submit(comm, h);
  if (group.comm == comm) {
    if (group.tail) group.tail->next = h;
    else group.head = h;
    group.tail = h;
  } else {
    if (comm->queue_tail) comm->queue_tail->next = h;
    else comm->queue_head = h;
    comm->queue_tail = h;
    atomic_fetch_add(&comm->queued, 1);
    if (!hv__submit_quiet) pthread_cond_signal(&comm->queue_cv);
  }
  pthread_mutex_unlock(&comm->mutex);
  *out = h;
  return HV_SUCCESS;
}

/* One tensor of an allreduce, the index-th of a group (or SIZE_MAX: a plain one): its
 * buffers are usable (sendbuf NULL means in place). */
static hv_result_t check_tensor(hv_comm_t *comm, const char *name, const hv_tensor_t *t, size_t es,
                                size_t index) {
  const char *why = NULL;
  if (t->count && !t->recvbuf) why = "recvbuf is NULL";
  else if (t->count > SIZE_MAX / es) why = "count is too large for the dtype";
  else if (t->sendbuf && t->sendbuf != t->recvbuf && overlap(t->sendbuf, t->count * es, t->recvbuf, t->count * es))
    why = "sendbuf and recvbuf overlap without being equal";
  if (!why) return HV_SUCCESS;
  char which[48] = "";
  if (index != SIZE_MAX) snprintf(which, sizeof which, " (tensor %zu of the group)", index);
  return bad(comm, name, why, which);
}

/* The checks and options shared by the plain and the grouped allreduce; the handle
 * is filled in by the caller. */
static hv_result_t allreduce_options(hv_comm_t *comm, const char *name, hv_dtype_t dtype, hv_op_t op,
                                     const hv_allreduce_opts_t *opts, hv_allreduce_opts_t *out) {
  HV_CHECK(check_op(comm, name, dtype, op));
  hv_allreduce_opts_t o = HV_ALLREDUCE_OPTS_INIT;
  if (opts) o = *opts;
  if ((o.prescale != 1.0 || o.postscale != 1.0) && !hv__dtype_is_float(dtype))
    return bad(comm, name, "prescale/postscale need a float dtype, not ", hv_dtype_name(dtype));
  if ((unsigned)o.compression > HV_COMPRESSION_BF16_1R) return bad(comm, name, "unknown compression", NULL);
  if (o.compression == HV_COMPRESSION_DEFAULT) o.compression = comm->config.compression;
  if (dtype != HV_FLOAT32) o.compression = HV_COMPRESSION_NONE;
  *out = o;
  return HV_SUCCESS;
}

static void allreduce_fill(struct hv_handle *h, hv_op_t op, const hv_allreduce_opts_t *o) {
  h->meta.op = (uint8_t)op;
  h->meta.compression = (uint8_t)o->compression;
  h->prescale = o->prescale;
  h->postscale = o->postscale;
}

hv_result_t hv_allreduce_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                               void *recvbuf, size_t count, hv_dtype_t dtype, hv_op_t op,
                               const hv_allreduce_opts_t *opts, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  hv_allreduce_opts_t o = HV_ALLREDUCE_OPTS_INIT;
  HV_CHECK(allreduce_options(comm, name, dtype, op, opts, &o));
  const hv_tensor_t t = {sendbuf ? sendbuf : recvbuf, recvbuf, count};
  HV_CHECK(check_tensor(comm, name, &t, hv_dtype_size(dtype), SIZE_MAX));
  struct hv_handle *h = new_handle(comm, name, HV__COLL_ALLREDUCE, dtype, count);
  if (h) {
    allreduce_fill(h, op, &o);
    h->single = t;
    h->tensors = &h->single;
    h->ntensors = 1;
  }
  return submit(comm, h, handle);
}

/* FNV-1a over the counts: ranks that split the same total into other tensors must not
 * agree (a reduction of misaligned elements would be silent garbage). Shared with the
 * GPU group (cuda_comm.c), which must refuse the same lists. */
uint64_t hv__layout_hash(const hv_tensor_t *tensors, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    uint64_t c = tensors[i].count;
    for (int b = 0; b < 8; b++) h = (h ^ ((c >> (8 * b)) & 0xffu)) * 1099511628211ull;
  }
  return h ? h : 1; /* 0 marks a plain allreduce */
}

hv_result_t hv_grouped_allreduce_async(hv_comm_t *comm, const char *name, const hv_tensor_t *tensors,
                                       size_t n, hv_dtype_t dtype, hv_op_t op,
                                       const hv_allreduce_opts_t *opts, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  hv_allreduce_opts_t o = HV_ALLREDUCE_OPTS_INIT;
  HV_CHECK(allreduce_options(comm, name, dtype, op, opts, &o));
  if (n && !tensors) return bad(comm, name, "the tensor list is NULL", NULL);
  size_t total = 0, es = hv_dtype_size(dtype);
  for (size_t i = 0; i < n; i++) {
    HV_CHECK(check_tensor(comm, name, &tensors[i], es, i));
    if (tensors[i].count > SIZE_MAX / es - total)
      return bad(comm, name, "the group's total count is too large for the dtype", NULL);
    total += tensors[i].count;
  }
  struct hv_handle *h = new_handle_with(comm, name, HV__COLL_ALLREDUCE, dtype, total, n);
  if (h) {
    allreduce_fill(h, op, &o);
    hv_tensor_t *list = (hv_tensor_t *)h->tensors;
    for (size_t i = 0; i < n; i++) {
      list[i] = tensors[i];
      if (!list[i].sendbuf) list[i].sendbuf = list[i].recvbuf;
    }
    h->ntensors = n;
    h->meta.ntensors = n;
    h->meta.layout = hv__layout_hash(tensors, n);
  }
  return submit(comm, h, handle);
}

hv_result_t hv_allgather_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                               void *recvbuf, size_t count, hv_dtype_t dtype, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  if (count && (!sendbuf || !recvbuf)) return bad(comm, name, "sendbuf or recvbuf is NULL", NULL);
  HV_CHECK(check_size(comm, name, "allgather receive buffer (count x ranks)", count, (size_t)comm->size, dtype));
  struct hv_handle *h = new_handle(comm, name, HV__COLL_ALLGATHER, dtype, count);
  if (h) h->sendbuf = sendbuf, h->recvbuf = recvbuf;
  return submit(comm, h, handle);
}

hv_result_t hv_allgatherv_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                                size_t sendcount, hv_dtype_t dtype, void *recvbuf,
                                size_t recv_capacity, size_t *recvcounts, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  if (!recvcounts) return bad(comm, name, "recvcounts is NULL (it needs one entry per rank)", NULL);
  if (sendcount && !sendbuf) return bad(comm, name, "sendbuf is NULL", NULL);
  if (recv_capacity && !recvbuf) return bad(comm, name, "recvbuf is NULL", NULL);
  HV_CHECK(check_size(comm, name, "allgatherv sendcount", sendcount, 1, dtype));
  HV_CHECK(check_size(comm, name, "allgatherv recv_capacity", recv_capacity, 1, dtype));
  struct hv_handle *h = new_handle(comm, name, HV__COLL_ALLGATHERV, dtype, sendcount);
  if (h) {
    h->sendbuf = sendbuf;
    h->recvbuf = recvbuf;
    h->recv_capacity = recv_capacity;
    h->recvcounts = recvcounts;
  }
  return submit(comm, h, handle);
}

hv_result_t hv_broadcast_async(hv_comm_t *comm, const char *name, void *buf, size_t count,
                               hv_dtype_t dtype, int root, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  if (count && !buf) return bad(comm, name, "buf is NULL", NULL);
  HV_CHECK(check_size(comm, name, "broadcast count", count, 1, dtype));
  if (root < 0 || root >= comm->size) {
    char what[64];
    snprintf(what, sizeof what, "%d (ranks are 0..%d)", root, comm->size - 1);
    return bad(comm, name, "root out of range: ", what);
  }
  struct hv_handle *h = new_handle(comm, name, HV__COLL_BROADCAST, dtype, count);
  if (h) h->sendbuf = h->recvbuf = buf, h->meta.root = root;
  return submit(comm, h, handle);
}

hv_result_t hv_reducescatter_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                                   void *recvbuf, size_t recvcount, hv_dtype_t dtype, hv_op_t op,
                                   hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  HV_CHECK(check_op(comm, name, dtype, op));
  if (recvcount && (!sendbuf || !recvbuf)) return bad(comm, name, "sendbuf or recvbuf is NULL", NULL);
  HV_CHECK(check_size(comm, name, "reducescatter send buffer (recvcount x ranks)", recvcount, (size_t)comm->size, dtype));
  size_t es = hv_dtype_size(dtype);
  if (overlap(sendbuf, recvcount * (size_t)comm->size * es, recvbuf, recvcount * es))
    return bad(comm, name, "reducescatter is out-of-place only: sendbuf and recvbuf overlap", NULL);
  struct hv_handle *h = new_handle(comm, name, HV__COLL_REDUCESCATTER, dtype, recvcount);
  if (h) h->sendbuf = sendbuf, h->recvbuf = recvbuf, h->meta.op = (uint8_t)op;
  return submit(comm, h, handle);
}

hv_result_t hv_alltoall_async(hv_comm_t *comm, const char *name, const void *sendbuf,
                              void *recvbuf, size_t count, hv_dtype_t dtype, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  if (count && (!sendbuf || !recvbuf)) return bad(comm, name, "sendbuf or recvbuf is NULL", NULL);
  HV_CHECK(check_size(comm, name, "alltoall buffers (count x ranks)", count, (size_t)comm->size, dtype));
  size_t bytes = count * (size_t)comm->size * hv_dtype_size(dtype);
  if (overlap(sendbuf, bytes, recvbuf, bytes))
    return bad(comm, name, "alltoall is out-of-place only: sendbuf and recvbuf overlap", NULL);
  struct hv_handle *h = new_handle(comm, name, HV__COLL_ALLTOALL, dtype, count);
  if (h) h->sendbuf = sendbuf, h->recvbuf = recvbuf;
  return submit(comm, h, handle);
}

/* ---- alltoallv, reduce, gather(v), scatter(v), send/recv (issue #24) ----
 * What one rank can check alone fails at the call (NULL buffers, sizes past size_t).
 * What involves other ranks is not checked here, so that every rank fails alike
 * instead of one failing and the others waiting: roots are compared and range-checked
 * by the coordinator (negotiate_coordinator.c), splits and counts by an exchange as
 * the collective starts (engine_vector.c). */

/* A request with a copy of its send and receive splits (size entries each; a NULL
 * list is all zeros). total_*: the declared sums, -1 when the call declares none. */
static struct hv_handle *new_split_handle(hv_comm_t *comm, const char *name, hv__coll_t coll, hv_dtype_t dtype,
                                          size_t count, const int64_t *send, int64_t total_send,
                                          const int64_t *recv, int64_t total_recv) {
  struct hv_handle *h = new_handle(comm, name, coll, dtype, count);
  if (!h) return NULL;
  size_t n = (size_t)comm->size;
  h->splits_send = calloc(2 * n, sizeof(int64_t));
  if (!h->splits_send) {
    hv__handle_free(h);
    return NULL;
  }
  h->splits_recv = h->splits_send + n;
  if (send) memcpy(h->splits_send, send, n * sizeof(int64_t));
  if (recv) memcpy(h->splits_recv, recv, n * sizeof(int64_t));
  h->total_send = total_send;
  h->total_recv = total_recv;
  return h;
}

/* A count given as size_t, as a split total: past INT64_MAX it cannot be one. */
static hv_result_t check_total(hv_comm_t *comm, const char *name, const char *what, size_t count, hv_dtype_t dtype) {
  HV_CHECK(check_size(comm, name, what, count, 1, dtype));
  if (count > (size_t)INT64_MAX) return bad(comm, name, what, " is past INT64_MAX");
  return HV_SUCCESS;
}

hv_result_t hv_alltoallv_async(hv_comm_t *comm, const char *name, const void *sendbuf, size_t sendcount,
                               const int64_t *sendsplits, hv_dtype_t dtype, void *recvbuf, size_t recvcount,
                               const int64_t *recvsplits, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  if (!sendsplits || !recvsplits) return bad(comm, name, "sendsplits or recvsplits is NULL (one entry per rank each)", NULL);
  if (sendcount && !sendbuf) return bad(comm, name, "sendbuf is NULL", NULL);
  if (recvcount && !recvbuf) return bad(comm, name, "recvbuf is NULL", NULL);
  HV_CHECK(check_total(comm, name, "alltoallv sendcount", sendcount, dtype));
  HV_CHECK(check_total(comm, name, "alltoallv recvcount", recvcount, dtype));
  size_t es = hv_dtype_size(dtype);
  if (overlap(sendbuf, sendcount * es, recvbuf, recvcount * es))
    return bad(comm, name, "alltoallv is out-of-place only: sendbuf and recvbuf overlap", NULL);
  struct hv_handle *h = new_split_handle(comm, name, HV__COLL_ALLTOALLV, dtype, 0, sendsplits, (int64_t)sendcount,
                                         recvsplits, (int64_t)recvcount);
  if (h) h->sendbuf = sendbuf, h->recvbuf = recvbuf;
  return submit(comm, h, handle);
}

hv_result_t hv_reduce_async(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf, size_t count,
                            hv_dtype_t dtype, hv_op_t op, int root, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  HV_CHECK(check_op(comm, name, dtype, op));
  HV_CHECK(check_size(comm, name, "reduce count", count, 1, dtype));
  const int is_root = root == comm->rank;
  if (count && !sendbuf && !(is_root && recvbuf)) return bad(comm, name, "sendbuf is NULL", NULL);
  if (count && is_root && !recvbuf) return bad(comm, name, "recvbuf is NULL on the root", NULL);
  size_t bytes = count * hv_dtype_size(dtype);
  if (is_root && sendbuf && sendbuf != recvbuf && overlap(sendbuf, bytes, recvbuf, bytes))
    return bad(comm, name, "sendbuf and recvbuf overlap without being equal", NULL);
  struct hv_handle *h = new_handle(comm, name, HV__COLL_REDUCE, dtype, count);
  if (h) h->sendbuf = sendbuf, h->recvbuf = recvbuf, h->meta.op = (uint8_t)op, h->meta.root = root;
  return submit(comm, h, handle);
}

hv_result_t hv_gather_async(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf, size_t count,
                            hv_dtype_t dtype, int root, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  HV_CHECK(check_size(comm, name, "gather receive buffer (count x ranks)", count, (size_t)comm->size, dtype));
  if (count && !sendbuf) return bad(comm, name, "sendbuf is NULL", NULL);
  if (count && root == comm->rank && !recvbuf) return bad(comm, name, "recvbuf is NULL on the root", NULL);
  struct hv_handle *h = new_handle(comm, name, HV__COLL_GATHER, dtype, count);
  if (h) h->sendbuf = sendbuf, h->recvbuf = recvbuf, h->meta.root = root;
  return submit(comm, h, handle);
}

hv_result_t hv_gatherv_async(hv_comm_t *comm, const char *name, const void *sendbuf, size_t sendcount,
                             hv_dtype_t dtype, void *recvbuf, const int64_t *recvcounts, int root,
                             hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  HV_CHECK(check_total(comm, name, "gatherv sendcount", sendcount, dtype));
  if (sendcount && !sendbuf) return bad(comm, name, "sendbuf is NULL", NULL);
  const int is_root = root == comm->rank;
  if (is_root && !recvcounts) return bad(comm, name, "recvcounts is NULL on the root (one entry per rank)", NULL);
  /* The root's splits are its recvcounts; every rank's send split to the root is its
   * count (placed at execution, once the root is known to be in range). */
  struct hv_handle *h = new_split_handle(comm, name, HV__COLL_GATHERV, dtype, sendcount, NULL, -1,
                                         is_root ? recvcounts : NULL, -1);
  if (h) h->sendbuf = sendbuf, h->recvbuf = recvbuf, h->meta.root = root;
  return submit(comm, h, handle);
}

hv_result_t hv_scatter_async(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf, size_t count,
                             hv_dtype_t dtype, int root, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  HV_CHECK(check_size(comm, name, "scatter send buffer (count x ranks)", count, (size_t)comm->size, dtype));
  if (count && !recvbuf) return bad(comm, name, "recvbuf is NULL", NULL);
  if (count && root == comm->rank && !sendbuf) return bad(comm, name, "sendbuf is NULL on the root", NULL);
  struct hv_handle *h = new_handle(comm, name, HV__COLL_SCATTER, dtype, count);
  if (h) h->sendbuf = sendbuf, h->recvbuf = recvbuf, h->meta.root = root;
  return submit(comm, h, handle);
}

hv_result_t hv_scatterv_async(hv_comm_t *comm, const char *name, const void *sendbuf, const int64_t *sendcounts,
                              hv_dtype_t dtype, void *recvbuf, size_t recvcount, int root, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  HV_CHECK(check_total(comm, name, "scatterv recvcount", recvcount, dtype));
  if (recvcount && !recvbuf) return bad(comm, name, "recvbuf is NULL", NULL);
  const int is_root = root == comm->rank;
  if (is_root && !sendcounts) return bad(comm, name, "sendcounts is NULL on the root (one entry per rank)", NULL);
  struct hv_handle *h = new_split_handle(comm, name, HV__COLL_SCATTERV, dtype, recvcount, is_root ? sendcounts : NULL,
                                         -1, NULL, -1);
  if (h) h->sendbuf = sendbuf, h->recvbuf = recvbuf, h->meta.root = root;
  return submit(comm, h, handle);
}

/* The peer of a send or receive: another rank (a rank's own send and receive would be
 * the same name pending twice). Only this rank is involved, so it fails here. */
static hv_result_t check_peer(hv_comm_t *comm, const char *name, const char *which, int peer) {
  char what[96];
  if (peer < 0 || peer >= comm->size)
    snprintf(what, sizeof what, "%s %d is out of range (ranks are 0..%d)", which, peer, comm->size - 1);
  else if (peer == comm->rank)
    snprintf(what, sizeof what, "%s %d is this rank: a point-to-point pair needs two ranks", which, peer);
  else return HV_SUCCESS;
  return bad(comm, name, what, NULL);
}

static hv_result_t p2p_async(hv_comm_t *comm, const char *name, hv__coll_t coll, const void *buf, size_t count,
                             hv_dtype_t dtype, int peer, hv_handle_t *handle) {
  HV_CHECK(check_common(comm, name, dtype, handle));
  HV_CHECK(check_peer(comm, name, coll == HV__COLL_SEND ? "dest" : "src", peer));
  HV_CHECK(check_size(comm, name, "count", count, 1, dtype));
  if (count && !buf) return bad(comm, name, "buf is NULL", NULL);
  struct hv_handle *h = new_handle(comm, name, coll, dtype, count);
  if (h) {
    h->meta.root = peer;
    if (coll == HV__COLL_SEND) h->sendbuf = buf;
    else h->recvbuf = (void *)buf;
  }
  return submit(comm, h, handle);
}

hv_result_t hv_send_async(hv_comm_t *comm, const char *name, const void *buf, size_t count, hv_dtype_t dtype,
                          int dest, hv_handle_t *handle) {
  return p2p_async(comm, name, HV__COLL_SEND, buf, count, dtype, dest, handle);
}

hv_result_t hv_recv_async(hv_comm_t *comm, const char *name, void *buf, size_t count, hv_dtype_t dtype, int src,
                          hv_handle_t *handle) {
  return p2p_async(comm, name, HV__COLL_RECV, buf, count, dtype, src, handle);
}

hv_result_t hv_barrier_async(hv_comm_t *comm, hv_handle_t *handle) {
  if (!comm) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "communicator is NULL");
  if (!handle) return bad(comm, "barrier", "the handle pointer is NULL", NULL);
  pthread_mutex_lock(&comm->mutex);
  uint64_t seq = comm->barrier_seq++;
  pthread_mutex_unlock(&comm->mutex);
  char name[48];
  snprintf(name, sizeof name, "hv.barrier.%llu", (unsigned long long)seq);
  return submit(comm, new_handle(comm, name, HV__COLL_BARRIER, HV_UINT8, 0), handle);
}

hv_result_t hv_group_start(hv_comm_t *comm) {
  if (!comm) return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "communicator is NULL");
  if (group.comm)
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_group_start: a group is already open on this thread");
  group.comm = comm;
  group.head = group.tail = NULL;
  return HV_SUCCESS;
}

hv_result_t hv_group_end(hv_comm_t *comm) {
  if (!comm || group.comm != comm)
    return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_group_end without hv_group_start on this thread");
  pthread_mutex_lock(&comm->mutex);
  if (group.head) {
    if (comm->queue_tail) comm->queue_tail->next = group.head;
    else comm->queue_head = group.head;
    comm->queue_tail = group.tail;
    atomic_fetch_add(&comm->queued, 1);
    pthread_cond_signal(&comm->queue_cv);
  }
  pthread_mutex_unlock(&comm->mutex);
  group.comm = NULL;
  group.head = group.tail = NULL;
  return HV_SUCCESS;
}

/* ---- blocking forms ---- */

/* A group's requests start at hv_group_end: a blocking call before it would wait
 * forever. */
static hv_result_t blocking_in_group(hv_comm_t *comm) {
  return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "rank %d: a blocking call inside hv_group_start/hv_group_end "
                       "on this thread would never complete; use the _async form in a group", comm->rank);
}

/* The request is run on the calling thread when the background thread is idle
 * (engine_inline.c): no hand-off to it and back, which is most of a small
 * collective's latency. Otherwise the background thread runs it as usual. */
#define SUBMIT_AND_WAIT(call)                        \
  do {                                               \
    hv_handle_t h_ = NULL;                           \
    if (comm && group.comm == comm) return blocking_in_group(comm); \
    int locked_ = comm ? hv__inline_begin(comm) : 0; \
    hv__submit_quiet = locked_;                      \
    hv_result_t rc_ = (call);                        \
    hv__submit_quiet = 0;                            \
    if (locked_) hv__inline_rounds(comm, rc_ == HV_SUCCESS ? h_ : NULL, 1); \
    if (rc_ != HV_SUCCESS) return rc_;               \
    return hv_wait(h_);                              \
  } while (0)

hv_result_t hv_allreduce(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf,
                         size_t count, hv_dtype_t dtype, hv_op_t op, const hv_allreduce_opts_t *opts) {
  SUBMIT_AND_WAIT(hv_allreduce_async(comm, name, sendbuf, recvbuf, count, dtype, op, opts, &h_));
}
hv_result_t hv_grouped_allreduce(hv_comm_t *comm, const char *name, const hv_tensor_t *tensors, size_t n,
                                 hv_dtype_t dtype, hv_op_t op, const hv_allreduce_opts_t *opts) {
  SUBMIT_AND_WAIT(hv_grouped_allreduce_async(comm, name, tensors, n, dtype, op, opts, &h_));
}
hv_result_t hv_allgather(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf,
                         size_t count, hv_dtype_t dtype) {
  SUBMIT_AND_WAIT(hv_allgather_async(comm, name, sendbuf, recvbuf, count, dtype, &h_));
}
hv_result_t hv_allgatherv(hv_comm_t *comm, const char *name, const void *sendbuf, size_t sendcount,
                          hv_dtype_t dtype, void *recvbuf, size_t recv_capacity, size_t *recvcounts) {
  SUBMIT_AND_WAIT(hv_allgatherv_async(comm, name, sendbuf, sendcount, dtype, recvbuf, recv_capacity,
                                      recvcounts, &h_));
}
hv_result_t hv_broadcast(hv_comm_t *comm, const char *name, void *buf, size_t count, hv_dtype_t dtype,
                         int root) {
  SUBMIT_AND_WAIT(hv_broadcast_async(comm, name, buf, count, dtype, root, &h_));
}
hv_result_t hv_reducescatter(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf,
                             size_t recvcount, hv_dtype_t dtype, hv_op_t op) {
  SUBMIT_AND_WAIT(hv_reducescatter_async(comm, name, sendbuf, recvbuf, recvcount, dtype, op, &h_));
}
hv_result_t hv_alltoall(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf,
                        size_t count, hv_dtype_t dtype) {
  SUBMIT_AND_WAIT(hv_alltoall_async(comm, name, sendbuf, recvbuf, count, dtype, &h_));
}
hv_result_t hv_barrier(hv_comm_t *comm) { SUBMIT_AND_WAIT(hv_barrier_async(comm, &h_)); }
hv_result_t hv_alltoallv(hv_comm_t *comm, const char *name, const void *sendbuf, size_t sendcount,
                         const int64_t *sendsplits, hv_dtype_t dtype, void *recvbuf, size_t recvcount,
                         const int64_t *recvsplits) {
  SUBMIT_AND_WAIT(hv_alltoallv_async(comm, name, sendbuf, sendcount, sendsplits, dtype, recvbuf, recvcount,
                                     recvsplits, &h_));
}
hv_result_t hv_reduce(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf, size_t count,
                      hv_dtype_t dtype, hv_op_t op, int root) {
  SUBMIT_AND_WAIT(hv_reduce_async(comm, name, sendbuf, recvbuf, count, dtype, op, root, &h_));
}
hv_result_t hv_gather(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf, size_t count,
                      hv_dtype_t dtype, int root) {
  SUBMIT_AND_WAIT(hv_gather_async(comm, name, sendbuf, recvbuf, count, dtype, root, &h_));
}
hv_result_t hv_gatherv(hv_comm_t *comm, const char *name, const void *sendbuf, size_t sendcount, hv_dtype_t dtype,
                       void *recvbuf, const int64_t *recvcounts, int root) {
  SUBMIT_AND_WAIT(hv_gatherv_async(comm, name, sendbuf, sendcount, dtype, recvbuf, recvcounts, root, &h_));
}
hv_result_t hv_scatter(hv_comm_t *comm, const char *name, const void *sendbuf, void *recvbuf, size_t count,
                       hv_dtype_t dtype, int root) {
  SUBMIT_AND_WAIT(hv_scatter_async(comm, name, sendbuf, recvbuf, count, dtype, root, &h_));
}
hv_result_t hv_scatterv(hv_comm_t *comm, const char *name, const void *sendbuf, const int64_t *sendcounts,
                        hv_dtype_t dtype, void *recvbuf, size_t recvcount, int root) {
  SUBMIT_AND_WAIT(hv_scatterv_async(comm, name, sendbuf, sendcounts, dtype, recvbuf, recvcount, root, &h_));
}
hv_result_t hv_send(hv_comm_t *comm, const char *name, const void *buf, size_t count, hv_dtype_t dtype, int dest) {
  SUBMIT_AND_WAIT(hv_send_async(comm, name, buf, count, dtype, dest, &h_));
}
hv_result_t hv_recv(hv_comm_t *comm, const char *name, void *buf, size_t count, hv_dtype_t dtype, int src) {
  SUBMIT_AND_WAIT(hv_recv_async(comm, name, buf, count, dtype, src, &h_));
}

/* hv_join's request (join.c): a barrier named "hv.join" whose root marks it, which the
 * coordinator reads as "this rank has joined". */
hv_result_t hv__join_submit(hv_comm_t *comm, hv_handle_t *handle) {
  struct hv_handle *h = new_handle(comm, HV__JOIN_NAME, HV__COLL_BARRIER, HV_UINT8, 0);
  if (h) h->meta.root = HV__JOIN_ROOT;
  return submit(comm, h, handle);
}

/* A joined rank's stand-in for a request it never submitted (join.c fills it). */
struct hv_handle *hv__handle_new(hv_comm_t *comm, const char *name, const hv__meta_t *meta) {
  struct hv_handle *h = new_handle(comm, name, (hv__coll_t)meta->coll, (hv_dtype_t)meta->dtype, meta->count);
  if (h) h->meta = *meta;
  return h;
}
