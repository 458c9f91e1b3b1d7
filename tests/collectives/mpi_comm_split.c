/* mpi_comm_split.c: sub-communicators (hv_comm_split, hv_comm_create_group).
 *  - split by parity, ordered by a descending key: sizes, ranks in key order, exact
 *    sums over the members only;
 *  - the parent and its sub-communicator used at the same time from two threads, with
 *    the same tensor names in both (names are per communicator): exact sums each
 *    step (run under TSan too);
 *  - a process set listed out of order ({last, 0}): ranks in list order, a broadcast
 *    from its first member, NULL on the ranks not listed; HV_COLOR_NONE likewise;
 *  - bad input fails on every rank with one message naming the rank: a colour out of
 *    range on one rank, process-set lists that differ, a rank listed twice or out of
 *    range; the parent keeps working after each;
 *  - a sub-communicator shut down after its parent still works until then. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "hv_mpi.h"
#include "test_mpi.h"
#include "test_util.h"

#define STEPS 60

static int R, N;

/* The sum of (world rank + 1) over the world ranks for which member() holds. */
static int64_t sum_of_members(int (*member)(int)) {
  int64_t s = 0;
  for (int q = 0; q < N; q++)
    if (member(q)) s += q + 1;
  return s;
}
static int same_parity(int q) { return q % 2 == R % 2; }
static int everyone(int q) { (void)q; return 1; }

typedef struct loop_arg {
  hv_comm_t *comm;
  int64_t expect;
  int failures;
} loop_arg_t;

/* STEPS allreduces of (world rank + 1) * (step + 1) named "t/<k>" (the same names in
 * both communicators): exact integer sums. */
static void *allreduce_loop(void *p) {
  loop_arg_t *a = p;
  for (int s = 0; s < STEPS; s++) {
    char name[32];
    snprintf(name, sizeof name, "t/%d", s % 7);
    int64_t v[3] = {(int64_t)(R + 1) * (s + 1), s, -(int64_t)(R + 1)};
    hv_result_t rc = hv_allreduce(a->comm, name, v, v, 3, HV_INT64, HV_SUM, NULL);
    int size = 0;
    hv_comm_size(a->comm, &size);
    if (rc != HV_SUCCESS || v[0] != a->expect * (s + 1) || v[1] != (int64_t)s * size || v[2] != -a->expect) {
      fprintf(stderr, "FAIL rank %d step %d: %s: got %lld %lld %lld, expected %lld %lld %lld\n", R, s,
              rc != HV_SUCCESS ? hv_comm_last_error(a->comm) : "wrong sum", (long long)v[0], (long long)v[1],
              (long long)v[2], (long long)(a->expect * (s + 1)), (long long)s * size, (long long)-a->expect);
      a->failures++;
    }
  }
  return NULL;
}

static void still_works(hv_comm_t *comm, const char *tag) {
  int v = R + 1;
  CHECK_RC(hv_allreduce(comm, tag, &v, &v, 1, HV_INT32, HV_SUM, NULL));
  CHECK(v == N * (N + 1) / 2, "%s: the parent is broken after the error: %d", tag, v);
}

