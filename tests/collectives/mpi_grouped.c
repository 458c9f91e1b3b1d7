/* mpi_grouped.c: the grouped allreduce (hv_grouped_allreduce): one name for a list of
 * tensors, reduced as one request.
 *
 * For every algorithm (HV_ALLREDUCE_ALGO) and two fusion thresholds (the default,
 * and 4 KiB so that a group is cut into many batches, with a tensor larger than the
 * threshold alone): every dtype and op on a group of tensors with uneven counts (0, 1,
 * 4097...), in and out of place, checked exactly; the same name again (the response
 * cache's path) with new inputs; a group fused with plain tensors in one hv group;
 * prescale/postscale and fp16 compression with values they keep exact; an empty group;
 * the blocking form. Then the errors: the same total split into other tensors, another
 * number of tensors, a group against a plain allreduce of the same name (each
 * HV_ERR_MISMATCH on every rank, the communicator usable afterwards), and the argument
 * checks (a NULL list, a NULL receive buffer, overlapping buffers). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "hv_mpi.h"
#include "test_util.h"

static int R, N;

enum { NT = 7 };
static const size_t counts[NT] = {5, 0, 1, 4097, 3, 1500, 64};

/* Element i of tensor t for rank r: test_input of the element's place in the group,
 * shifted by the tensor and the step so that a tensor reduced at another's offset,
 * or last step's values, show. */
static size_t place(int t, size_t i, int step) { return i + (size_t)t * 11 + (size_t)step * 3; }

static void fill_group(void *send[NT], void *recv[NT], hv_tensor_t tensors[NT], hv_dtype_t dt, hv_op_t op,
                       int step) {
  for (int t = 0; t < NT; t++) {
    int in_place = t % 2;
    for (size_t i = 0; i < counts[t]; i++) {
      elem_set(send[t], dt, i, test_input(op, R, place(t, i, step), N));
      elem_set(recv[t], dt, i, in_place ? test_input(op, R, place(t, i, step), N) : -1);
    }
    /* Odd tensors in place: sendbuf NULL for t = 1, 5, and equal to recvbuf for 3. */
    tensors[t] = (hv_tensor_t){in_place ? (t == 3 ? recv[t] : NULL) : send[t], recv[t], counts[t]};
  }
}

/* Every tensor holds factor times the exact reduction. */
static void check_group(void *recv[NT], hv_dtype_t dt, hv_op_t op, int step, double factor, const char *what) {
  for (int t = 0; t < NT; t++)
    CHECK_ELEMENTS(recv[t], dt, counts[t], factor * test_expected(op, place(t, i, step), N),
                   "%s %s %s step %d tensor %d", what, hv_dtype_name(dt), hv_op_name(op), step, t);
}

static int op_valid(hv_dtype_t dt, hv_op_t op) {
  return op != HV_AVERAGE || dt == HV_FLOAT16 || dt == HV_BFLOAT16 || dt == HV_FLOAT32 || dt == HV_FLOAT64;
}

