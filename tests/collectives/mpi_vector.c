/* mpi_vector.c: the collectives of issue #24 give exact values, async and blocking,
 * at any rank count (CTest runs 2, 3 and 4):
 *  - hv_alltoallv with uneven splits, zeros among them (a rank sending nothing at all);
 *  - hv_reduce to every root (SUM, MAX, AVERAGE; in place on the root);
 *  - hv_gather / hv_gatherv and hv_scatter / hv_scatterv from every root, a zero count;
 *  - hv_send / hv_recv: a ring of named pairs (async), and a blocking pair 0 -> 1 that
 *    the other ranks take no part in.
 * Values are integers, exact in every dtype used (int32, float64). */
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

/* Elements rank i sends rank j in the alltoallv: 0 to 3, zeros included (rank 0 sends
 * itself nothing; with 4 ranks, i + 2j = 4 ... sends 0 too). */
static int64_t split(int i, int j) { return (i + 2 * j) % 4; }
static double a2a_value(int i, int j, int64_t k) { return i * 1000 + j * 100 + (double)k; }

static void test_alltoallv(hv_comm_t *comm, hv_dtype_t dt, int async) {
  size_t es = hv_dtype_size(dt);
  int64_t ssp[16], rsp[16];
  size_t scount = 0, rcount = 0;
  for (int j = 0; j < N; j++) ssp[j] = split(R, j), rsp[j] = split(j, R), scount += (size_t)ssp[j], rcount += (size_t)rsp[j];
  char *send = malloc(scount * es + 1), *recv = malloc(rcount * es + 1);
  size_t at = 0;
  for (int j = 0; j < N; j++)
    for (int64_t k = 0; k < ssp[j]; k++) elem_set(send, dt, at++, a2a_value(R, j, k));
  memset(recv, 0x7f, rcount * es);
  char name[64];
  snprintf(name, sizeof name, "a2av.%s.%d", hv_dtype_name(dt), async);
  if (async) {
    hv_handle_t h;
    CHECK_RC(hv_alltoallv_async(comm, name, send, scount, ssp, dt, recv, rcount, rsp, &h));
    /* The splits were copied at the call: clobbering them must not matter. */
    memset(ssp, 0xff, sizeof ssp);
    memset(rsp, 0xff, sizeof rsp);
    CHECK_RC(hv_wait(h));
  } else {
    CHECK_RC(hv_alltoallv(comm, name, send, scount, ssp, dt, recv, rcount, rsp));
  }
  at = 0;
  for (int j = 0; j < N; j++)
    for (int64_t k = 0; k < split(j, R); k++, at++)
      CHECK(elem_get(recv, dt, at) == a2a_value(j, R, k), "%s: from rank %d element %lld: %g", name, j, (long long)k,
            elem_get(recv, dt, at));
  free(send);
  free(recv);
}

/* C elements: 37 go through MPI_Ireduce, 20011 (156 KiB, not a multiple of the ranks)
 * through the reduce-scatter and gather (engine_execute.c). */
static void test_reduce(hv_comm_t *comm, int root, hv_op_t op, int async, int in_place, int C) {
  double *send = malloc(sizeof(double) * (size_t)C), *recv = malloc(sizeof(double) * (size_t)C);
  for (int k = 0; k < C; k++) send[k] = (double)(R * N + k), recv[k] = -1;
  char name[64];
  snprintf(name, sizeof name, "reduce.%d.%s.%d.%d.%d", root, hv_op_name(op), async, in_place, C);
  const void *sb = send;
  if (in_place && R == root) memcpy(recv, send, sizeof(double) * (size_t)C), sb = NULL;
  if (async) {
    hv_handle_t h;
    CHECK_RC(hv_reduce_async(comm, name, sb, R == root ? recv : NULL, C, HV_FLOAT64, op, root, &h));
    CHECK_RC(hv_wait(h));
  } else {
    CHECK_RC(hv_reduce(comm, name, sb, R == root ? recv : NULL, C, HV_FLOAT64, op, root));
  }
  for (int k = 0; R == root && k < C; k++) {
    /* sum over r of r*N + k = N*N*(N-1)/2 + N*k */
    double sum = (double)N * N * (N - 1) / 2 + (double)N * k, max = (double)(N - 1) * N + k;
    double want = op == HV_SUM ? sum : op == HV_MAX ? max : sum / N;
    if (recv[k] != want) {
      CHECK(recv[k] == want, "%s [%d]: got %g, expected %g", name, k, recv[k], want);
      break;
    }
  }
  free(send);
  free(recv);
}

/* Rank r's gatherv/scatterv count: 0 for rank 0, then 3, 6 mod 5 ... */
static int64_t vcount(int r) { return (r * 3) % 5; }

static void test_gather(hv_comm_t *comm, int root, int v, int async) {
  enum { C = 5 };
  int32_t send[C], recv[16 * C];
  int64_t counts[16];
  size_t mine = v ? (size_t)vcount(R) : C;
  for (size_t k = 0; k < mine; k++) send[k] = R * 100 + (int32_t)k;
  for (int q = 0; q < N; q++) counts[q] = v ? vcount(q) : C;
  memset(recv, 0xff, sizeof recv);
  char name[64];
  snprintf(name, sizeof name, "gather.%d.%d.%d", root, v, async);
  void *rb = R == root ? recv : NULL;
  hv_handle_t h;
  if (v && async) CHECK_RC(hv_gatherv_async(comm, name, send, mine, HV_INT32, rb, R == root ? counts : NULL, root, &h));
  else if (v) CHECK_RC(hv_gatherv(comm, name, send, mine, HV_INT32, rb, R == root ? counts : NULL, root));
  else if (async) CHECK_RC(hv_gather_async(comm, name, send, rb, C, HV_INT32, root, &h));
  else CHECK_RC(hv_gather(comm, name, send, rb, C, HV_INT32, root));
  if (async) CHECK_RC(hv_wait(h));
  if (R != root) return;
  size_t at = 0;
  for (int q = 0; q < N; q++)
    for (int64_t k = 0; k < counts[q]; k++, at++)
      CHECK(recv[at] == q * 100 + k, "%s: rank %d element %lld: %d", name, q, (long long)k, recv[at]);
  CHECK(recv[at] == -1, "%s: wrote past the gathered elements", name);
}

