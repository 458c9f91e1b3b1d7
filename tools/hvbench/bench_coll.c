/* bench_coll.c: how each collective lays out its buffers and counts bandwidth, exactly
 * as nccl-tests does (its src/ per-collective files and doc/PERFORMANCE.md):
 *   collective     size column              param count   busbw factor
 *   allreduce      count * esize            count         2(n-1)/n
 *   allgather      n * sendcount * esize    sendcount     (n-1)/n
 *   broadcast      count * esize            count         1
 *   reducescatter  n * recvcount * esize    recvcount     (n-1)/n
 *   alltoall       n * blockcount * esize   blockcount    (n-1)/n
 *   alltoallv      as alltoall (equal splits)               (n-1)/n
 *   reduce         count * esize            count         1
 *   gather         n * sendcount * esize    sendcount     (n-1)/n
 *   scatter        n * recvcount * esize    recvcount     (n-1)/n
 *   sendrecv       count * esize            count         1
 * algbw = size / time; busbw = algbw * factor, so busbw is comparable across rank
 * counts and with the hardware's peak. Unlike nccl-tests, a size that does not divide
 * is an error rather than silently rounded down, so the size column is what moved. */
#include <stdio.h>

#include "hvbench.h"

int coll_is_reducing(bench_coll_t coll) {
  return coll == BENCH_ALLREDUCE || coll == BENCH_REDUCESCATTER || coll == BENCH_REDUCE;
}

int coll_has_root(bench_coll_t coll) {
  return coll == BENCH_BROADCAST || coll == BENCH_REDUCE || coll == BENCH_GATHER || coll == BENCH_SCATTER;
}

double coll_busbw_factor(bench_coll_t coll, int nranks) {
  double n = (double)nranks;
  switch (coll) {
  case BENCH_ALLREDUCE: return 2.0 * (n - 1.0) / n;
  case BENCH_BROADCAST:
  case BENCH_REDUCE:
  case BENCH_SENDRECV: return 1.0;
  default: return (n - 1.0) / n;
  }
}

int coll_layout(bench_case_t *c, size_t bytes, char *err, size_t err_len) {
  size_t esize = dtype_size(c->dtype);
  size_t n = (size_t)c->nranks;
  int split = c->coll == BENCH_ALLGATHER || c->coll == BENCH_REDUCESCATTER ||
              c->coll == BENCH_ALLTOALL || c->coll == BENCH_ALLTOALLV || c->coll == BENCH_GATHER ||
              c->coll == BENCH_SCATTER;
  size_t unit = split ? n * esize : esize;
  if (bytes % unit != 0) {
    if (split)
      snprintf(err, err_len,
               "size %zu B does not divide into %zu ranks x %zu-byte %s elements for %s: "
               "choose sizes that are multiples of %zu",
               bytes, n, esize, dtype_short_name(c->dtype), coll_name(c->coll), unit);
    else
      snprintf(err, err_len, "size %zu B is not a multiple of the %zu-byte %s element", bytes,
               esize, dtype_short_name(c->dtype));
    return -1;
  }
  c->bytes = bytes;
  c->count = bytes / esize;
  c->param_count = split ? c->count / n : c->count;
  switch (c->coll) {
  case BENCH_ALLREDUCE:
  case BENCH_BROADCAST:
    c->send_elems = c->recv_elems = c->count;
    break;
  case BENCH_ALLGATHER:
    c->send_elems = c->param_count;
    c->recv_elems = c->count;
    break;
  case BENCH_REDUCESCATTER:
    c->send_elems = c->count;
    c->recv_elems = c->param_count;
    break;
  case BENCH_ALLTOALL:
  case BENCH_ALLTOALLV:
  case BENCH_SENDRECV:
    c->send_elems = c->recv_elems = c->count;
    break;
  /* The root's buffer only is the whole; the others' is not used. */
  case BENCH_REDUCE:
    c->send_elems = c->count;
    c->recv_elems = c->rank == c->root ? c->count : 0;
    break;
  case BENCH_GATHER:
    c->send_elems = c->param_count;
    c->recv_elems = c->rank == c->root ? c->count : 0;
    break;
  case BENCH_SCATTER:
    c->send_elems = c->rank == c->root ? c->count : 0;
    c->recv_elems = c->param_count;
    break;
  default: break;
  }
  return 0;
}

void coll_bandwidth(const bench_case_t *c, double seconds, double *algbw, double *busbw) {
  /* With --tensors K, one iteration moves K buffers of the size. */
  double moved = (double)c->bytes * (double)c->tensors;
  *algbw = seconds > 0 ? moved / 1.0e9 / seconds : 0.0;
  *busbw = *algbw * coll_busbw_factor(c->coll, c->nranks);
}
