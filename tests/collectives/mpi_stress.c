/* mpi_stress.c: hundreds of tensors submitted in a different random order on each
 * rank, from several user threads at once, each thread's named tensors in flight
 * beside its grouped allreduce (hv_grouped_allreduce_async), plus grouped submission;
 * repeated so the response cache path (steady state) is exercised after the first
 * pass. Values are exact small integers. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "hv.h"
#include "hv_mpi.h"
#include "test_mpi.h"
#include "test_util.h"

#define NTENSORS 300
#define NTHREADS 3
#define PASSES 3

static int R, N;
static hv_comm_t *comm;

static size_t tensor_count(int t) { return (size_t)(1 + (t * 37) % 257); }

typedef struct worker {
  int id, pass;
  unsigned seed;
  int failures;
} worker_t;

/* Each thread owns the tensors t with t % NTHREADS == id, submits them in its own
 * random order (different on every rank), then waits. */
static void *worker_main(void *arg) {
  worker_t *w = arg;
  int mine[NTENSORS], n = 0;
  for (int t = w->id; t < NTENSORS; t += NTHREADS) mine[n++] = t;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(rand_r(&w->seed) % (unsigned)(i + 1)), tmp = mine[i];
    mine[i] = mine[j];
    mine[j] = tmp;
  }
  float *bufs[NTENSORS];
  hv_handle_t hs[NTENSORS];
  /* This thread's group: GROUP_TENSORS tensors of uneven counts under one name,
   * submitted first, so it is negotiated and fused among the named tensors. */
  enum { GROUP_TENSORS = 9 };
  int32_t gbuf[GROUP_TENSORS][40];
  hv_tensor_t group[GROUP_TENSORS];
  for (int g = 0; g < GROUP_TENSORS; g++) {
    for (int i = 0; i < 40; i++) gbuf[g][i] = (g + i + R * w->id) % 7;
    group[g] = (hv_tensor_t){NULL, gbuf[g], (size_t)(g * 5 % 41)};
  }
  char gname[64];
  snprintf(gname, sizeof gname, "stress.group%d", w->id);
  hv_handle_t gh = NULL;
  if (hv_grouped_allreduce_async(comm, gname, group, GROUP_TENSORS, HV_INT32, HV_SUM, NULL, &gh) != HV_SUCCESS)
    w->failures++;
  for (int k = 0; k < n; k++) {
    int t = mine[k];
    size_t c = tensor_count(t);
    bufs[k] = malloc(c * sizeof(float));
    for (size_t i = 0; i < c; i++) bufs[k][i] = (float)((t + R + (int)i) % 9);
    char name[64];
    snprintf(name, sizeof name, "stress.t%d", t);
    if (hv_allreduce_async(comm, name, bufs[k], bufs[k], c, HV_FLOAT32, HV_SUM, NULL, &hs[k]) != HV_SUCCESS) {
      w->failures++;
      hs[k] = NULL;
    }
  }
  for (int k = 0; k < n; k++) {
    int t = mine[k];
    if (!hs[k] || hv_wait(hs[k]) != HV_SUCCESS) {
      w->failures++;
      continue;
    }
    for (size_t i = 0; i < tensor_count(t); i++) {
      double want = 0;
      for (int r = 0; r < N; r++) want += (t + r + (int)i) % 9;
      if (bufs[k][i] != want) {
        fprintf(stderr, "FAIL rank %d tensor %d [%zu]: got %g want %g\n", R, t, i, bufs[k][i], want);
        w->failures++;
        break;
      }
    }
    free(bufs[k]);
  }
  if (gh && hv_wait(gh) != HV_SUCCESS) w->failures++;
  for (int g = 0; gh && g < GROUP_TENSORS; g++)
    for (int i = 0; i < 40; i++) {
      int32_t want = 0;
      for (int r = 0; r < N; r++) want += i < (int)group[g].count ? (g + i + r * w->id) % 7 : 0;
      if (i >= (int)group[g].count) want = (g + i + R * w->id) % 7; /* past the tensor: untouched */
      if (gbuf[g][i] != want) {
        fprintf(stderr, "FAIL rank %d %s tensor %d [%d]: got %d want %d\n", R, gname, g, i, gbuf[g][i], want);
        w->failures++;
        break;
      }
    }
  return NULL;
}

static void test_group(void) {
  /* 50 tensors submitted as one group: negotiated and fused together. */
  enum { G = 50 };
  int32_t vals[G][10];
  hv_handle_t hs[G];
  CHECK_RC(hv_group_start(comm));
  for (int g = G - 1; g >= 0; g--) {
    int k = R % 2 ? g : G - 1 - g; /* different order per rank */
    for (int i = 0; i < 10; i++) vals[k][i] = k + i + R;
    char name[32];
    snprintf(name, sizeof name, "group.%d", k);
    CHECK_RC(hv_allreduce_async(comm, name, vals[k], vals[k], 10, HV_INT32, HV_SUM, NULL, &hs[k]));
  }
  CHECK_RC(hv_group_end(comm));
  /* The first half completes through hv_test polling, the rest through hv_wait_all. */
  for (int k = 0; k < G / 2; k++) {
    int done = 0;
    hv_result_t rc = HV_SUCCESS;
    for (long polls = 0; !done && rc == HV_SUCCESS && polls < 100000000L; polls++) rc = hv_test(hs[k], &done);
    CHECK(done && rc == HV_SUCCESS, "hv_test of group tensor %d: done %d, %s", k, done, hv_strerror(rc));
  }
  CHECK_RC(hv_wait_all(hs + G / 2, G - G / 2));
  for (int k = 0; k < G; k++)
    CHECK_ELEMENTS(vals[k], HV_INT32, 10, (double)(N * (k + (int)i)) + N * (N - 1) / 2.0, "group tensor %d", k);
}

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &R, &N);
  setenv("HV_FUSION_THRESHOLD", "16K", 1); /* several fused batches per round */
  hv_result_t rc = hv_init_from_mpi(MPI_COMM_WORLD, &comm);
  CHECK(rc == HV_SUCCESS, "init: %s", hv_comm_last_error(NULL));
  test_comm = comm;
  for (int pass = 0; pass < PASSES && rc == HV_SUCCESS; pass++) {
    pthread_t th[NTHREADS];
    worker_t w[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
      w[i] = (worker_t){i, pass, (unsigned)(1234 + R * 977 + i * 31 + pass * 7), 0};
      pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
      pthread_join(th[i], NULL);
      CHECK(w[i].failures == 0, "pass %d thread %d: %d failures (%s)", pass, i, w[i].failures, hv_comm_last_error(comm));
    }
    test_group();
  }
  CHECK_RC(hv_shutdown(comm));
  return test_mpi_finish("mpi_stress", R, N);
}
