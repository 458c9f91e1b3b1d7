/* staged_allreduce_host.c: the pipelined host staging of GPU allreduce across nodes
 * (collectives/staged_allreduce.c), run on host memory under mpirun. The copier
 * behaves like an asynchronous one: a copy happens only when it is waited for, so a
 * chunk read before its copy to the host was waited for, or a slot reused before its
 * copy back was, gives wrong values; reusing a slot with a copy still pending is
 * reported directly. Exact results for sums, maxima and averages of small integers in
 * float32, int32, float16 and float64, for counts of 0 to 100003 elements and slots
 * holding from 3 elements to the whole buffer (3-element slots up to 1000 elements).
 * The staging runs on an algorithm host of its own (algo/host.h): it needs nothing of
 * the engine. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "hv_mpi.h"
#include "staged_allreduce.h"
#include "test_mpi.h"
#include "test_util.h"

static int R, N;
static char last_error[1024];

static void record_error(void *owner, const char *detail) {
  (void)owner;
  snprintf(last_error, sizeof last_error, "%s", detail);
}

typedef struct pending {
  void *dst;
  const void *src;
  size_t bytes;
  int busy;
} pending_t;

typedef struct deferred {
  pending_t in[HV__STAGE_SLOTS], out[HV__STAGE_SLOTS];
} deferred_t;

static hv_result_t start(pending_t *p, void *dst, const void *src, size_t bytes) {
  CHECK(!p->busy, "a staging slot was given a new copy before its last one was waited for");
  *p = (pending_t){dst, src, bytes, 1};
  return HV_SUCCESS;
}

static hv_result_t finish(pending_t *p) {
  if (p->busy && p->bytes) memcpy(p->dst, p->src, p->bytes);
  p->busy = 0;
  return HV_SUCCESS;
}

static hv_result_t to_host(void *ctx, int slot, void *host, const void *src, size_t bytes) {
  return start(&((deferred_t *)ctx)->in[slot], host, src, bytes);
}
static hv_result_t to_host_wait(void *ctx, int slot) { return finish(&((deferred_t *)ctx)->in[slot]); }
static hv_result_t to_buffer(void *ctx, int slot, void *dst, const void *host, size_t bytes) {
  return start(&((deferred_t *)ctx)->out[slot], dst, host, bytes);
}
static hv_result_t to_buffer_wait(void *ctx, int slot) { return finish(&((deferred_t *)ctx)->out[slot]); }

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &R, &N);
  hv_comm_t *comm = NULL;
  CHECK_RC(hv_init_from_mpi(MPI_COMM_WORLD, &comm));
  test_comm = comm;
  MPI_Comm mpi;
  MPI_Comm_dup(MPI_COMM_WORLD, &mpi);
  hv__algo_host_t host;
  hv__algo_host_defaults(&host);
  host.rank = host.errors.rank = R;
  host.errors.record = record_error;
  host.timeout_s = 60;
  const size_t counts[] = {0, 1, 5, 1000, 100003};
  const hv_dtype_t dtypes[] = {HV_FLOAT32, HV_INT32, HV_FLOAT16, HV_FLOAT64};
  const hv_op_t ops[] = {HV_SUM, HV_MAX, HV_AVERAGE};
  for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
    for (size_t di = 0; di < sizeof dtypes / sizeof *dtypes; di++)
      for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++) {
        const size_t count = counts[ci], es = hv_dtype_size(dtypes[di]);
        const hv_op_t op = ops[oi];
        if (op == HV_AVERAGE && dtypes[di] == HV_INT32) continue;
        const size_t slot_sizes[] = {3 * es, 64 * es + 8, 4096, count * es + es};
        for (size_t si = 0; si < sizeof slot_sizes / sizeof *slot_sizes; si++) {
          const size_t slot = slot_sizes[si];
          /* 100003 elements in 3-element slots are 33,335 chunks, each an MPI
           * allreduce: most of the test's time (a minute under AddressSanitizer) for
           * what 1000 elements in the same slots (334 chunks) already cover. */
          if (count > 1000 && slot == 3 * es) continue;
          char *buf = malloc(count * es + 1), *staging = malloc(HV__STAGE_SLOTS * slot);
          for (size_t i = 0; i < count; i++) elem_set(buf, dtypes[di], i, test_input(op, R, i, N));
          deferred_t d;
          memset(&d, 0, sizeof d);
          hv__stage_copier_t cp = {&d, to_host, to_host_wait, to_buffer, to_buffer_wait};
          hv_result_t rc = hv__staged_allreduce(&host, mpi, &cp, buf, count, dtypes[di], op == HV_AVERAGE ? HV_SUM : op,
                                                op == HV_AVERAGE ? N : 0, staging, slot);
          CHECK(rc == HV_SUCCESS, "hv__staged_allreduce: %s", last_error);
          for (int s = 0; s < HV__STAGE_SLOTS; s++) CHECK(!d.in[s].busy && !d.out[s].busy, "copies left unwaited");
          CHECK_ELEMENTS(buf, dtypes[di], count, test_expected(op, i, N), "staged %s %s count %zu slot %zu bytes rank %d",
                         hv_dtype_name(dtypes[di]), hv_op_name(op), count, slot, R);
          free(buf);
          free(staging);
        }
      }
  MPI_Comm_free(&mpi);
  CHECK_RC(hv_shutdown(comm));
  return test_mpi_finish("staged_allreduce_host", R, N);
}