static void test_scatter(hv_comm_t *comm, int root, int v, int async) {
  enum { C = 5 };
  int32_t send[16 * C], recv[C + 1];
  int64_t counts[16];
  size_t at = 0;
  for (int q = 0; q < N; q++) {
    counts[q] = v ? vcount(q) : C;
    for (int64_t k = 0; k < counts[q]; k++) send[at++] = q * 100 + (int32_t)k + root * 10;
  }
  size_t mine = (size_t)counts[R];
  memset(recv, 0xff, sizeof recv);
  char name[64];
  snprintf(name, sizeof name, "scatter.%d.%d.%d", root, v, async);
  const void *sb = R == root ? send : NULL;
  hv_handle_t h;
  if (v && async) CHECK_RC(hv_scatterv_async(comm, name, sb, R == root ? counts : NULL, HV_INT32, recv, mine, root, &h));
  else if (v) CHECK_RC(hv_scatterv(comm, name, sb, R == root ? counts : NULL, HV_INT32, recv, mine, root));
  else if (async) CHECK_RC(hv_scatter_async(comm, name, sb, recv, C, HV_INT32, root, &h));
  else CHECK_RC(hv_scatter(comm, name, sb, recv, C, HV_INT32, root));
  if (async) CHECK_RC(hv_wait(h));
  for (size_t k = 0; k < mine; k++)
    CHECK(recv[k] == R * 100 + (int32_t)k + root * 10, "%s: element %zu: %d", name, k, recv[k]);
  CHECK(recv[mine] == -1, "%s: wrote past the scattered elements", name);
}

static void test_sendrecv(hv_comm_t *comm) {
  enum { C = 1000 };
  double out[C], in[C];
  for (int k = 0; k < C; k++) out[k] = R * 10000 + k, in[k] = -1;
  int to = (R + 1) % N, from = (R + N - 1) % N;
  char sname[32], rname[32];
  snprintf(sname, sizeof sname, "ring.%d", R);
  snprintf(rname, sizeof rname, "ring.%d", from);
  hv_handle_t hs, hr;
  /* The receive first on odd ranks, the send first on even ones: order does not matter. */
  if (R % 2) CHECK_RC(hv_recv_async(comm, rname, in, C, HV_FLOAT64, from, &hr));
  CHECK_RC(hv_send_async(comm, sname, out, C, HV_FLOAT64, to, &hs));
  if (R % 2 == 0) CHECK_RC(hv_recv_async(comm, rname, in, C, HV_FLOAT64, from, &hr));
  CHECK_RC(hv_wait(hs));
  CHECK_RC(hv_wait(hr));
  for (int k = 0; k < C; k++) CHECK(in[k] == from * 10000 + k, "ring recv [%d]: %g", k, in[k]);
  /* A blocking pair the others take no part in; then zero elements the other way. */
  int32_t v[3] = {R, R, R};
  if (R == 0) CHECK_RC(hv_send(comm, "pair.0to1", (int32_t[3]){7, 8, 9}, 3, HV_INT32, 1));
  if (R == 1) {
    CHECK_RC(hv_recv(comm, "pair.0to1", v, 3, HV_INT32, 0));
    CHECK(v[0] == 7 && v[1] == 8 && v[2] == 9, "pair 0 -> 1: %d %d %d", v[0], v[1], v[2]);
    CHECK_RC(hv_send(comm, "pair.1to0.empty", NULL, 0, HV_INT32, 0));
  }
  if (R == 0) CHECK_RC(hv_recv(comm, "pair.1to0.empty", NULL, 0, HV_INT32, 1));
  /* hv_shutdown fails what is pending anywhere: the other ranks wait for the pairs. */
  CHECK_RC(hv_barrier(comm));
}

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &R, &N);
  hv_comm_t *comm;
  if (N > 16 || hv_init_from_mpi(MPI_COMM_WORLD, &comm) != HV_SUCCESS) {
    fprintf(stderr, "init failed (at most 16 ranks): %s\n", hv_comm_last_error(NULL));
    return 1;
  }
  test_comm = comm;
  for (int async = 0; async < 2; async++) {
    test_alltoallv(comm, HV_INT32, async);
    test_alltoallv(comm, HV_FLOAT64, async);
    for (int root = 0; root < N; root++) {
      for (int big = 0; big < 2; big++) {
        int c = big ? 20011 : 37;
        test_reduce(comm, root, HV_SUM, async, 0, c);
        test_reduce(comm, root, HV_MAX, async, 1, c);
        test_reduce(comm, root, HV_AVERAGE, async, 0, c);
      }
      for (int v = 0; v < 2; v++) {
        test_gather(comm, root, v, async);
        test_scatter(comm, root, v, async);
      }
    }
  }
  /* The second time round the names are in the response cache. */
  test_alltoallv(comm, HV_INT32, 1);
  test_gather(comm, 0, 1, 1);
  if (N > 1) test_sendrecv(comm);
  CHECK_RC(hv_shutdown(comm));
  return test_mpi_finish("mpi_vector", R, N);
}
