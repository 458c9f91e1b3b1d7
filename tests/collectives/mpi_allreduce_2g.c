/* mpi_allreduce_2g.c: one allreduce of more than 2^31 elements (int8, in place)
 * through the engine, checked element by element, for each allreduce algorithm asked.
 *
 * MPI counts are int and hv's are size_t: anything on the way that keeps a count or
 * an offset in an int (a message size, a segment offset, a wire field, a loop index)
 * overflows past 2^31 and shows up here as a failed call or wrong elements. Rank r
 * contributes (i % 61) + r at element i (61 is prime and does not divide 2^31 or
 * 2^32, so data read from an offset that wrapped at either differs); over 2 ranks the
 * sum, 2 (i % 61) + 1 <= 121, fits int8 exactly. In place, so each rank holds one
 * buffer of COUNT bytes (2 GiB + 4099 by default). With --others, the same buffer
 * then carries an in-place allgather (a block of COUNT / 2 elements from each rank,
 * so the second block starts past 2^30 and the whole is past 2^31) and a broadcast
 * of all COUNT elements from rank 1.
 *   mpirun -np 2 mpi_allreduce_2g [--algos=auto,ring,...] [--count N] [--others] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "hv_mpi.h"
#include "test_util.h"

#define PERIOD 61

static void fill(int8_t *x, size_t n, int r) {
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    x[i] = (int8_t)(v + r);
    if (++v == PERIOD) v = 0;
  }
}

/* The number of elements of x[0, n) other than scale (i % PERIOD) + add (the first
 * few printed; at says where x starts in the whole buffer). */
static size_t count_wrong(const int8_t *x, size_t n, int scale, int add, const char *what, size_t at, int rank) {
  size_t bad = 0;
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    const int want = scale * v + add;
    if (x[i] != want && bad++ < 5)
      fprintf(stderr, "rank %d: %s: element %zu is %d, expected %d\n", rank, what, at + i, x[i], want);
    if (++v == PERIOD) v = 0;
  }
  return bad;
}

/* An in-place allgather of count / 2 elements a rank, then a broadcast of count
 * from rank 1, over x. */
static void test_others(hv_comm_t *comm, int8_t *x, size_t count, int R, int N) {
  const size_t n = count / 2;
  memset(x, 0x7f, count);
  fill(x + (size_t)R * n, n, R);
  double t0 = MPI_Wtime();
  CHECK_RC(hv_allgather(comm, "allgather.2g", x + (size_t)R * n, x, n, HV_INT8));
  double t1 = MPI_Wtime();
  for (int q = 0; q < N; q++) {
    size_t bad = count_wrong(x + (size_t)q * n, n, 1, q, "allgather", (size_t)q * n, R);
    CHECK(bad == 0, "rank %d: allgather: %zu of the %zu elements from rank %d wrong", R, bad, n, q);
  }
  if (R == 1) fill(x, count, 5);
  else memset(x, 0, count);
  double t2 = MPI_Wtime();
  CHECK_RC(hv_broadcast(comm, "broadcast.2g", x, count, HV_INT8, 1));
  double t3 = MPI_Wtime();
  size_t bad = count_wrong(x, count, 1, 5, "broadcast", 0, R);
  CHECK(bad == 0, "rank %d: broadcast: %zu of %zu elements wrong", R, bad, count);
  if (R == 0) printf("allgather of %zu int8 elements in %.1f s, broadcast of %zu in %.1f s\n", n * (size_t)N, t1 - t0, count, t3 - t2);
}

int main(int argc, char **argv) {
  int provided, R, N;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  MPI_Comm_size(MPI_COMM_WORLD, &N);
  size_t count = ((size_t)1 << 31) + 4099;
  char algo_list[128] = "auto";
  int others = 0;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--algos=", 8) == 0) snprintf(algo_list, sizeof algo_list, "%s", argv[i] + 8);
    else if (strcmp(argv[i], "--others") == 0) others = 1;
    else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) count = strtoull(argv[++i], NULL, 10);
  }
  /* Exactness needs N (PERIOD - 1) + N (N - 1) / 2 <= 127. */
  CHECK(N == 2, "run on 2 ranks (the int8 sums are exact only there), not %d", N);
  int8_t *x = N == 2 ? malloc(count) : NULL;
  CHECK(x != NULL || N != 2, "rank %d: no memory for %zu bytes", R, count);
  for (char *tok = strtok(algo_list, ","); tok && x; tok = strtok(NULL, ",")) {
    setenv("HV_ALLREDUCE_ALGO", tok, 1);
    hv_comm_t *comm = NULL;
    hv_result_t rc = hv_init_from_mpi(MPI_COMM_WORLD, &comm);
    CHECK(rc == HV_SUCCESS, "hv_init_from_mpi: %s %s", hv_strerror(rc), hv_comm_last_error(NULL));
    if (rc != HV_SUCCESS) break;
    test_comm = comm;
    fill(x, count, R);
    double t0 = MPI_Wtime();
    CHECK_RC(hv_allreduce(comm, "allreduce.2g", x, x, count, HV_INT8, HV_SUM, NULL));
    double t1 = MPI_Wtime();
    char what[64];
    snprintf(what, sizeof what, "allreduce, algo %s", tok);
    size_t bad = count_wrong(x, count, N, N * (N - 1) / 2, what, 0, R);
    CHECK(bad == 0, "rank %d: algo %s: %zu of %zu elements wrong", R, tok, bad, count);
    if (R == 0) printf("algo %s: %zu int8 elements in %.1f s\n", tok, count, t1 - t0);
    fflush(stdout);
    if (others) test_others(comm, x, count, R, N), others = 0;
    test_comm = NULL;
    CHECK_RC(hv_shutdown(comm));
  }
  free(x);
  int total = 0;
  MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (R == 0) printf("mpi_allreduce_2g on %d ranks: %d checks on rank 0, %d failures on all ranks\n", N, check_count, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
