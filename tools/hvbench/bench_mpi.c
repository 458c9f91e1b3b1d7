/* bench_mpi.c: the peer: the MPI library's own collectives on the same buffers, on a
 * duplicate of the job's communicator so no message can match hvbench's bookkeeping.
 * With --tensors K the peer makes K separate blocking calls: that is what a trainer
 * without fusion would do, and the comparison the engine has to win.
 * MPI has no average: the peer sums, then scales its result, and that time counts. */
#include <stdio.h>
#include <stdlib.h>

#include "hvbench.h"

typedef struct mpi_state {
  MPI_Comm comm;
  int nranks;
  int *counts, *displs; /* MPI_Alltoallv's, nranks entries each */
} mpi_state_t;

static int mpi_fail(int code, const char *what, char *err, size_t err_len) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  snprintf(err, err_len, "%s failed: %s", what, text);
  return -1;
}

/* recv[k] /= n for float dtypes (MPI's stand-in for HV_AVERAGE). */
static void mpi_average(const bench_case_t *c, void *buf, size_t elems) {
  double inv = 1.0 / c->nranks;
  if (c->dtype == HV_FLOAT32) {
    float *f = buf;
    for (size_t k = 0; k < elems; k++) f[k] = (float)(f[k] * inv);
  } else if (c->dtype == HV_FLOAT64) {
    double *d = buf;
    for (size_t k = 0; k < elems; k++) d[k] *= inv;
  } else {
    for (size_t k = 0; k < elems; k++)
      dtype_store(buf, c->dtype, k, dtype_load(buf, c->dtype, k) * inv);
  }
}

static int mpi_run(bench_backend_t *self, const bench_case_t *c, bench_buffers_t *b,
                   int in_place, char *err, size_t err_len) {
  mpi_state_t *st = self->state;
  MPI_Datatype dt = dtype_mpi(c->dtype);
  MPI_Op op = dtype_mpi_op(c->dtype, c->op);
  /* Counts above INT_MAX would need derived datatypes; the sizes hvbench sweeps on one
   * node stay far below. */
  int pc = (int)c->param_count;
  for (int t = 0; t < c->tensors; t++) {
    void *recv = b->recv[t];
    const void *send = in_place ? MPI_IN_PLACE : b->send[t];
    int rc = MPI_SUCCESS;
    switch (c->coll) {
    case BENCH_ALLREDUCE:
      rc = MPI_Allreduce(send, recv, pc, dt, op, st->comm);
      if (rc == MPI_SUCCESS && c->op == HV_AVERAGE) mpi_average(c, recv, c->recv_elems);
      break;
    case BENCH_ALLGATHER:
      rc = MPI_Allgather(send, pc, dt, recv, pc, dt, st->comm);
      break;
    case BENCH_BROADCAST:
      rc = MPI_Bcast(recv, pc, dt, c->root, st->comm);
      break;
    case BENCH_REDUCESCATTER:
      rc = MPI_Reduce_scatter_block(send, recv, pc, dt, op, st->comm);
      if (rc == MPI_SUCCESS && c->op == HV_AVERAGE) mpi_average(c, recv, c->recv_elems);
      break;
    case BENCH_ALLTOALL:
      rc = MPI_Alltoall(send, pc, dt, recv, pc, dt, st->comm);
      break;
    case BENCH_ALLTOALLV:
      for (int q = 0; q < st->nranks; q++) st->counts[q] = pc, st->displs[q] = q * pc;
      rc = MPI_Alltoallv(send, st->counts, st->displs, dt, recv, st->counts, st->displs, dt, st->comm);
      break;
    case BENCH_REDUCE:
      rc = MPI_Reduce(send, recv, pc, dt, op, c->root, st->comm);
      if (rc == MPI_SUCCESS && c->op == HV_AVERAGE && c->rank == c->root) mpi_average(c, recv, c->recv_elems);
      break;
    case BENCH_GATHER:
      rc = MPI_Gather(send, pc, dt, recv, pc, dt, c->root, st->comm);
      break;
    case BENCH_SCATTER:
      rc = MPI_Scatter(send, pc, dt, recv, pc, dt, c->root, st->comm);
      break;
    case BENCH_SENDRECV: {
      int to = (c->rank + 1) % st->nranks, from = (c->rank + st->nranks - 1) % st->nranks;
      rc = MPI_Sendrecv(send, pc, dt, to, 0, recv, pc, dt, from, 0, st->comm, MPI_STATUS_IGNORE);
      break;
    }
    default: break;
    }
    if (rc != MPI_SUCCESS) return mpi_fail(rc, coll_name(c->coll), err, err_len);
  }
  return 0;
}

/* The placements hv offers, so both sides of the table measure the same thing. */
static int mpi_supports(const bench_backend_t *self, const bench_case_t *c, int in_place) {
  (void)self;
  switch (c->coll) {
  case BENCH_ALLREDUCE:
  case BENCH_ALLGATHER: return 1;
  case BENCH_BROADCAST: return in_place;
  default: return !in_place;
  }
}

static void mpi_destroy(bench_backend_t *self) {
  mpi_state_t *st = self->state;
  if (st) {
    MPI_Comm_free(&st->comm);
    free(st->counts);
    free(st->displs);
    free(st);
  }
  self->state = NULL;
}

int mpi_backend_create(bench_backend_t *be, MPI_Comm world) {
  mpi_state_t *st = calloc(1, sizeof(*st));
  if (!st) return -1;
  MPI_Comm_dup(world, &st->comm);
  MPI_Comm_size(st->comm, &st->nranks);
  st->counts = calloc((size_t)st->nranks, sizeof(int));
  st->displs = calloc((size_t)st->nranks, sizeof(int));
  if (!st->counts || !st->displs) {
    MPI_Comm_free(&st->comm);
    free(st->counts);
    free(st->displs);
    free(st);
    return -1;
  }
  int len = 0;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  MPI_Get_library_version(lib, &len);
  for (int i = 0; i < len; i++)
    if (lib[i] == '\n' || lib[i] == ',') {
      lib[i] = '\0';
      break;
    }
  snprintf(be->name, sizeof(be->name), "mpi");
  snprintf(be->detail, sizeof(be->detail), "the MPI library's own collective (%.60s)", lib);
  be->is_peer = 1;
  be->algo = BENCH_ALGO_MPI;
  be->state = st;
  be->run = mpi_run;
  be->supports = mpi_supports;
  be->destroy = mpi_destroy;
  return 0;
}
