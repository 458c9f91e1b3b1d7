/* mpi_vector_errors.c MODE: one bad input to the collectives of issue #24 (MODE picks
 * it), made on every rank that takes part. Each such rank checks that its call failed
 * with the expected code and a message naming the cause, prints
 *   "rank R: failed as expected: <message>"
 * checks that the communicator still works, and exits with status 3 (CTest, through
 * expect_output.sh, wants that status and every rank's line). A wrong result prints
 * "rank R: WRONG ..." and exits 1. Never a hang: the whole run is under `timeout`.
 * Modes:
 *   a2av_sum       rank 1's sendsplits do not sum to its sendcount
 *   a2av_negative  rank 0 has a negative recv split
 *   a2av_mismatch  rank 1 expects another count from rank 0 than rank 0 sends
 *   gatherv_mismatch  the root's recvcounts[last] differ from the last rank's sendcount
 *   scatterv_negative the root's sendcounts hold a negative count
 *   reduce_root_range every rank gives root = size
 *   reduce_root_mismatch the last rank gives another root
 *   gather_root_range the last rank alone gives a root out of range (-1)
 *   p2p_mismatch   rank 0 sends 4 elements, rank 1 receives 5
 *   p2p_no_recv    rank 0 sends to rank 1, which never receives: the stall report names
 *                  it and HV_STALL_SHUTDOWN_TIME fails the send (rank 0 only takes part) */
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

