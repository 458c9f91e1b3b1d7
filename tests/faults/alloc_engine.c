/* alloc_engine.c: the engine program of the out-of-memory sweep (issue 27,
 * tests/faults/alloc_sweep.sh engine). A few steps of what a trainer does with hv:
 * hv_init, then per step a hv_group_start/end of four small named allreduces (fused),
 * one larger allreduce, an allgather, a broadcast and a grouped allreduce (a bucket of
 * three tensors), all asynchronous and waited together; the same names every step, so
 * the later steps go through the response cache; then a barrier and hv_shutdown.
 * Results are checked exactly (small integers).
 *
 * Under HV_FAIL_ALLOC=K (libhv_alloc_faults.so) one allocation of hv fails somewhere
 * in that run. Whatever hv call sees the failure, this program does what a trainer
 * should: print one line
 *   FAILED rank=R <call>: <hv_strerror>: <hv_comm_last_error>
 * wait for what it had submitted, hv_shutdown (which tells the other ranks), free its
 * buffers and exit 3. The peers must then fail with a named error too (that rank shut
 * down, or is gone), never hang. A clean run prints "OK rank=R" and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"

enum { SMALL = 4, SMALL_COUNT = 37, LARGE_COUNT = 70000, GATHER_COUNT = 5, BCAST_COUNT = 300, STEPS = 3 };
enum { H_SMALL0, H_LARGE = SMALL, H_GATHER, H_BCAST, H_GROUPED, NHANDLES };

static int rank = -1, size;
static float *small[SMALL], *large, *gathered, *bcast, *bucket[3];
static int gather_in[GATHER_COUNT], *gather_out;

static void free_buffers(void) {
  for (int i = 0; i < SMALL; i++) free(small[i]);
  for (int i = 0; i < 3; i++) free(bucket[i]);
  free(large);
  free(gathered);
  free(bcast);
  free(gather_out);
}

/* The failure path: report, drain what was submitted, shut down, exit code 3. */
static int fail(hv_comm_t *comm, const char *call, hv_result_t rc, hv_handle_t *h, int n) {
  printf("FAILED rank=%d %s: %s: %s\n", rank, call, hv_strerror(rc), hv_comm_last_error(comm));
  fflush(stdout);
  for (int i = 0; i < n; i++)
    if (h[i]) hv_wait(h[i]);
  hv_shutdown(comm);
  free_buffers();
  return 3;
}

static int wrong(hv_comm_t *comm, const char *what, double got, double want) {
  printf("WRONG rank=%d %s = %g, expected %g\n", rank, what, got, want);
  fflush(stdout);
  hv_shutdown(comm);
  free_buffers();
  return 4;
}

