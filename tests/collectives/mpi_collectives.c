/* mpi_collectives.c: every collective, dtype and op with exactly checkable values,
 * under mpirun with any number of ranks, for every allreduce algorithm.
 *
 * Inputs are small integers (products of 1s and 2s for PRODUCT), so every summation
 * order gives the same float and results are compared exactly. Counts cover 0, 1,
 * n-1, odd, not divisible by the rank count, the fusion threshold -1/0/+1 (the test
 * sets HV_FUSION_THRESHOLD=64K) and, with --large, 64 MiB. Everything of one
 * dtype/op is submitted at once, so requests are fused and negotiated together.
 * --quick (8 ranks on 2 cores, sanitizer builds) keeps int32, float16 and float32,
 * sum, max and average, and six of the counts (0, 1, n-1 and the fusion threshold
 * -1/0/+1). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "hv_mpi.h"
#include "test_util.h"

#define FUSION_BYTES 65536

static int R, N;
static int quick;

/* --quick's subset: int32 (integer path), float16 (converted reductions), float32. */
static int dtype_wanted(int dt) { return !quick || dt == HV_INT32 || dt == HV_FLOAT16 || dt == HV_FLOAT32; }
static int op_wanted(int op) { return !quick || op == HV_SUM || op == HV_MAX || op == HV_AVERAGE; }

static size_t counts[16];
static int ncounts;

static void make_counts(hv_dtype_t dt) {
  size_t t = FUSION_BYTES / hv_dtype_size(dt);
  size_t list[] = {0, 1, (size_t)(N > 1 ? N - 1 : 2), 7, 1000, 1001, 4099, t - 1, t, t + 1};
  size_t quick_list[] = {0, 1, (size_t)(N > 1 ? N - 1 : 2), t - 1, t, t + 1};
  ncounts = quick ? (int)(sizeof quick_list / sizeof quick_list[0]) : (int)(sizeof list / sizeof list[0]);
  memcpy(counts, quick ? quick_list : list, (size_t)ncounts * sizeof list[0]);
}

typedef struct pending {
  void *send, *recv;
  size_t count;
  hv_handle_t h;
} pending_t;

static void test_allreduce(hv_comm_t *comm, const char *algo) {
  pending_t p[2 * 16];
  for (int dt = 0; dt < HV_NUM_DTYPES; dt++) {
    if (!dtype_wanted(dt)) continue;
    make_counts((hv_dtype_t)dt);
    size_t es = hv_dtype_size((hv_dtype_t)dt);
    for (int op = 0; op < HV_NUM_OPS; op++) {
      if (op == HV_AVERAGE && (dt <= HV_INT64)) continue;
      if (!op_wanted(op)) continue;
      int np = 0;
      for (int c = 0; c < ncounts; c++)
        for (int inplace = 0; inplace < 2; inplace++) {
          pending_t *q = &p[np++];
          q->count = counts[c];
          q->send = malloc(q->count * es + 1);
          q->recv = inplace ? q->send : malloc(q->count * es + 1);
          for (size_t i = 0; i < q->count; i++) elem_set(q->send, (hv_dtype_t)dt, i, test_input((hv_op_t)op, R, i, N));
          char name[128];
          snprintf(name, sizeof name, "ar.%s.%s.%d.%zu.%s", hv_dtype_name((hv_dtype_t)dt),
                   hv_op_name((hv_op_t)op), c, q->count, inplace ? "in" : "out");
          hv_result_t rc = hv_allreduce_async(comm, name, q->send, q->recv, q->count, (hv_dtype_t)dt,
                                              (hv_op_t)op, NULL, &q->h);
          CHECK(rc == HV_SUCCESS, "submit %s: %s", name, hv_comm_last_error(comm));
          if (rc != HV_SUCCESS) q->h = NULL;
        }
      for (int k = 0; k < np; k++) {
        pending_t *q = &p[k];
        hv_result_t rc = q->h ? hv_wait(q->h) : HV_ERR_INVALID_ARGUMENT;
        CHECK(rc == HV_SUCCESS, "allreduce wait: %s %s", hv_strerror(rc), hv_comm_last_error(comm));
        CHECK_ELEMENTS(q->recv, (hv_dtype_t)dt, q->count, test_expected((hv_op_t)op, i, N),
                       "algo %s allreduce %s %s count %zu rank %d", algo, hv_dtype_name((hv_dtype_t)dt),
                       hv_op_name((hv_op_t)op), q->count, R);
        if (q->recv != q->send) free(q->recv);
        free(q->send);
      }
    }
  }
  /* Scaling and compression on float32 (exact: small integers and powers of two). */
  const hv_compression_t comps[] = {HV_COMPRESSION_NONE, HV_COMPRESSION_FP16, HV_COMPRESSION_BF16};
  for (int c = 0; c < 3; c++) {
    size_t n = 5000;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) x[i] = (float)test_input(HV_SUM, R, i, N);
    hv_allreduce_opts_t opts = {2.0, 0.25, comps[c]};
    char name[64];
    snprintf(name, sizeof name, "scaled.%d", c);
    CHECK_RC(hv_allreduce(comm, name, x, y, n, HV_FLOAT32, HV_SUM, &opts));
    CHECK_ELEMENTS(y, HV_FLOAT32, n, test_expected(HV_SUM, i, N) * 0.5, "algo %s prescale/postscale compression %d", algo, c);
    free(x);
    free(y);
  }
}

