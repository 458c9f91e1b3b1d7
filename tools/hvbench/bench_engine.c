/* bench_engine.c: hv through its engine (tensor queue, negotiation, fusion, then the
 * algorithm), one communicator per algorithm. The engine reads HV_ALLREDUCE_ALGO when a
 * communicator is created, so hvbench sets it just around hv_init_from_mpi() and puts
 * the user's value back: several communicators may then coexist, each forced to its
 * algorithm. One tensor goes through the call's blocking form; with --tensors K the K
 * requests are submitted asynchronously in one hv group so the engine sees them in the
 * same cycle and fuses them, as a DDP bucket would; with --grouped too, the K tensors
 * are one hv_grouped_allreduce (one name and one handle for all of them). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv_mpi.h"
#include "hvbench.h"

enum { NAME_LEN = 96 };

typedef struct engine_state {
  hv_comm_t *comm;
  int rank, nranks;
  int64_t *splits;      /* [nranks]: alltoallv's (equal) splits */
  hv_handle_t *handles; /* [2 * tensors]: sendrecv has two a tensor */
  hv_tensor_t *list;    /* [tensors]: --grouped */
  char (*names)[NAME_LEN];
  char (*recv_names)[NAME_LEN]; /* sendrecv: the name of the pair this rank receives */
  int cap;
  char signature[NAME_LEN]; /* the case the names were made for */
} engine_state_t;

static int engine_fail(engine_state_t *st, hv_result_t rc, const char *what, char *err,
                       size_t err_len) {
  return bench_hv_error(st ? st->comm : NULL, rc, what, err, err_len);
}

/* Names are part of the contract (same name, same shape on every rank) and feed the
 * response cache, so they are made once per case, outside the timed loop. */
static int engine_prepare(engine_state_t *st, const bench_case_t *c, int in_place) {
  char sig[NAME_LEN];
  snprintf(sig, sizeof(sig), "hvbench/%s/%s/%s/%zu/%s", coll_name(c->coll),
           dtype_short_name(c->dtype), op_short_name(c->op), c->param_count,
           in_place ? "ip" : "oop");
  if (c->tensors > st->cap) {
    free(st->handles);
    free(st->names);
    free(st->list);
    free(st->recv_names);
    st->handles = calloc(2 * (size_t)c->tensors, sizeof(*st->handles));
    st->names = calloc((size_t)c->tensors, sizeof(*st->names));
    st->recv_names = calloc((size_t)c->tensors, sizeof(*st->recv_names));
    st->list = calloc((size_t)c->tensors, sizeof(*st->list));
    st->cap = st->handles && st->names && st->list && st->recv_names ? c->tensors : 0;
    st->signature[0] = '\0';
    if (st->cap == 0) return -1;
  }
  if (strcmp(sig, st->signature) != 0) {
    for (int t = 0; t < c->tensors; t++) snprintf(st->names[t], NAME_LEN, "%.80s/%d", sig, t);
    /* A send/recv pair is named by its sender: rank r sends "…/from<r>", receives
     * "…/from<r-1>". */
    if (c->coll == BENCH_SENDRECV)
      for (int t = 0; t < c->tensors; t++) {
        snprintf(st->recv_names[t], NAME_LEN, "%.60s/%d/from%d", sig, t, (st->rank + st->nranks - 1) % st->nranks);
        snprintf(st->names[t], NAME_LEN, "%.60s/%d/from%d", sig, t, st->rank);
      }
    memcpy(st->signature, sig, sizeof(sig));
  }
  return 0;
}

/* blocking: the call's blocking form, as a program with one tensor at a time calls
 * it (hv may then run the request on this thread, engine_inline.c); otherwise
 * submitted asynchronously into st->handles[t]. */