static void test_values(hv_comm_t *comm, const char *algo) {
  void *send[NT], *recv[NT];
  for (int t = 0; t < NT; t++) send[t] = calloc(counts[t] + 1, 8), recv[t] = calloc(counts[t] + 1, 8);
  hv_tensor_t tensors[NT];
  for (int dt = 0; dt < HV_NUM_DTYPES; dt++)
    for (int op = 0; op < HV_NUM_OPS; op++) {
      if (!op_valid((hv_dtype_t)dt, (hv_op_t)op)) continue;
      char name[96];
      snprintf(name, sizeof name, "group.%s.%s", hv_dtype_name((hv_dtype_t)dt), hv_op_name((hv_op_t)op));
      for (int step = 0; step < 2; step++) { /* step 1: the name is cached */
        fill_group(send, recv, tensors, (hv_dtype_t)dt, (hv_op_t)op, step);
        hv_handle_t h = NULL;
        CHECK_RC(hv_grouped_allreduce_async(comm, name, tensors, NT, (hv_dtype_t)dt, (hv_op_t)op, NULL, &h));
        if (h) CHECK_RC(hv_wait(h));
        check_group(recv, (hv_dtype_t)dt, (hv_op_t)op, step, 1.0, algo);
      }
    }

  /* A group between two plain tensors, submitted together: fused in one run. */
  float a[37], b[300], aw[37], bw[300];
  fill_group(send, recv, tensors, HV_FLOAT32, HV_SUM, 2);
  for (int i = 0; i < 37; i++) a[i] = (float)test_input(HV_SUM, R, (size_t)i + 1000, N);
  for (int i = 0; i < 300; i++) b[i] = (float)test_input(HV_SUM, R, (size_t)i + 2000, N);
  hv_handle_t hs[3] = {NULL, NULL, NULL};
  CHECK_RC(hv_group_start(comm));
  CHECK_RC(hv_allreduce_async(comm, "plain.a", a, aw, 37, HV_FLOAT32, HV_SUM, NULL, &hs[0]));
  CHECK_RC(hv_grouped_allreduce_async(comm, "group.mixed", tensors, NT, HV_FLOAT32, HV_SUM, NULL, &hs[1]));
  CHECK_RC(hv_allreduce_async(comm, "plain.b", b, bw, 300, HV_FLOAT32, HV_SUM, NULL, &hs[2]));
  CHECK_RC(hv_group_end(comm));
  CHECK_RC(hv_wait_all(hs, 3));
  CHECK_ELEMENTS(aw, HV_FLOAT32, 37, test_expected(HV_SUM, i + 1000, N), "%s plain tensor before a group", algo);
  CHECK_ELEMENTS(bw, HV_FLOAT32, 300, test_expected(HV_SUM, i + 2000, N), "%s plain tensor after a group", algo);
  check_group(recv, HV_FLOAT32, HV_SUM, 2, 1.0, "mixed with plain tensors");

  /* Scaling and compression: inputs times 0.5, sums times 4, all small integers (exact
   * in fp16 as in float32). */
  hv_allreduce_opts_t opts = {0.5, 4.0, HV_COMPRESSION_FP16};
  fill_group(send, recv, tensors, HV_FLOAT32, HV_SUM, 3);
  CHECK_RC(hv_grouped_allreduce(comm, "group.scaled.fp16", tensors, NT, HV_FLOAT32, HV_SUM, &opts));
  check_group(recv, HV_FLOAT32, HV_SUM, 3, 2.0, "blocking, fp16, scaled by 0.5 then 4");

  /* An empty group completes (still matched by name on every rank). */
  CHECK_RC(hv_grouped_allreduce(comm, "group.empty", NULL, 0, HV_FLOAT32, HV_SUM, NULL));
  for (int t = 0; t < NT; t++) free(send[t]), free(recv[t]);
}

/* rc must be HV_ERR_MISMATCH on every rank, naming `want` in the detail. */
static void expect_mismatch(hv_comm_t *comm, hv_result_t rc, const char *want, const char *what) {
  const char *detail = hv_comm_last_error(comm);
  CHECK(rc == HV_ERR_MISMATCH, "%s: %s (%s), want a mismatch", what, hv_strerror(rc), detail);
  CHECK(strstr(detail, want) != NULL, "%s: the detail '%s' does not name '%s'", what, detail, want);
}