/* 64 MiB in place; with out_of_place, also into a second buffer (read and written
 * to their last byte: what AddressSanitizer watches in --large-only runs). */
static void test_large(hv_comm_t *comm, const char *algo, int out_of_place) {
  size_t n = (64u << 20) / sizeof(float);
  float *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (float)test_input(HV_SUM, R, i, N);
  if (out_of_place) {
    float *y = malloc(n * sizeof *y);
    CHECK_RC(hv_allreduce(comm, "large.64MiB.out", x, y, n, HV_FLOAT32, HV_SUM, NULL));
    CHECK_ELEMENTS(y, HV_FLOAT32, n, test_expected(HV_SUM, i, N), "algo %s 64 MiB allreduce out of place", algo);
    free(y);
  }
  CHECK_RC(hv_allreduce(comm, "large.64MiB", x, x, n, HV_FLOAT32, HV_SUM, NULL));
  CHECK_ELEMENTS(x, HV_FLOAT32, n, test_expected(HV_SUM, i, N), "algo %s 64 MiB allreduce", algo);
  free(x);
}

/* What ran must be what was asked for: a shared-memory algorithm that silently fell
 * back to MPI would otherwise pass every value check above. shm_expected: the node
 * has several ranks and nothing turned shared memory off on purpose (the caller's
 * --shm=off says /dev/shm is too small here, and then the fall-back must be seen). */
static void check_algorithms_ran(hv_comm_t *comm, const char *algo, int shm_expected) {
  static const char *const names[] = {"shm", "hier_shm", "hier", "ring", "rd", "rab", "2d", "mpi"};
  uint64_t n[8], total = 0;
  char seen[256] = "";
  for (int i = 0; i < 8; i++) {
    CHECK_RC(hv_comm_allreduce_count(comm, names[i], &n[i]));
    total += n[i];
    if (n[i]) snprintf(seen + strlen(seen), sizeof seen - strlen(seen), " %s:%llu", names[i], (unsigned long long)n[i]);
  }
  int local = 0, cross = 0, on = -1;
  char why[512];
  hv_comm_local_size(comm, &local);
  hv_comm_cross_size(comm, &cross);
  CHECK_RC(hv_comm_shm_status(comm, &on, why, sizeof why));
  if (N == 1) {
    CHECK(total == 0, "algo %s on one rank: allreduces counted (%s) though nothing communicates", algo, seen);
    return;
  }
  CHECK(total > 0, "algo %s: no allreduce counted", algo);
  if (local > 1) {
    CHECK(on == shm_expected, "algo %s: shared memory is %s, expected %s (%s)", algo, on ? "on" : "off",
          shm_expected ? "on" : "off", why);
  }
  const uint64_t shm_runs = n[0] + n[1];
  if (!shm_expected || local == 1) CHECK(shm_runs == 0, "algo %s: shared memory ran (%s) though it is off", algo, seen);
  /* Forced shm and auto on one node, and forced hier, use shared memory for every
   * batch (on several nodes, auto's small batches take recursive doubling, and the
   * shm allreduce, which needs every rank on one node, is the ring). */
  if (shm_expected && local > 1) {
    if (((!strcmp(algo, "shm") || !strcmp(algo, "auto")) && cross == 1) || !strcmp(algo, "hier"))
      CHECK(shm_runs == total, "algo %s: %llu of %llu batches did not run in shared memory (%s)", algo,
            (unsigned long long)(total - shm_runs), (unsigned long long)total, seen);
    if (!strcmp(algo, "auto") && cross > 1) CHECK(n[1] > 0, "algo auto on %d nodes: hier_shm never ran (%s)", cross, seen);
  }
  if ((!shm_expected || cross > 1) && !strcmp(algo, "shm"))
    CHECK(n[3] == total, "algo shm without shared memory or on several nodes: expected the ring for every batch (%s)", seen);
  for (int i = 2; i < 8; i++) /* a forced flat algorithm runs alone */
    if (!strcmp(algo, names[i]) && i != 2)
      CHECK(n[i] == total, "algo %s forced: ran%s", algo, seen);
  if (!strcmp(algo, "hier") && !shm_expected) CHECK(n[2] == total, "algo hier without shared memory: ran%s", seen);
  if (R == 0) printf("algo %s: allreduce batches by algorithm:%s%s%s\n", algo, seen, on ? "" : "; shared memory off: ",
                     on ? "" : why);
}

