/* mpi_errors.c: errors are delivered, never hung on.
 *  - the same name with a different count, dtype, op or root on one rank fails that
 *    handle on every rank with HV_ERR_MISMATCH naming the tensor, both ranks and both
 *    values, also when the name was already in the response cache;
 *  - invalid arguments fail at the call; a name pending twice is refused;
 *  - a tensor that one rank never submits: the stall inspector warns (checked by the
 *    CTest regex on stderr) and HV_STALL_SHUTDOWN_TIME fails it on the others;
 *  - the engine keeps working after every one of these. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "hv_mpi.h"
#include "test_mpi.h"
#include "test_util.h"

static int R, N;

static void expect_mismatch(hv_comm_t *comm, const char *name, hv_result_t rc, const char *what) {
  const char *msg = hv_comm_last_error(comm);
  CHECK(rc == HV_ERR_MISMATCH, "%s: expected HV_ERR_MISMATCH, got %s", name, hv_strerror(rc));
  CHECK(strstr(msg, name) && strstr(msg, what) && strstr(msg, "rank 0") && strstr(msg, "rank 1"),
        "%s: message should name the tensor, '%s' and both ranks: '%s'", name, what, msg);
}

static void still_works(hv_comm_t *comm, const char *tag) {
  int v = R + 1;
  CHECK_RC(hv_allreduce(comm, tag, &v, &v, 1, HV_INT32, HV_SUM, NULL));
  CHECK(v == N * (N + 1) / 2, "%s: engine broken after error: %d", tag, v);
}

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &R, &N);
  /* Uneven ranks per node (2 + 1 with 3 ranks) with hierarchical forced: refused at
   * init, before any collective, with a message; accepted when the nodes are even. */
  setenv("HV_RANKS_PER_NODE", "2", 1);
  setenv("HV_HIERARCHICAL_ALLREDUCE", "1", 1);
  hv_comm_t *uneven = NULL;
  hv_result_t init_rc = hv_init_from_mpi(MPI_COMM_WORLD, &uneven);
  if (N % 2)
    CHECK(init_rc == HV_ERR_UNSUPPORTED && strstr(hv_comm_last_error(NULL), "from 1 to 2 ranks"),
          "uneven nodes with forced hierarchical: %s / %s", hv_strerror(init_rc), hv_comm_last_error(NULL));
  else
    CHECK(init_rc == HV_SUCCESS, "even nodes: %s", hv_comm_last_error(NULL));
  hv_shutdown(uneven);
  unsetenv("HV_RANKS_PER_NODE");
  unsetenv("HV_HIERARCHICAL_ALLREDUCE");
  setenv("HV_STALL_CHECK_TIME", "1", 1);
  setenv("HV_STALL_SHUTDOWN_TIME", "3", 1);
  hv_comm_t *comm;
  if (hv_init_from_mpi(MPI_COMM_WORLD, &comm) != HV_SUCCESS) {
    fprintf(stderr, "init failed: %s\n", hv_comm_last_error(NULL));
    return 1;
  }
  test_comm = comm;
  float x[64] = {0};
  double d[64] = {0};
  hv_handle_t h;

  /* Mismatched count, first time (coordinator path). */
  hv_result_t rc = hv_allreduce(comm, "mm.count", x, x, R == 1 ? 10 : 11, HV_FLOAT32, HV_SUM, NULL);
  expect_mismatch(comm, "mm.count", rc, "count");
  /* Mismatched dtype. */
  rc = R == 1 ? hv_allreduce(comm, "mm.dtype", d, d, 8, HV_FLOAT64, HV_SUM, NULL)
              : hv_allreduce(comm, "mm.dtype", x, x, 8, HV_FLOAT32, HV_SUM, NULL);
  expect_mismatch(comm, "mm.dtype", rc, "dtype");
  rc = hv_allreduce(comm, "mm.op", x, x, 8, HV_FLOAT32, R == 1 ? HV_MAX : HV_SUM, NULL);
  expect_mismatch(comm, "mm.op", rc, "op");
  rc = hv_broadcast(comm, "mm.root", x, 8, HV_FLOAT32, R == 1 ? 1 : 0);
  expect_mismatch(comm, "mm.root", rc, "root");
  rc = R == 1 ? hv_allgather(comm, "mm.coll", x, d, 1, HV_FLOAT32)
              : hv_allreduce(comm, "mm.coll", x, x, 1, HV_FLOAT32, HV_SUM, NULL);
  expect_mismatch(comm, "mm.coll", rc, "collective");
  /* A cached name whose count then changes on one rank. */
  for (int i = 0; i < 3; i++) CHECK_RC(hv_allreduce(comm, "mm.cached", x, x, 16, HV_FLOAT32, HV_SUM, NULL));
  rc = hv_allreduce(comm, "mm.cached", x, x, R == 1 ? 15 : 16, HV_FLOAT32, HV_SUM, NULL);
  expect_mismatch(comm, "mm.cached", rc, "count");
  CHECK_RC(hv_allreduce(comm, "mm.cached", x, x, 16, HV_FLOAT32, HV_SUM, NULL));
  still_works(comm, "after.mismatch");

  /* Invalid arguments fail at the call, naming the problem. */
  CHECK(hv_allreduce_async(comm, "bad.avg", x, x, 4, HV_INT32, HV_AVERAGE, NULL, &h) == HV_ERR_INVALID_ARGUMENT &&
            strstr(hv_comm_last_error(comm), "AVERAGE"), "average of int32: %s", hv_comm_last_error(comm));
  CHECK(hv_broadcast_async(comm, "bad.root", x, 4, HV_FLOAT32, N, &h) == HV_ERR_INVALID_ARGUMENT &&
            strstr(hv_comm_last_error(comm), "root"), "root out of range: %s", hv_comm_last_error(comm));
  CHECK(hv_allreduce_async(comm, "", x, x, 4, HV_FLOAT32, HV_SUM, NULL, &h) == HV_ERR_INVALID_ARGUMENT, "empty name");
  CHECK(hv_allreduce_async(comm, "bad.dtype", x, x, 4, (hv_dtype_t)42, HV_SUM, NULL, &h) == HV_ERR_INVALID_ARGUMENT, "bad dtype");
  CHECK(hv_allreduce_async(comm, "bad.null", NULL, NULL, 4, HV_FLOAT32, HV_SUM, NULL, &h) == HV_ERR_INVALID_ARGUMENT, "NULL buffers");
  CHECK(hv_alltoall_async(comm, "bad.overlap", x, x + 1, 4, HV_FLOAT32, &h) == HV_ERR_INVALID_ARGUMENT, "overlap");
  CHECK(hv_allreduce_async(NULL, "x", x, x, 4, HV_FLOAT32, HV_SUM, NULL, &h) == HV_ERR_INVALID_ARGUMENT, "NULL comm");
  /* Sizes whose product (count x ranks x element size) wraps size_t: refused, naming
   * the values, instead of a request that looks small (issue 27). `big` x N ranks x 4
   * bytes overflows while `big` x 4 alone does not. */
  {
    const size_t big = SIZE_MAX / 4 / (size_t)N + 1;
    char want[96];
    snprintf(want, sizeof want, "%zu elements x %d x 4 bytes (float32) overflows size_t", big, N);
    CHECK(hv_allgather_async(comm, "ovf.ag", x, d, big, HV_FLOAT32, &h) == HV_ERR_INVALID_ARGUMENT &&
              strstr(hv_comm_last_error(comm), want), "allgather overflow: %s", hv_comm_last_error(comm));
    CHECK(hv_reducescatter_async(comm, "ovf.rs", x, d, big, HV_FLOAT32, HV_SUM, &h) == HV_ERR_INVALID_ARGUMENT &&
              strstr(hv_comm_last_error(comm), want), "reducescatter overflow: %s", hv_comm_last_error(comm));
    CHECK(hv_alltoall_async(comm, "ovf.a2a", x, d, big, HV_FLOAT32, &h) == HV_ERR_INVALID_ARGUMENT &&
              strstr(hv_comm_last_error(comm), want), "alltoall overflow: %s", hv_comm_last_error(comm));
    const size_t huge = SIZE_MAX / 8 + 1; /* x 8 bytes wraps */
    snprintf(want, sizeof want, "%zu elements x 1 x 8 bytes (float64) overflows size_t", huge);
    CHECK(hv_broadcast_async(comm, "ovf.bc", d, huge, HV_FLOAT64, 0, &h) == HV_ERR_INVALID_ARGUMENT &&
              strstr(hv_comm_last_error(comm), want), "broadcast overflow: %s", hv_comm_last_error(comm));
    size_t counts[8];
    CHECK(hv_allgatherv_async(comm, "ovf.agv", d, huge, HV_FLOAT64, d, 64, counts, &h) == HV_ERR_INVALID_ARGUMENT &&
              strstr(hv_comm_last_error(comm), want), "allgatherv overflow: %s", hv_comm_last_error(comm));
  }
  /* A blocking call inside a group could never complete: refused, the group goes on. */
  CHECK_RC(hv_group_start(comm));
  CHECK(hv_allreduce(comm, "bad.group", x, x, 4, HV_FLOAT32, HV_SUM, NULL) == HV_ERR_INVALID_ARGUMENT &&
            strstr(hv_comm_last_error(comm), "group"), "blocking call in a group: %s", hv_comm_last_error(comm));
  CHECK_RC(hv_group_end(comm));

  /* A name pending twice on one rank is refused; the first still completes. The second
   * submission must happen while the first cannot have completed, so one rank holds each
   * name back until after a barrier: 'dup.a' by the last rank, 'dup.b' by rank 0. Every
   * rank but the last tries the duplicate on 'dup.a', the last one on 'dup.b'. */
  hv_handle_t first_a = NULL, first_b = NULL;
  if (R != N - 1) {
    CHECK_RC(hv_allreduce_async(comm, "dup.a", x, x, 4, HV_FLOAT32, HV_SUM, NULL, &first_a));
    CHECK(hv_allreduce_async(comm, "dup.a", x + 8, x + 8, 4, HV_FLOAT32, HV_SUM, NULL, &h) == HV_ERR_INVALID_ARGUMENT &&
              strstr(hv_comm_last_error(comm), "already pending"), "duplicate: %s", hv_comm_last_error(comm));
  }
  if (R != 0) {
    CHECK_RC(hv_allreduce_async(comm, "dup.b", x + 16, x + 16, 4, HV_FLOAT32, HV_SUM, NULL, &first_b));
    if (R == N - 1)
      CHECK(hv_allreduce_async(comm, "dup.b", x + 24, x + 24, 4, HV_FLOAT32, HV_SUM, NULL, &h) == HV_ERR_INVALID_ARGUMENT &&
                strstr(hv_comm_last_error(comm), "already pending"), "duplicate: %s", hv_comm_last_error(comm));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (R == N - 1) CHECK_RC(hv_allreduce_async(comm, "dup.a", x, x, 4, HV_FLOAT32, HV_SUM, NULL, &first_a));
  if (R == 0) CHECK_RC(hv_allreduce_async(comm, "dup.b", x + 16, x + 16, 4, HV_FLOAT32, HV_SUM, NULL, &first_b));
  CHECK_RC(hv_wait(first_a));
  CHECK_RC(hv_wait(first_b));

  /* allgatherv with too small a capacity on rank 1 only: that rank fails with the needed
   * size, the others complete. */
  size_t counts[64];
  float gathered[256];
  rc = hv_allgatherv(comm, "agv.capacity", x, 4, HV_FLOAT32, gathered, R == 1 ? 3 : 256, counts);
  if (R == 1)
    CHECK(rc == HV_ERR_INVALID_ARGUMENT && strstr(hv_comm_last_error(comm), "capacity"), "capacity: %s", hv_comm_last_error(comm));
  else
    CHECK(rc == HV_SUCCESS, "allgatherv: %s", hv_comm_last_error(comm));

  /* Stall: the last rank never submits 'lonely'. */
  if (R != N - 1) {
    double t0 = MPI_Wtime();
    rc = hv_allreduce(comm, "lonely", x, x, 4, HV_FLOAT32, HV_SUM, NULL);
    double waited = MPI_Wtime() - t0;
    CHECK(rc == HV_ERR_STALLED, "stalled tensor: expected HV_ERR_STALLED, got %s", hv_strerror(rc));
    CHECK(strstr(hv_comm_last_error(comm), "lonely") != NULL, "stall message: %s", hv_comm_last_error(comm));
    CHECK(waited >= 2.5 && waited < 30, "stall failed after %.1f s, expected about 3 s", waited);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  still_works(comm, "after.stall");

  CHECK_RC(hv_shutdown(comm));
  return test_mpi_finish("mpi_errors", R, N);
}