/* rc and the last error against the expectation: every needle must be in the message. */
static int expect(hv_comm_t *comm, hv_result_t rc, hv_result_t want, const char *n1, const char *n2, const char *n3) {
  const char *msg = hv_comm_last_error(comm);
  int ok = rc == want && (!n1 || strstr(msg, n1)) && (!n2 || strstr(msg, n2)) && (!n3 || strstr(msg, n3));
  if (ok) printf("rank %d: failed as expected: %s\n", R, msg);
  else printf("rank %d: WRONG: got %s (%s), wanted %s with '%s' '%s' '%s'\n", R, hv_strerror(rc), msg,
              hv_strerror(want), n1 ? n1 : "", n2 ? n2 : "", n3 ? n3 : "");
  fflush(stdout);
  return ok;
}

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &R, &N);
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "p2p_no_recv")) {
    setenv("HV_STALL_CHECK_TIME", "1", 1);
    setenv("HV_STALL_SHUTDOWN_TIME", "3", 1);
  }
  hv_comm_t *comm;
  if (hv_init_from_mpi(MPI_COMM_WORLD, &comm) != HV_SUCCESS || N < 2 || N > 16) {
    fprintf(stderr, "init failed (2 to 16 ranks): %s\n", hv_comm_last_error(NULL));
    return 1;
  }
  test_comm = comm;
  int last = N - 1, ok = 1, involved = 1;
  int64_t ssp[16], rsp[16];
  int32_t sbuf[64] = {0}, rbuf[64];
  /* A valid alltoallv of one element each way, spoiled per mode below. */
  for (int q = 0; q < N; q++) ssp[q] = rsp[q] = 1;
  size_t scount = (size_t)N, rcount = (size_t)N;
  hv_result_t rc = HV_SUCCESS;
  if (!strcmp(mode, "a2av_sum")) {
    if (R == 1) scount = (size_t)N + 2;
    rc = hv_alltoallv(comm, "bad.sum", sbuf, scount, ssp, HV_INT32, rbuf, rcount, rsp);
    ok = expect(comm, rc, HV_ERR_INVALID_ARGUMENT, "bad.sum", "rank 1's sendsplits sum to", "not to its sendcount");
  } else if (!strcmp(mode, "a2av_negative")) {
    if (R == 0) rsp[1] = -1, rsp[0] = 1 + 1; /* still sums to N */
    rc = hv_alltoallv(comm, "bad.neg", sbuf, scount, ssp, HV_INT32, rbuf, rcount, rsp);
    ok = expect(comm, rc, HV_ERR_INVALID_ARGUMENT, "bad.neg", "rank 0's recvsplits[1] is -1", "negative");
  } else if (!strcmp(mode, "a2av_mismatch")) {
    if (R == 1) rsp[0] = 2, rcount = (size_t)N + 1;
    rc = hv_alltoallv(comm, "bad.split", sbuf, scount, ssp, HV_INT32, rbuf, rcount, rsp);
    ok = expect(comm, rc, HV_ERR_MISMATCH, "rank 0 sends 1 elements to rank 1 (its sendsplits[1])",
                "rank 1 expects 2 from rank 0 (its recvsplits[0])", "bad.split");
  } else if (!strcmp(mode, "gatherv_mismatch")) {
    for (int q = 0; q < N; q++) rsp[q] = 2;
    if (R == 0) rsp[last] = 3;
    rc = hv_gatherv(comm, "bad.gatherv", sbuf, 2, HV_INT32, rbuf, rsp, 0);
    char want[96];
    snprintf(want, sizeof want, "rank %d sends 2 elements to rank 0 (its sendcount)", last);
    char want2[96];
    snprintf(want2, sizeof want2, "rank 0 expects 3 from rank %d (its recvcounts[%d])", last, last);
    ok = expect(comm, rc, HV_ERR_MISMATCH, want, want2, "bad.gatherv");
  } else if (!strcmp(mode, "scatterv_negative")) {
    for (int q = 0; q < N; q++) ssp[q] = 1;
    if (R == 0) ssp[last] = -4;
    rc = hv_scatterv(comm, "bad.scatterv", sbuf, ssp, HV_INT32, rbuf, 1, 0);
    char want[64];
    snprintf(want, sizeof want, "rank 0's sendcounts[%d] is -4", last);
    ok = expect(comm, rc, HV_ERR_INVALID_ARGUMENT, want, "negative", "bad.scatterv");
  } else if (!strcmp(mode, "reduce_root_range")) {
    rc = hv_reduce(comm, "bad.root", sbuf, rbuf, 4, HV_INT32, HV_SUM, N);
    char want[64];
    snprintf(want, sizeof want, "rank 0 gave root %d, out of range", N);
    ok = expect(comm, rc, HV_ERR_INVALID_ARGUMENT, want, "bad.root", NULL);
  } else if (!strcmp(mode, "reduce_root_mismatch")) {
    rc = hv_reduce(comm, "bad.roots", sbuf, rbuf, 4, HV_INT32, HV_SUM, R == last ? 1 : 0);
    char want[64];
    snprintf(want, sizeof want, "rank %d has 1", last);
    ok = expect(comm, rc, HV_ERR_MISMATCH, "different root", "rank 0 has 0", want);
  } else if (!strcmp(mode, "gather_root_range")) {
    /* The same root elsewhere: the odd one out is a root mismatch, not a hang. */
    rc = hv_gather(comm, "bad.groot", sbuf, rbuf, 1, HV_INT32, R == last ? -1 : 0);
    char want[64];
    snprintf(want, sizeof want, "rank %d has -1", last);
    ok = expect(comm, rc, HV_ERR_MISMATCH, "different root", "rank 0 has 0", want);
  } else if (!strcmp(mode, "p2p_mismatch")) {
    involved = R < 2;
    if (R == 0) rc = hv_send(comm, "bad.pair", sbuf, 4, HV_INT32, 1);
    if (R == 1) rc = hv_recv(comm, "bad.pair", rbuf, 5, HV_INT32, 0);
    if (involved) ok = expect(comm, rc, HV_ERR_MISMATCH, "rank 0 sends 4 int32, rank 1 receives 5 int32", "bad.pair", NULL);
  } else if (!strcmp(mode, "p2p_no_recv")) {
    involved = R == 0;
    if (R == 0) {
      rc = hv_send(comm, "lonely.send", sbuf, 4, HV_INT32, 1);
      ok = expect(comm, rc, HV_ERR_STALLED, "rank 1 never submitted the matching hv_recv", "lonely.send", NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* the others wait outside hv: nothing of theirs is pending */
  } else {
    fprintf(stderr, "unknown mode '%s'\n", mode);
    ok = 0;
  }
  /* The communicator works on after the failure, on every rank. */
  int v = R + 1;
  rc = hv_allreduce(comm, "after", &v, &v, 1, HV_INT32, HV_SUM, NULL);
  if (rc != HV_SUCCESS || v != N * (N + 1) / 2) {
    printf("rank %d: WRONG: the communicator is broken after the failure: %s\n", R, hv_comm_last_error(comm));
    ok = 0;
  }
  if (!involved) printf("rank %d: not involved\n", R);
  fflush(stdout);
  hv_shutdown(comm);
  MPI_Finalize();
  return ok ? 3 : 1;
}