static void test_errors(hv_comm_t *comm) {
  float x[8] = {0}, y[8] = {0};
  hv_result_t rc;
  if (N == 1) goto arguments; /* a mismatch needs two ranks */
  /* 8 elements on every rank, split 3+5 on rank 0 and 5+3 elsewhere. */
  hv_tensor_t split[2] = {{x, y, R == 0 ? 3 : 5}, {x + (R == 0 ? 3 : 5), y + (R == 0 ? 3 : 5), R == 0 ? 5 : 3}};
  expect_mismatch(comm, hv_grouped_allreduce(comm, "bad.split", split, 2, HV_FLOAT32, HV_SUM, NULL),
                  "different lists of tensors", "the same total split differently");
  /* 8 elements as 2 tensors on rank 0, as 3 elsewhere. */
  hv_tensor_t three[3] = {{x, y, 3}, {x + 3, y + 3, 3}, {x + 6, y + 6, 2}};
  hv_tensor_t two[2] = {{x, y, 6}, {x + 6, y + 6, 2}};
  expect_mismatch(comm, hv_grouped_allreduce(comm, "bad.n", R == 0 ? two : three, R == 0 ? 2 : 3, HV_FLOAT32,
                                             HV_SUM, NULL),
                  "a group of 2 tensors", "another number of tensors");
  /* A group of one tensor against a plain allreduce of the same name and count. */
  hv_tensor_t one = {x, y, 8};
  rc = R == 0 ? hv_grouped_allreduce(comm, "bad.kind", &one, 1, HV_FLOAT32, HV_SUM, NULL)
                          : hv_allreduce(comm, "bad.kind", x, y, 8, HV_FLOAT32, HV_SUM, NULL);
  expect_mismatch(comm, rc, "one tensor (hv_allreduce)", "a group against a plain allreduce");
  /* Still usable: the same names, now agreeing. */
  for (int i = 0; i < 8; i++) x[i] = (float)(R + i);
  hv_tensor_t agree[2] = {{x, y, 3}, {x + 3, y + 3, 5}};
  CHECK_RC(hv_grouped_allreduce(comm, "bad.split", agree, 2, HV_FLOAT32, HV_SUM, NULL));
  CHECK_ELEMENTS(y, HV_FLOAT32, 8, (double)N * (N - 1) / 2 + (double)N * (double)i, "after the mismatches");

arguments:
  /* Argument checks fail at the call, on this rank alone. */
  for (int i = 0; i < 8; i++) x[i] = (float)(R + i);
  hv_tensor_t good[2] = {{x, y, 3}, {x + 3, y + 3, 5}};
  hv_handle_t h = NULL;
  rc = hv_grouped_allreduce_async(comm, "args", NULL, 2, HV_FLOAT32, HV_SUM, NULL, &h);
  CHECK(rc == HV_ERR_INVALID_ARGUMENT && strstr(hv_comm_last_error(comm), "tensor list is NULL"),
        "NULL list: %s (%s)", hv_strerror(rc), hv_comm_last_error(comm));
  hv_tensor_t no_recv[2] = {{x, y, 4}, {x + 4, NULL, 4}};
  rc = hv_grouped_allreduce_async(comm, "args", no_recv, 2, HV_FLOAT32, HV_SUM, NULL, &h);
  CHECK(rc == HV_ERR_INVALID_ARGUMENT && strstr(hv_comm_last_error(comm), "tensor 1 of the group"),
        "NULL recvbuf: %s (%s)", hv_strerror(rc), hv_comm_last_error(comm));
  hv_tensor_t overlapping[1] = {{x, x + 1, 4}};
  rc = hv_grouped_allreduce_async(comm, "args", overlapping, 1, HV_FLOAT32, HV_SUM, NULL, &h);
  CHECK(rc == HV_ERR_INVALID_ARGUMENT && strstr(hv_comm_last_error(comm), "overlap"),
        "overlapping buffers: %s (%s)", hv_strerror(rc), hv_comm_last_error(comm));
  rc = hv_grouped_allreduce_async(comm, "args", good, 2, HV_INT32, HV_AVERAGE, NULL, &h);
  CHECK(rc == HV_ERR_INVALID_ARGUMENT, "average of int32: %s", hv_strerror(rc));
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  MPI_Comm_size(MPI_COMM_WORLD, &N);
  char algo_list[128] = "auto,ring,rd,mpi,shm,hier";
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--algos=", 8) == 0) snprintf(algo_list, sizeof algo_list, "%s", argv[i] + 8);
  const char *algos[8];
  int nalgos = 0;
  for (char *tok = strtok(algo_list, ","); tok && nalgos < 8; tok = strtok(NULL, ",")) algos[nalgos++] = tok;
  static const char *const thresholds[] = {NULL, "4K"};
  for (int a = 0; a < nalgos; a++)
    for (int th = 0; th < 2; th++) {
      setenv("HV_ALLREDUCE_ALGO", algos[a], 1);
      if (thresholds[th]) setenv("HV_FUSION_THRESHOLD", thresholds[th], 1);
      else unsetenv("HV_FUSION_THRESHOLD");
      hv_comm_t *comm = NULL;
      hv_result_t rc = hv_init_from_mpi(MPI_COMM_WORLD, &comm);
      CHECK(rc == HV_SUCCESS, "hv_init_from_mpi: %s %s", hv_strerror(rc), hv_comm_last_error(NULL));
      if (rc != HV_SUCCESS) break;
      test_comm = comm;
      char what[64];
      snprintf(what, sizeof what, "%s, threshold %s", algos[a], thresholds[th] ? thresholds[th] : "default");
      test_values(comm, what);
      /* Asked for shared memory on one node (shm, auto) with several ranks: it must
       * have run (a silent fall-back to MPI passes every value check). */
      int local = 0;
      uint64_t shm_runs = 0;
      hv_comm_local_size(comm, &local);
      CHECK_RC(hv_comm_allreduce_count(comm, "shm", &shm_runs));
      if (local > 1 && local == N && (!strcmp(algos[a], "shm") || !strcmp(algos[a], "auto")))
        CHECK(shm_runs > 0, "%s: the grouped allreduces never ran in shared memory", what);
      if (a == 0 && th == 0) test_errors(comm);
      test_comm = NULL;
      CHECK_RC(hv_shutdown(comm));
    }
  int total = 0;
  MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (R == 0) printf("mpi_grouped on %d ranks: %d checks on rank 0, %d failures on all ranks\n", N, check_count, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
