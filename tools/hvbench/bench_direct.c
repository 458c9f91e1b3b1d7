/* bench_direct.c: --no-engine: one hv allreduce algorithm run directly on the calling
 * thread through hv_bench_allreduce_algorithm() (collectives/hv_internal_bench.h),
 * without the tensor queue, negotiation or fusion. Set beside the engine's table for
 * the same algorithm, it shows what the engine adds.
 * The entry point is in-place, so out-of-place copies the input into the output first
 * (timed: the engine's fusion buffer costs the same copy), and it reduces AVERAGE as
 * SUM, so hvbench divides afterwards (also timed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv_internal_bench.h"
#include "hv_mpi.h"
#include "hvbench.h"

typedef struct direct_state {
  hv_comm_t *comm;
} direct_state_t;

/* recv[k] /= n, as the engine's unpack does for HV_AVERAGE. */
static void direct_average(const bench_case_t *c, void *buf, size_t elems) {
  double inv = 1.0 / c->nranks;
  if (c->dtype == HV_FLOAT32) {
    float *f = buf;
    for (size_t k = 0; k < elems; k++) f[k] = (float)(f[k] * inv);
  } else {
    for (size_t k = 0; k < elems; k++)
      dtype_store(buf, c->dtype, k, dtype_load(buf, c->dtype, k) * inv);
  }
}

static int direct_run(bench_backend_t *self, const bench_case_t *c, bench_buffers_t *b,
                      int in_place, char *err, size_t err_len) {
  direct_state_t *st = self->state;
  for (int t = 0; t < c->tensors; t++) {
    /* (A simulated timing run's shared buffers hold nothing worth copying.) */
    if (!in_place && !b->shared) memcpy(b->recv[t], b->send[t], b->recv_bytes);
    hv_result_t rc = hv_bench_allreduce_algorithm(st->comm, algo_name(self->algo), b->recv[t],
                                                  c->param_count, c->dtype, c->op);
    if (rc != HV_SUCCESS) {
      char what[64];
      snprintf(what, sizeof(what), "hv_bench_allreduce_algorithm(%s)", algo_name(self->algo));
      return bench_hv_error(st->comm, rc, what, err, err_len);
    }
    if (c->op == HV_AVERAGE) direct_average(c, b->recv[t], c->recv_elems);
  }
  return 0;
}

static int direct_supports(const bench_backend_t *self, const bench_case_t *c, int in_place) {
  (void)self;
  (void)in_place;
  return c->coll == BENCH_ALLREDUCE;
}

static void direct_destroy(bench_backend_t *self) {
  direct_state_t *st = self->state;
  if (!st) return;
  hv_result_t rc = hv_shutdown(st->comm);
  if (rc != HV_SUCCESS)
    fprintf(stderr, "hvbench: hv_shutdown (%s): %s\n", self->name, hv_strerror(rc));
  free(st);
  self->state = NULL;
}

int direct_backend_create(bench_backend_t *be, bench_algo_t algo, MPI_Comm world, char *err,
                          size_t err_len) {
  direct_state_t *st = calloc(1, sizeof(*st));
  if (!st) return bench_out_of_memory(err, err_len);
  if (bench_hv_open(world, &st->comm, err, err_len)) {
    free(st);
    return -1;
  }
  snprintf(be->name, sizeof(be->name), "alg:%s", algo_name(algo));
  snprintf(be->detail, sizeof(be->detail),
           "hv's %s allreduce alone (no queue, negotiation or fusion)", algo_name(algo));
  be->is_peer = 0;
  be->algo = algo;
  be->state = st;
  be->run = direct_run;
  be->supports = direct_supports;
  be->destroy = direct_destroy;
  return 0;
}