static hv_result_t engine_submit(engine_state_t *st, const bench_case_t *c, bench_buffers_t *b,
                                 int in_place, int t, int blocking) {
  void *recv = b->recv[t];
  const void *send = data_input_ptr(c, b, t, in_place);
  const char *name = st->names[t];
  hv_handle_t *h = &st->handles[t];
  switch (c->coll) {
  case BENCH_ALLREDUCE: {
    hv_allreduce_opts_t opts = HV_ALLREDUCE_OPTS_INIT;
    opts.compression = c->compression;
    return blocking ? hv_allreduce(st->comm, name, send, recv, c->param_count, c->dtype, c->op, &opts)
                    : hv_allreduce_async(st->comm, name, send, recv, c->param_count, c->dtype, c->op, &opts, h);
  }
  case BENCH_ALLGATHER:
    return blocking ? hv_allgather(st->comm, name, send, recv, c->param_count, c->dtype)
                    : hv_allgather_async(st->comm, name, send, recv, c->param_count, c->dtype, h);
  case BENCH_BROADCAST:
    return blocking ? hv_broadcast(st->comm, name, recv, c->param_count, c->dtype, c->root)
                    : hv_broadcast_async(st->comm, name, recv, c->param_count, c->dtype, c->root, h);
  case BENCH_REDUCESCATTER:
    return blocking ? hv_reducescatter(st->comm, name, send, recv, c->param_count, c->dtype, c->op)
                    : hv_reducescatter_async(st->comm, name, send, recv, c->param_count, c->dtype, c->op, h);
  case BENCH_ALLTOALL:
    return blocking ? hv_alltoall(st->comm, name, send, recv, c->param_count, c->dtype)
                    : hv_alltoall_async(st->comm, name, send, recv, c->param_count, c->dtype, h);
  case BENCH_ALLTOALLV:
    for (int q = 0; q < st->nranks; q++) st->splits[q] = (int64_t)c->param_count;
    return blocking ? hv_alltoallv(st->comm, name, send, c->count, st->splits, c->dtype, recv, c->count, st->splits)
                    : hv_alltoallv_async(st->comm, name, send, c->count, st->splits, c->dtype, recv, c->count,
                                         st->splits, h);
  case BENCH_REDUCE:
    return blocking ? hv_reduce(st->comm, name, send, recv, c->param_count, c->dtype, c->op, c->root)
                    : hv_reduce_async(st->comm, name, send, recv, c->param_count, c->dtype, c->op, c->root, h);
  case BENCH_GATHER:
    return blocking ? hv_gather(st->comm, name, send, recv, c->param_count, c->dtype, c->root)
                    : hv_gather_async(st->comm, name, send, recv, c->param_count, c->dtype, c->root, h);
  case BENCH_SCATTER:
    return blocking ? hv_scatter(st->comm, name, send, recv, c->param_count, c->dtype, c->root)
                    : hv_scatter_async(st->comm, name, send, recv, c->param_count, c->dtype, c->root, h);
  case BENCH_SENDRECV: {
    /* Always both halves asynchronously: a blocking send would wait for the receive
     * that this rank submits next. Handles t (send) and tensors + t (receive). */
    int to = (st->rank + 1) % st->nranks, from = (st->rank + st->nranks - 1) % st->nranks;
    hv_result_t rc = hv_send_async(st->comm, name, send, c->param_count, c->dtype, to, h);
    if (rc != HV_SUCCESS) return rc;
    return hv_recv_async(st->comm, st->recv_names[t], recv, c->param_count, c->dtype, from, &st->handles[c->tensors + t]);
  }
  default: return HV_ERR_INVALID_ARGUMENT;
  }
}

