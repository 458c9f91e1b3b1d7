/* mpi_join.c: hv_join for uneven inputs.
 *  - rank r runs 3 + 2r steps (then, in a second epoch, 3 + 2(N-1-r)) of: an average
 *    allreduce of float32 (r+1)(s+1), an int32 sum allreduce of (r+1), a broadcast from
 *    the rank with the most steps, a barrier; then hv_join. At each step the sums are
 *    exact over the ranks still running, and the average divides by their number;
 *  - after each epoch's join every rank is back: exact sums over all ranks, through
 *    the response cache again;
 *  - a collective that cannot run without the joined ranks (an allgather) fails on
 *    every rank still running, naming the joined rank; a broadcast from a joined root
 *    likewise; hv_join called by a second thread while the first is in it fails. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hv.h"
#include "hv_mpi.h"
#include "test_mpi.h"
#include "test_util.h"

#define COUNT 1000

static int R, N;

static int steps_of(int r, int epoch) { return epoch == 0 ? 3 + 2 * r : 3 + 2 * (N - 1 - r); }

static void run_epoch(hv_comm_t *comm, int epoch) {
  const int mine = steps_of(R, epoch);
  const int root = epoch == 0 ? N - 1 : 0; /* the rank with the most steps */
  float *g = malloc(sizeof(float) * COUNT);
  for (int s = 0; s < mine; s++) {
    int active = 0;
    double sum = 0;
    int32_t isum = 0;
    for (int q = 0; q < N; q++)
      if (steps_of(q, epoch) > s) active++, sum += (double)(q + 1) * (s + 1), isum += q + 1;
    for (int i = 0; i < COUNT; i++) g[i] = (float)((R + 1) * (s + 1));
    CHECK_RC(hv_allreduce(comm, "grad", g, g, COUNT, HV_FLOAT32, HV_AVERAGE, NULL));
    const float want = (float)sum / (float)active;
    CHECK(g[0] == want && g[COUNT - 1] == want, "rank %d epoch %d step %d: average %g, expected %g (%d ranks running)",
          R, epoch, s, g[0], want, active);
    int32_t v = R + 1;
    CHECK_RC(hv_allreduce(comm, "count", &v, &v, 1, HV_INT32, HV_SUM, NULL));
    CHECK(v == isum, "rank %d epoch %d step %d: sum %d, expected %d", R, epoch, s, v, isum);
    int64_t b[3] = {R, s, -1};
    CHECK_RC(hv_broadcast(comm, "weights", b, 3, HV_INT64, root));
    CHECK(b[0] == root && b[1] == s, "rank %d epoch %d step %d: broadcast gave %lld %lld", R, epoch, s,
          (long long)b[0], (long long)b[1]);
    CHECK_RC(hv_barrier(comm));
  }
  free(g);
  CHECK_RC(hv_join(comm));
}

static void all_back(hv_comm_t *comm, const char *tag) {
  int64_t v = R + 1;
  CHECK_RC(hv_allreduce(comm, tag, &v, &v, 1, HV_INT64, HV_SUM, NULL));
  CHECK(v == (int64_t)N * (N + 1) / 2, "rank %d %s: sum %lld over all ranks", R, tag, (long long)v);
  float f = (float)(R + 1);
  CHECK_RC(hv_allreduce(comm, "grad.back", &f, &f, 1, HV_FLOAT32, HV_AVERAGE, NULL));
  CHECK(f == (float)(N + 1) / 2.0f, "rank %d %s: average %g over all ranks", R, tag, f);
}

static void *join_thread(void *p) {
  hv_comm_t *comm = p;
  hv_result_t *rc = malloc(sizeof *rc);
  *rc = hv_join(comm);
  return rc;
}

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &R, &N);
  hv_comm_t *comm = test_mpi_hv(R);

  run_epoch(comm, 0);
  all_back(comm, "back.0");
  run_epoch(comm, 1);
  all_back(comm, "back.1");

  /* The last rank joins at once; the others' allgather and a broadcast from it fail
   * on each of them, naming it; then they join too. */
  if (R == N - 1) {
    CHECK_RC(hv_join(comm));
  } else {
    int32_t x = R, all[64];
    hv_result_t rc = hv_allgather(comm, "gather", &x, all, 1, HV_INT32);
    char want[64];
    snprintf(want, sizeof want, "ranks [%d] have joined", N - 1);
    CHECK(rc == HV_ERR_INVALID_ARGUMENT && strstr(hv_comm_last_error(comm), want) &&
              strstr(hv_comm_last_error(comm), "'gather'"),
          "rank %d: allgather with a joined rank: %s (%s)", R, hv_strerror(rc), hv_comm_last_error(comm));
    int64_t b = R;
    rc = hv_broadcast(comm, "from.joined", &b, 1, HV_INT64, N - 1);
    CHECK(rc == HV_ERR_INVALID_ARGUMENT && strstr(hv_comm_last_error(comm), "root has joined"),
          "rank %d: broadcast from the joined rank: %s (%s)", R, hv_strerror(rc), hv_comm_last_error(comm));
    CHECK_RC(hv_join(comm));
  }
  all_back(comm, "back.2");

  /* Rank 0: a second thread's hv_join while the first is in it fails at once. */
  if (R == 0) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, join_thread, comm) == 0);
    usleep(200 * 1000);
    hv_result_t rc = hv_join(comm);
    CHECK(rc == HV_ERR_INVALID_ARGUMENT && strstr(hv_comm_last_error(comm), "already in hv_join"),
          "rank 0: a second hv_join: %s (%s)", hv_strerror(rc), hv_comm_last_error(comm));
    void *out = NULL;
    pthread_join(t, &out);
    CHECK(out && *(hv_result_t *)out == HV_SUCCESS, "rank 0: the first hv_join failed");
    free(out);
  } else {
    usleep(400 * 1000);
    CHECK_RC(hv_join(comm));
  }
  all_back(comm, "back.3");

  CHECK_RC(hv_shutdown(comm));
  return test_mpi_finish("mpi_join", R, N);
}