static void expect_error_everywhere(hv_comm_t *comm, hv_result_t rc, hv_comm_t *sub, hv_result_t want, const char *what,
                                    const char *text) {
  CHECK(rc == want, "%s: expected %s, got %s (%s)", what, hv_strerror(want), hv_strerror(rc), hv_comm_last_error(comm));
  CHECK(sub == NULL, "%s: a sub-communicator was returned with the error", what);
  CHECK(strstr(hv_comm_last_error(comm), text) != NULL, "%s: the message should contain '%s': '%s'", what, text,
        hv_comm_last_error(comm));
}

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &R, &N);
  hv_comm_t *comm = test_mpi_hv(R);

  /* Parity split, key descending: the highest world rank of each parity is rank 0. */
  hv_comm_t *par = NULL;
  CHECK_RC(hv_comm_split(comm, R % 2, -R, &par));
  int members = (N - R % 2 + 1) / 2, srank = -1, ssize = -1;
  CHECK(par != NULL, "rank %d: no parity communicator", R);
  if (par) {
    hv_comm_rank(par, &srank);
    hv_comm_size(par, &ssize);
    CHECK(ssize == members, "rank %d: parity communicator of %d ranks, expected %d", R, ssize, members);
    /* Members of my parity above me come first (key -R). */
    int above = 0;
    for (int q = R + 2; q < N; q += 2) above++;
    CHECK(srank == above, "rank %d: rank %d in the parity communicator, expected %d (key order)", R, srank, above);

    /* The parent and the split at once, from two threads, with the same names. */
    loop_arg_t on_world = {comm, sum_of_members(everyone), 0}, on_par = {par, sum_of_members(same_parity), 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, allreduce_loop, &on_par) == 0);
    allreduce_loop(&on_world);
    pthread_join(t, NULL);
    CHECK(on_world.failures == 0 && on_par.failures == 0, "rank %d: concurrent use: %d failures on the parent, %d on the split",
          R, on_world.failures, on_par.failures);
  }

  /* A process set out of order: {last, 0}; the others get NULL. */
  int list[2] = {N - 1, 0};
  hv_comm_t *set = NULL;
  CHECK_RC(hv_comm_create_group(comm, list, 2, &set));
  int listed = R == N - 1 || R == 0;
  CHECK((set != NULL) == listed, "rank %d: process set %s, expected %s", R, set ? "returned" : "NULL",
        listed ? "one" : "NULL");
  if (set) {
    int r = -1, n = -1;
    hv_comm_rank(set, &r);
    hv_comm_size(set, &n);
    CHECK(n == 2 && r == (R == N - 1 ? 0 : 1), "rank %d: rank %d of %d in the set {%d, 0}", R, r, n, N - 1);
    int64_t b[4] = {R, R, R, R};
    CHECK_RC(hv_broadcast(set, "set.bcast", b, 4, HV_INT64, 0));
    CHECK(b[0] == N - 1 && b[3] == N - 1, "rank %d: broadcast from the set's rank 0 gave %lld", R, (long long)b[0]);
  }

  /* HV_COLOR_NONE on rank 0: everyone else forms one. */
  hv_comm_t *rest = NULL;
  CHECK_RC(hv_comm_split(comm, R == 0 ? HV_COLOR_NONE : 7, 0, &rest));
  CHECK((rest == NULL) == (R == 0), "rank %d: HV_COLOR_NONE gave %s", R, rest ? "a communicator" : "NULL");
  if (rest) {
    int64_t v = R + 1;
    CHECK_RC(hv_allreduce(rest, "rest", &v, &v, 1, HV_INT64, HV_SUM, NULL));
    CHECK(v == (int64_t)N * (N + 1) / 2 - 1, "rank %d: sum over ranks 1..%d gave %lld", R, N - 1, (long long)v);
  }

  /* Bad input: every rank fails, with the same cause. */
  hv_comm_t *bad = NULL;
  hv_result_t rc = hv_comm_split(comm, R == 1 ? -5 : 0, 0, &bad);
  expect_error_everywhere(comm, rc, bad, HV_ERR_INVALID_ARGUMENT, "colour -5 on rank 1", "rank 1 passed colour -5");
  still_works(comm, "after.colour");

  int other[2] = {0, R == 0 ? 1 : N - 1};
  bad = NULL;
  rc = hv_comm_create_group(comm, other, 2, &bad);
  if (N > 2) {
    expect_error_everywhere(comm, rc, bad, HV_ERR_MISMATCH, "lists that differ", "different process sets");
    still_works(comm, "after.lists");
  } else {
    CHECK_RC(rc); /* {0, 1} everywhere at 2 ranks: the same list */
    CHECK_RC(hv_shutdown(bad));
  }

  int twice[2] = {0, 0};
  bad = NULL;
  rc = hv_comm_create_group(comm, twice, 2, &bad);
  expect_error_everywhere(comm, rc, bad, HV_ERR_INVALID_ARGUMENT, "a rank listed twice", "listed twice");
  int outside[1] = {N};
  rc = hv_comm_create_group(comm, outside, 1, &bad);
  expect_error_everywhere(comm, rc, bad, HV_ERR_INVALID_ARGUMENT, "a rank out of range", "is not a rank");
  still_works(comm, "after.lists2");

  /* The parity split outlives its parent. */
  CHECK_RC(hv_shutdown(set));
  CHECK_RC(hv_shutdown(rest));
  CHECK_RC(hv_shutdown(comm));
  if (par) {
    int64_t v = R + 1;
    CHECK_RC(hv_allreduce(par, "after.parent", &v, &v, 1, HV_INT64, HV_SUM, NULL));
    CHECK(v == sum_of_members(same_parity), "rank %d: the split after its parent's shutdown: %lld", R, (long long)v);
    CHECK_RC(hv_shutdown(par));
  }

  return test_mpi_finish("mpi_comm_split", R, N);
}