int main(int argc, char **argv) {
  hv_comm_t *comm = NULL;
  hv_result_t rc = hv_init(&argc, &argv, &comm);
  if (rc != HV_SUCCESS) {
    printf("FAILED rank=? hv_init: %s: %s\n", hv_strerror(rc), hv_comm_last_error(NULL));
    return 3;
  }
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  int ok = 1;
  for (int i = 0; i < SMALL; i++) ok &= (small[i] = malloc(SMALL_COUNT * sizeof(float))) != NULL;
  for (int i = 0; i < 3; i++) ok &= (bucket[i] = malloc((size_t)(10 + i) * sizeof(float))) != NULL;
  ok &= (large = malloc(LARGE_COUNT * sizeof(float))) != NULL;
  ok &= (bcast = malloc(BCAST_COUNT * sizeof(float))) != NULL;
  ok &= (gather_out = malloc((size_t)size * GATHER_COUNT * sizeof(int))) != NULL;
  if (!ok) {
    printf("FAILED rank=%d malloc of the test buffers: out of memory\n", rank);
    hv_shutdown(comm);
    free_buffers();
    return 3;
  }
  const float sum = (float)(size * (size + 1) / 2); /* of rank + 1 over ranks */
  for (int step = 0; step < STEPS; step++) {
    hv_handle_t h[NHANDLES] = {0};
    char name[64];
    for (int i = 0; i < SMALL; i++)
      for (int j = 0; j < SMALL_COUNT; j++) small[i][j] = (float)(rank + 1);
    for (int j = 0; j < LARGE_COUNT; j++) large[j] = (float)(rank + 1);
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 10 + i; j++) bucket[i][j] = (float)(rank + 1);
    for (int j = 0; j < GATHER_COUNT; j++) gather_in[j] = rank * 100 + j;
    for (int j = 0; j < BCAST_COUNT; j++) bcast[j] = rank == 0 ? (float)j : -1.0f;

    if ((rc = hv_group_start(comm)) != HV_SUCCESS) return fail(comm, "hv_group_start", rc, h, 0);
    for (int i = 0; i < SMALL; i++) {
      snprintf(name, sizeof name, "grad/small%d", i);
      if ((rc = hv_allreduce_async(comm, name, small[i], small[i], SMALL_COUNT, HV_FLOAT32, HV_SUM, NULL,
                                   &h[H_SMALL0 + i])) != HV_SUCCESS) {
        hv_group_end(comm);
        return fail(comm, "hv_allreduce_async (grouped submit)", rc, h, NHANDLES);
      }
    }
    if ((rc = hv_group_end(comm)) != HV_SUCCESS) return fail(comm, "hv_group_end", rc, h, NHANDLES);
    if ((rc = hv_allreduce_async(comm, "grad/large", large, large, LARGE_COUNT, HV_FLOAT32, HV_SUM, NULL,
                                 &h[H_LARGE])) != HV_SUCCESS)
      return fail(comm, "hv_allreduce_async", rc, h, NHANDLES);
    if ((rc = hv_allgather_async(comm, "gather", gather_in, gather_out, GATHER_COUNT, HV_INT32, &h[H_GATHER])) !=
        HV_SUCCESS)
      return fail(comm, "hv_allgather_async", rc, h, NHANDLES);
    if ((rc = hv_broadcast_async(comm, "bcast", bcast, BCAST_COUNT, HV_FLOAT32, 0, &h[H_BCAST])) != HV_SUCCESS)
      return fail(comm, "hv_broadcast_async", rc, h, NHANDLES);
    const hv_tensor_t t[3] = {{NULL, bucket[0], 10}, {NULL, bucket[1], 11}, {NULL, bucket[2], 12}};
    if ((rc = hv_grouped_allreduce_async(comm, "bucket", t, 3, HV_FLOAT32, HV_SUM, NULL, &h[H_GROUPED])) !=
        HV_SUCCESS)
      return fail(comm, "hv_grouped_allreduce_async", rc, h, NHANDLES);
    for (int i = 0; i < NHANDLES; i++) {
      hv_handle_t one = h[i];
      h[i] = NULL;
      if ((rc = hv_wait(one)) != HV_SUCCESS) return fail(comm, "hv_wait", rc, h, NHANDLES);
    }

    for (int i = 0; i < SMALL; i++)
      if (small[i][SMALL_COUNT - 1] != sum) return wrong(comm, "grad/small", small[i][SMALL_COUNT - 1], sum);
    if (large[LARGE_COUNT - 1] != sum) return wrong(comm, "grad/large", large[LARGE_COUNT - 1], sum);
    for (int i = 0; i < 3; i++)
      if (bucket[i][9 + i] != sum) return wrong(comm, "bucket", bucket[i][9 + i], sum);
    for (int r = 0; r < size; r++)
      if (gather_out[r * GATHER_COUNT + 4] != r * 100 + 4) return wrong(comm, "gather", gather_out[r * GATHER_COUNT + 4], r * 100 + 4);
    if (bcast[BCAST_COUNT - 1] != BCAST_COUNT - 1) return wrong(comm, "bcast", bcast[BCAST_COUNT - 1], BCAST_COUNT - 1);
  }
  if ((rc = hv_barrier(comm)) != HV_SUCCESS) return fail(comm, "hv_barrier", rc, NULL, 0);
  if ((rc = hv_shutdown(comm)) != HV_SUCCESS) {
    printf("FAILED rank=%d hv_shutdown: %s: %s\n", rank, hv_strerror(rc), hv_comm_last_error(NULL));
    free_buffers();
    return 3;
  }
  free_buffers();
  printf("OK rank=%d\n", rank);
  return 0;
}