static int engine_run(bench_backend_t *self, const bench_case_t *c, bench_buffers_t *b,
                      int in_place, char *err, size_t err_len) {
  engine_state_t *st = self->state;
  if (engine_prepare(st, c, in_place) != 0) {
    snprintf(err, err_len, "out of memory for %d handles", c->tensors);
    return -1;
  }
  hv_result_t rc;
  if (c->grouped) {
    for (int t = 0; t < c->tensors; t++)
      st->list[t] = (hv_tensor_t){data_input_ptr(c, b, t, in_place), b->recv[t], c->param_count};
    hv_allreduce_opts_t opts = HV_ALLREDUCE_OPTS_INIT;
    opts.compression = c->compression;
    rc = hv_grouped_allreduce(st->comm, st->names[0], st->list, (size_t)c->tensors, c->dtype, c->op, &opts);
    return rc == HV_SUCCESS ? 0 : engine_fail(st, rc, st->names[0], err, err_len);
  }
  if (c->tensors == 1 && c->coll != BENCH_SENDRECV) {
    rc = engine_submit(st, c, b, in_place, 0, 1);
    return rc == HV_SUCCESS ? 0 : engine_fail(st, rc, st->names[0], err, err_len);
  }
  if ((rc = hv_group_start(st->comm)) != HV_SUCCESS) return engine_fail(st, rc, "hv_group_start", err, err_len);
  for (int t = 0; t < c->tensors; t++) {
    rc = engine_submit(st, c, b, in_place, t, 0);
    if (rc != HV_SUCCESS) {
      char what[NAME_LEN + 32];
      snprintf(what, sizeof(what), "submitting %s", st->names[t]);
      return engine_fail(st, rc, what, err, err_len);
    }
  }
  if ((rc = hv_group_end(st->comm)) != HV_SUCCESS) return engine_fail(st, rc, "hv_group_end", err, err_len);
  rc = hv_wait_all(st->handles, (size_t)c->tensors * (c->coll == BENCH_SENDRECV ? 2 : 1));
  if (rc != HV_SUCCESS) return engine_fail(st, rc, st->names[0], err, err_len);
  return 0;
}

/* hv's placements: reducescatter and alltoall are out-of-place only, broadcast is
 * in-place only (hv.h). */
static int engine_supports(const bench_backend_t *self, const bench_case_t *c, int in_place) {
  (void)self;
  switch (c->coll) {
  case BENCH_ALLREDUCE:
  case BENCH_ALLGATHER: return 1;
  case BENCH_BROADCAST: return in_place;
  default: return !in_place;
  }
}

static void engine_destroy(bench_backend_t *self) {
  engine_state_t *st = self->state;
  if (!st) return;
  hv_result_t rc = hv_shutdown(st->comm);
  if (rc != HV_SUCCESS)
    fprintf(stderr, "hvbench: hv_shutdown (%s): %s\n", self->name, hv_strerror(rc));
  free(st->handles);
  free(st->names);
  free(st->recv_names);
  free(st->splits);
  free(st->list);
  free(st);
  self->state = NULL;
}

int engine_backend_create(bench_backend_t *be, bench_coll_t coll, bench_algo_t algo,
                          MPI_Comm world, char *err, size_t err_len) {
  engine_state_t *st = calloc(1, sizeof(*st));
  if (!st) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  /* Force the algorithm for this communicator only, then restore the user's setting. */
  const char *old = getenv("HV_ALLREDUCE_ALGO");
  char *saved = old ? strdup(old) : NULL;
  if (coll == BENCH_ALLREDUCE) setenv("HV_ALLREDUCE_ALGO", algo_name(algo), 1);
  MPI_Comm_rank(world, &st->rank);
  MPI_Comm_size(world, &st->nranks);
  st->splits = calloc((size_t)st->nranks, sizeof(int64_t));
  if (!st->splits) {
    snprintf(err, err_len, "out of memory");
    free(st);
    return -1;
  }
  hv_result_t rc = hv_init_from_mpi(world, &st->comm);
  if (coll == BENCH_ALLREDUCE) {
    if (saved) setenv("HV_ALLREDUCE_ALGO", saved, 1);
    else unsetenv("HV_ALLREDUCE_ALGO");
  }
  free(saved);
  if (rc != HV_SUCCESS) {
    engine_fail(NULL, rc, "hv_init_from_mpi", err, err_len);
    free(st->splits);
    free(st);
    return -1;
  }
  snprintf(be->name, sizeof(be->name), "hv:%s", algo_name(algo));
  if (coll == BENCH_ALLREDUCE)
    snprintf(be->detail, sizeof(be->detail),
             "hv engine (queue, negotiation, fusion), HV_ALLREDUCE_ALGO=%s", algo_name(algo));
  else
    snprintf(be->detail, sizeof(be->detail), "hv engine (queue, negotiation, fusion)");
  be->is_peer = 0;
  be->algo = algo;
  be->state = st;
  be->run = engine_run;
  be->supports = engine_supports;
  be->destroy = engine_destroy;
  return 0;
}