static void test_other_collectives(hv_comm_t *comm) {
  for (int dt = 0; dt < HV_NUM_DTYPES; dt++) {
    if (!dtype_wanted(dt)) continue;
    hv_dtype_t t = (hv_dtype_t)dt;
    size_t es = hv_dtype_size(t);
    make_counts(t);
    for (int c = 0; c < ncounts; c++) {
      size_t n = counts[c];
      char name[128];
      /* allgather, out of place and in place */
      char *send = malloc(n * es + 1), *recv = malloc(n * es * (size_t)N + 1);
      for (size_t i = 0; i < n; i++) elem_set(send, t, i, (double)((R * 13 + (int)i) % 50));
      snprintf(name, sizeof name, "ag.%s.%d", hv_dtype_name(t), c);
      CHECK_RC(hv_allgather(comm, name, send, recv, n, t));
      CHECK_ELEMENTS(recv, t, n * (size_t)N, (double)(((int)(i / (n ? n : 1)) * 13 + (int)(i % (n ? n : 1))) % 50),
                     "allgather %s count %zu", hv_dtype_name(t), n);
      memset(recv, 0, n * es * (size_t)N);
      memcpy(recv + (size_t)R * n * es, send, n * es);
      snprintf(name, sizeof name, "ag.inplace.%s.%d", hv_dtype_name(t), c);
      CHECK_RC(hv_allgather(comm, name, recv + (size_t)R * n * es, recv, n, t));
      CHECK_ELEMENTS(recv, t, n * (size_t)N, (double)(((int)(i / (n ? n : 1)) * 13 + (int)(i % (n ? n : 1))) % 50),
                     "allgather in place %s count %zu", hv_dtype_name(t), n);
      free(send);
      free(recv);

      /* allgatherv: rank r contributes (r+1)*n elements, all equal to r+1 */
      size_t mine = (size_t)(R + 1) * n, total = n * (size_t)N * (size_t)(N + 1) / 2;
      send = malloc(mine * es + 1);
      recv = malloc(total * es + 1);
      size_t *rc = calloc((size_t)N, sizeof *rc);
      for (size_t i = 0; i < mine; i++) elem_set(send, t, i, R + 1);
      snprintf(name, sizeof name, "agv.%s.%d", hv_dtype_name(t), c);
      CHECK_RC(hv_allgatherv(comm, name, send, mine, t, recv, total, rc));
      for (int q = 0; q < N; q++) CHECK(rc[q] == (size_t)(q + 1) * n, "allgatherv count of rank %d: %zu", q, rc[q]);
      size_t at = 0;
      for (int q = 0; q < N; q++)
        for (size_t i = 0; i < (size_t)(q + 1) * n; i++, at++)
          if (elem_get(recv, t, at) != q + 1) {
            CHECK(0, "allgatherv %s n %zu element %zu from rank %d: %g", hv_dtype_name(t), n, at, q, elem_get(recv, t, at));
            q = N;
            break;
          }
      free(send);
      free(recv);
      free(rc);

      /* broadcast from every root */
      char *buf = malloc(n * es + 1);
      for (int root = 0; root < N; root++) {
        for (size_t i = 0; i < n; i++) elem_set(buf, t, i, R == root ? (double)((i + (size_t)root) % 60) : 99);
        snprintf(name, sizeof name, "bc.%s.%d.%d", hv_dtype_name(t), c, root);
        CHECK_RC(hv_broadcast(comm, name, buf, n, t, root));
        CHECK_ELEMENTS(buf, t, n, (double)((i + (size_t)root) % 60), "broadcast %s count %zu root %d", hv_dtype_name(t), n, root);
      }
      free(buf);

      /* reducescatter (sum, max) */
      send = malloc(n * es * (size_t)N + 1);
      recv = malloc(n * es + 1);
      for (int op = HV_SUM; op <= HV_MAX; op += 3) {
        for (size_t i = 0; i < n * (size_t)N; i++) elem_set(send, t, i, test_input((hv_op_t)op, R, i, N));
        snprintf(name, sizeof name, "rs.%s.%d.%d", hv_dtype_name(t), c, op);
        CHECK_RC(hv_reducescatter(comm, name, send, recv, n, t, (hv_op_t)op));
        CHECK_ELEMENTS(recv, t, n, test_expected((hv_op_t)op, (size_t)R * n + i, N), "reducescatter %s %s count %zu",
                       hv_dtype_name(t), hv_op_name((hv_op_t)op), n);
      }
      free(send);
      free(recv);

      /* alltoall: block j from rank r holds r*10+j */
      send = malloc(n * es * (size_t)N + 1);
      recv = malloc(n * es * (size_t)N + 1);
      for (int j = 0; j < N; j++)
        for (size_t i = 0; i < n; i++) elem_set(send, t, (size_t)j * n + i, (double)((R * 10 + j + (int)i) % 100));
      snprintf(name, sizeof name, "a2a.%s.%d", hv_dtype_name(t), c);
      CHECK_RC(hv_alltoall(comm, name, send, recv, n, t));
      CHECK_ELEMENTS(recv, t, n * (size_t)N, (double)((((int)(i / (n ? n : 1))) * 10 + R + (int)(i % (n ? n : 1))) % 100),
                     "alltoall %s count %zu", hv_dtype_name(t), n);
      free(send);
      free(recv);
    }
  }
  CHECK_RC(hv_barrier(comm));
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  MPI_Comm_size(MPI_COMM_WORLD, &N);
  /* Arguments: --large (add the 64 MiB case), --large-only (only that case: the
   * AddressSanitizer build's 64 MiB run), --quick (fewer dtypes, ops and counts),
   * --shm=off (shared memory must be found missing: every algorithm falls back to
   * MPI), --algos=a,b,... (default: all). An
   * algorithm written name@SIZE runs with HV_SHM_SLOT_BYTES=SIZE: shm@4K makes fused
   * batches span several slot-sized pieces, with tensors split across their edges. */
  int large = 0, large_only = 0, shm_off = 0;
  char algo_list[128] = "auto,ring,rd,mpi,hier,shm,shm@4K,rab,2d";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--large") == 0) large = 1;
    else if (strcmp(argv[i], "--large-only") == 0) large = large_only = 1;
    else if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--shm=off") == 0) shm_off = 1; /* /dev/shm is too small here */
    else if (strncmp(argv[i], "--algos=", 8) == 0) snprintf(algo_list, sizeof algo_list, "%s", argv[i] + 8);
  }
  setenv("HV_FUSION_THRESHOLD", "64K", 1);
  const char *algos[16];
  int nalgos = 0;
  for (char *tok = strtok(algo_list, ","); tok && nalgos < 16; tok = strtok(NULL, ",")) algos[nalgos++] = tok;
  for (int a = 0; a < nalgos; a++) {
    char algo[32];
    snprintf(algo, sizeof algo, "%s", algos[a]);
    char *slot = strchr(algo, '@');
    if (slot) *slot++ = '\0', setenv("HV_SHM_SLOT_BYTES", slot, 1);
    else unsetenv("HV_SHM_SLOT_BYTES");
    setenv("HV_ALLREDUCE_ALGO", algo, 1);
    hv_comm_t *comm = NULL;
    hv_result_t rc = hv_init_from_mpi(MPI_COMM_WORLD, &comm);
    CHECK(rc == HV_SUCCESS, "hv_init_from_mpi: %s %s", hv_strerror(rc), hv_comm_last_error(NULL));
    if (rc != HV_SUCCESS) break;
    test_comm = comm;
    int size = 0, rank = -1;
    hv_comm_size(comm, &size);
    hv_comm_rank(comm, &rank);
    CHECK(size == N && rank == R, "rank/size %d/%d, MPI says %d/%d", rank, size, R, N);
    if (!large_only) test_allreduce(comm, algos[a]);
    if (large) test_large(comm, algos[a], large_only);
    check_algorithms_ran(comm, algo, !shm_off && !(slot && strcmp(slot, "0") == 0));
    if (a == 0 && !large_only) test_other_collectives(comm);
    if (a == 0 && getenv("HV_RANKS_PER_NODE")) {
      int cross = 0, local = 0;
      hv_comm_local_size(comm, &local);
      hv_comm_cross_size(comm, &cross);
      int per = atoi(getenv("HV_RANKS_PER_NODE"));
      CHECK(local == per && cross == N / per, "emulated nodes: local size %d, cross size %d for %d per node", local, cross, per);
    }
    test_comm = NULL;
    CHECK_RC(hv_shutdown(comm));
  }
  int total = 0;
  MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (R == 0) printf("mpi_collectives on %d ranks: %d checks on rank 0, %d failures on all ranks\n", N, check_count, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
