/* algo_test.c: every algorithm of collectives/algo run alone (no engine), with exact
 * integer-valued results, on either transport:
 *   --transport local --nodes N --per-node K   N*K ranks as threads of this process
 *                                              (transport_local.c; shared memory is
 *                                              one calloc'd region per node)
 *   --transport mpi --per-node K               the ranks of mpirun, K per emulated node
 *                                              (MPI point-to-point; POSIX shared memory)
 * Allreduce: ring, recursive doubling, Rabenseifner's, the 2-D grid (its own width,
 * one row, and rab down the columns), shared memory (one node), hierarchical with
 * and without shared memory (several nodes; also with rab across nodes), MPI's own
 * (MPI only), and the non-blocking ring; every dtype, sum/min/max/product, counts 0
 * to 100003, and the element past the count untouched. The sub-transport (ranks in
 * reverse, tags of its own) and the choice of the two-level allreduces' outer
 * algorithm. Then reduce-scatter, allgatherv over uneven and empty blocks,
 * alltoall, and broadcast (MPI only). --expect-auto checks what `auto` chooses on
 * the shape; --quick runs fewer dtypes, reductions and counts (simulated builds,
 * tests/sim). Exit status 1 on any failure. */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "test_util.h"

static atomic_int checks, failures;
/* --quick: two dtypes, two reductions, three counts (the simulated runs, where every
 * rank is a simulated process and a case costs far more wall time). */
static int quick;

#define EXPECT(cond, ...) CHECK_ATOMIC(checks, failures, cond, __VA_ARGS__)

/* One rank's view: its contexts over all ranks, its node and its cross group. */
typedef struct rank_env {
  hv__algo_host_t host;
  hv__algo_ctx_t all, local, cross;
  hv__shm_t shm;
  int has_shm, mpi;
} rank_env_t;

static void record_error(void *owner, const char *detail) {
  const rank_env_t *env = owner;
  fprintf(stderr, "[rank %d] %s\n", env->host.rank, detail);
}

/* --link GBITS,LAT_US: the link model auto's rd limit follows (HV_LINK_GBITS,
 * HV_LINK_LATENCY_US); 0: none, the fixed HV_SMALL_ALLREDUCE_BYTES. */
static double link_gbits, link_lat_us;

static void host_init(rank_env_t *env, int rank) {
  hv__algo_host_defaults(&env->host);
  env->host.link_Bps = link_gbits * 1e9 / 8;
  env->host.link_latency_s = link_lat_us * 1e-6;
  env->host.rank = env->host.errors.rank = rank;
  env->host.errors.record = record_error;
  env->host.errors.owner = env;
  env->host.timeout_s = 120;
  env->host.ring_chunk_bytes = 4096; /* many chunks per segment at these sizes */
}

/* Wires the hierarchy once the three contexts exist. */
static void link_contexts(rank_env_t *env) {
  env->all.local = &env->local;
  env->all.cross = &env->cross;
  env->all.uniform_nodes = 1;
  env->all.shm = env->has_shm ? &env->shm : NULL;
}

/* ---- values: tests/collectives/test_util.h's elements and inputs (check.h's
 * counters are not for threads: this test counts in atomics) ---- */
static double expected(hv_op_t op, size_t i, int n) { return test_expected(op, i, n); }
static double input(hv_op_t op, int r, size_t i) { return test_input(op, r, i, 0); }

/* Counts the elements that differ from want(i); prints the first. */
static size_t mismatches(const void *buf, hv_dtype_t dt, size_t n, hv_op_t op, int size, const char *what, int rank) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double got = elem_get(buf, dt, i), want = expected(op, i, size);
    if (got != want && bad++ == 0)
      fprintf(stderr, "rank %d: %s [%zu]: got %.17g, expected %.17g\n", rank, what, i, got, want);
  }
  return bad;
}

/* ---- the cases ---- */
typedef hv_result_t (*allreduce_fn)(hv__algo_ctx_t *, void *, size_t, hv_dtype_t, hv_op_t);

static hv_result_t ring_nb(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dt, hv_op_t op) {
  hv__ring_nb_t nb;
  HV_CHECK(hv__ring_nb_start(&nb, ctx, buf, count, dt, op));
  int done = 0;
  for (int polls = 0; !done && polls < 3; polls++) HV_CHECK(hv__ring_nb_progress(&nb, &done));
  return hv__ring_nb_finish(&nb);
}

static void test_allreduce(rank_env_t *env, const char *name, allreduce_fn fn) {
  static const size_t all_counts[] = {0, 1, 7, 1000, 100003}, quick_counts[] = {0, 1000, 20011};
  static const hv_op_t all_ops[] = {HV_SUM, HV_MIN, HV_MAX, HV_PRODUCT}, quick_ops[] = {HV_SUM, HV_MAX};
  static const hv_dtype_t all_dtypes[] = {HV_UINT8, HV_INT8,    HV_INT32,   HV_INT64,
                                          HV_FLOAT16, HV_BFLOAT16, HV_FLOAT32, HV_FLOAT64},
                          quick_dtypes[] = {HV_INT32, HV_FLOAT32};
  const size_t *counts = quick ? quick_counts : all_counts;
  const hv_op_t *ops = quick ? quick_ops : all_ops;
  const hv_dtype_t *dtypes = quick ? quick_dtypes : all_dtypes;
  const size_t ncounts = quick ? 3 : 5, nops = quick ? 2 : 4, ndtypes = quick ? 2 : 8;
  const int r = env->all.transport.rank, n = env->all.transport.size;
  for (size_t di = 0; di < ndtypes; di++)
    for (size_t oi = 0; oi < nops; oi++)
      for (size_t ci = 0; ci < ncounts; ci++) {
        const int dt = (int)dtypes[di];
        const size_t count = counts[ci], es = hv_dtype_size((hv_dtype_t)dt);
        unsigned char *buf = malloc((count + 1) * es);
        for (size_t i = 0; i < count; i++) elem_set(buf, (hv_dtype_t)dt, i, input(ops[oi], r, i));
        memset(buf + count * es, 0xA5, es);
        hv_result_t rc = fn(&env->all, buf, count, (hv_dtype_t)dt, ops[oi]);
        char what[128];
        snprintf(what, sizeof what, "%s %s %s count %zu", name, hv_dtype_name((hv_dtype_t)dt), hv_op_name(ops[oi]), count);
        EXPECT(rc == HV_SUCCESS, "rank %d: %s: %s", r, what, hv_strerror(rc));
        EXPECT(mismatches(buf, (hv_dtype_t)dt, count, ops[oi], n, what, r) == 0, "rank %d: %s: wrong values", r, what);
        for (size_t b = 0; b < es; b++) EXPECT(buf[count * es + b] == 0xA5, "rank %d: %s wrote past the count", r, what);
        free(buf);
      }
}

static void test_reducescatter(rank_env_t *env) {
  const int r = env->all.transport.rank, n = env->all.transport.size;
  static const size_t blocks[] = {0, 1, 1000};
  for (size_t bi = 0; bi < 3; bi++) {
    const size_t block = blocks[bi];
    int32_t *buf = malloc(sizeof *buf * (block * (size_t)n + 1));
    for (size_t i = 0; i < block * (size_t)n; i++) buf[i] = (int32_t)input(HV_SUM, r, i);
    EXPECT(hv__reducescatter(&env->all, buf, block, HV_INT32, HV_SUM) == HV_SUCCESS, "rank %d: reducescatter", r);
    size_t bad = 0;
    for (size_t i = 0; i < block; i++) bad += buf[(size_t)r * block + i] != expected(HV_SUM, (size_t)r * block + i, n);
    EXPECT(bad == 0, "rank %d: reducescatter of blocks of %zu: %zu wrong", r, block, bad);
    free(buf);
  }
}

/* Rank q contributes (q % 3) * 501 elements (so some contribute none), value q*1e6+i. */
static void test_allgatherv(rank_env_t *env) {
  const int r = env->all.transport.rank, n = env->all.transport.size;
  size_t *off = calloc((size_t)n + 1, sizeof *off);
  for (int q = 0; q < n; q++) off[q + 1] = off[q] + (size_t)(q % 3) * 501;
  int64_t *buf = calloc(off[n] + 1, sizeof *buf);
  for (size_t i = off[r]; i < off[r + 1]; i++) buf[i] = (int64_t)r * 1000000 + (int64_t)(i - off[r]);
  EXPECT(hv__allgather(&env->all, buf, off, sizeof *buf) == HV_SUCCESS, "rank %d: allgatherv", r);
  size_t bad = 0;
  for (int q = 0; q < n; q++)
    for (size_t i = off[q]; i < off[q + 1]; i++) bad += buf[i] != (int64_t)q * 1000000 + (int64_t)(i - off[q]);
  EXPECT(bad == 0, "rank %d: allgatherv: %zu wrong", r, bad);
  free(buf);
  free(off);
}

static void test_alltoall(rank_env_t *env) {
  const int r = env->all.transport.rank, n = env->all.transport.size;
  static const size_t sizes[] = {0, 1, 4099};
  for (size_t si = 0; si < 3; si++) {
    const size_t bytes = sizes[si];
    unsigned char *send = malloc(bytes * (size_t)n + 1), *recv = malloc(bytes * (size_t)n + 1);
    for (int q = 0; q < n; q++)
      for (size_t b = 0; b < bytes; b++) send[(size_t)q * bytes + b] = (unsigned char)(r * 31 + q * 7 + (int)b);
    EXPECT(hv__alltoall(&env->all, send, recv, bytes) == HV_SUCCESS, "rank %d: alltoall", r);
    size_t bad = 0;
    for (int q = 0; q < n; q++)
      for (size_t b = 0; b < bytes; b++) bad += recv[(size_t)q * bytes + b] != (unsigned char)(q * 31 + r * 7 + (int)b);
    EXPECT(bad == 0, "rank %d: alltoall of %zu bytes: %zu wrong", r, bytes, bad);
    free(send);
    free(recv);
  }
}

static void test_broadcast(rank_env_t *env) {
  const int r = env->all.transport.rank, n = env->all.transport.size;
  for (int root = 0; root < n; root += n > 2 ? n - 1 : 1) {
    int32_t buf[777];
    for (int i = 0; i < 777; i++) buf[i] = r == root ? root * 1000 + i : -1;
    EXPECT(hv__broadcast(&env->all, buf, sizeof buf, root) == HV_SUCCESS, "rank %d: broadcast", r);
    int bad = 0;
    for (int i = 0; i < 777; i++) bad += buf[i] != root * 1000 + i;
    EXPECT(bad == 0, "rank %d: broadcast from %d: %d wrong", r, root, bad);
  }
}

/* A sub-transport over all ranks in reverse order: its sub-rank i is rank n-1-i, and
 * a message on it must not match a receive on the parent with the same tag (each
 * rank sends first on the parent, then on the sub-transport, to the same peer). */
static void test_sub_transport(rank_env_t *env) {
  hv__transport_t *parent = &env->all.transport, sub;
  const int r = parent->rank, n = parent->size;
  int *ranks = malloc((size_t)n * sizeof *ranks);
  for (int i = 0; i < n; i++) ranks[i] = n - 1 - i;
  hv__transport_sub_t impl;
  EXPECT(hv__transport_sub_init(&sub, &impl, parent, ranks, n, HV__TAG_SUB_ROW) == HV_SUCCESS, "rank %d: sub-transport",
         r);
  EXPECT(sub.rank == n - 1 - r && sub.size == n, "rank %d: sub-rank %d of %d", r, sub.rank, sub.size);
  const int right = (r + 1) % n, left = (r - 1 + n) % n, sub_right = n - 1 - right, sub_left = n - 1 - left;
  int32_t out[2] = {r, 1000 + r}, in[2] = {-1, -1};
  hv__request_t req[4];
  EXPECT(parent->isend(parent, right, HV__TAG_RD, &out[0], sizeof out[0], &req[0]) == HV_SUCCESS, "parent send");
  EXPECT(sub.isend(&sub, sub_right, HV__TAG_RD, &out[1], sizeof out[1], &req[1]) == HV_SUCCESS, "sub send");
  EXPECT(sub.irecv(&sub, sub_left, HV__TAG_RD, &in[1], sizeof in[1], &req[2]) == HV_SUCCESS, "sub receive");
  EXPECT(parent->irecv(parent, left, HV__TAG_RD, &in[0], sizeof in[0], &req[3]) == HV_SUCCESS, "parent receive");
  EXPECT(sub.waitall(&sub, req, 4) == HV_SUCCESS, "rank %d: sub-transport wait", r);
  EXPECT(in[0] == left && in[1] == 1000 + left, "rank %d: parent got %d, sub got %d; expected %d and %d", r, in[0],
         in[1], left, 1000 + left);
  free(ranks);
}

/* The outer phase's algorithm: the host's cross_algo when flat, else the rule of
 * allreduce_select.c (rd for two ranks, rab for a power of two from 4, the ring). */
static void test_cross_select(rank_env_t *env) {
  const hv__algo_ctx_t *c = &env->all;
  const size_t small = env->host.small_allreduce_bytes, big = small + 1;
  const int n = c->transport.size;
  const hv__algo_t big_auto = n >= 4 && !(n & (n - 1)) ? HV__ALGO_RAB : HV__ALGO_RING;
  EXPECT(hv__cross_allreduce_select(c, small)->id == HV__ALGO_RD, "auto, small: rd");
  EXPECT(hv__cross_allreduce_select(c, big)->id == big_auto, "auto, large: %s", hv__algo_name(big_auto));
  env->host.cross_algo = HV__ALGO_RAB;
  EXPECT(hv__cross_allreduce_select(c, small)->id == HV__ALGO_RAB, "rab asked for: rab");
  env->host.cross_algo = HV__ALGO_2D;
  EXPECT(hv__cross_allreduce_select(c, big)->id == big_auto, "2d asked for: the rule");
  env->host.cross_algo = HV__ALGO_AUTO;
  EXPECT(hv__algo_from_name("RAB") == HV__ALGO_RAB && hv__algo_from_name("2d") == HV__ALGO_2D &&
             !strcmp(hv__algo_name(HV__ALGO_2D), "2d"),
         "names of rab and 2d");
}

static hv_result_t hier_without_shm(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dt, hv_op_t op) {
  hv__shm_t *shm = ctx->shm;
  ctx->shm = NULL;
  hv_result_t rc = hv__allreduce_hier(ctx, buf, count, dt, op);
  ctx->shm = shm;
  return rc;
}

/* --expect-auto 4096=rd,16777216=hier: what auto must choose at each size on this
 * shape (the selection table of allreduce_select.c), checked on every rank. */
static const char *expect_auto;
/* --auto-only: check auto's choices and run nothing else. */
static int auto_only;

static void check_auto(rank_env_t *env) {
  if (!expect_auto) return;
  char list[512];
  snprintf(list, sizeof list, "%s", expect_auto);
  for (char *save = NULL, *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (!eq) {
      EXPECT(0, "--expect-auto: '%s' is not SIZE=ALGORITHM", item);
      continue;
    }
    *eq = '\0';
    const size_t bytes = strtoull(item, NULL, 10);
    const char *got = hv__allreduce_select(&env->all, HV__ALGO_AUTO, bytes)->name;
    EXPECT(!strcmp(got, eq + 1), "rank %d: auto chose %s for %zu bytes, the table says %s", env->all.transport.rank,
           got, bytes, eq + 1);
  }
}

static void run_cases(rank_env_t *env, int nodes) {
  check_auto(env);
  if (auto_only) return;
  test_allreduce(env, "ring", hv__allreduce_ring);
  test_allreduce(env, "rd", hv__allreduce_rd);
  test_sub_transport(env);
  test_cross_select(env);
  test_allreduce(env, "rab", hv__allreduce_rab);
  test_allreduce(env, "2d", hv__allreduce_2d);
  /* The host's settings change between cases, never while one runs: every rank
   * changes them at the same point. */
  env->host.grid_cols = env->all.transport.size;
  test_allreduce(env, "2d one row", hv__allreduce_2d);
  env->host.grid_cols = 0;
  env->host.cross_algo = HV__ALGO_RAB;
  test_allreduce(env, "2d rab columns", hv__allreduce_2d);
  if (nodes > 1) test_allreduce(env, "hier rab across", hier_without_shm);
  env->host.cross_algo = HV__ALGO_AUTO;
  test_allreduce(env, "ring_nb", ring_nb);
  /* The shared-memory cases must run in the slots: hv__allreduce_shm and the
   * hierarchical allreduce fall back to MPI without them, which every value check
   * would pass. The region's run count and the selection (what the engine reports)
   * must both say shared memory. */
  const unsigned long shm_runs = env->shm.runs;
  if (env->has_shm && nodes == 1) {
    test_allreduce(env, "shm", hv__allreduce_shm);
    EXPECT(env->shm.runs > shm_runs, "rank %d: the shm case never ran in shared memory", env->all.transport.rank);
    EXPECT(hv__allreduce_select(&env->all, HV__ALGO_SHM, 1 << 20)->id == HV__ALGO_SHM &&
               hv__allreduce_select(&env->all, HV__ALGO_HIER, 1 << 20)->id == HV__ALGO_SHM,
           "one node with shared memory: shm and hier select shm");
  }
  if (nodes > 1) {
    test_allreduce(env, "hier", hier_without_shm);
    EXPECT(env->shm.runs == shm_runs, "rank %d: hier without shared memory used it", env->all.transport.rank);
    if (env->has_shm) {
      test_allreduce(env, "hier_shm", hv__allreduce_hier);
      EXPECT(env->shm.runs > shm_runs, "rank %d: the hier_shm case never ran in shared memory", env->all.transport.rank);
      EXPECT(hv__allreduce_select(&env->all, HV__ALGO_HIER, 1 << 20)->id == HV__ALGO_HIER_SHM &&
                 hv__allreduce_select(&env->all, HV__ALGO_SHM, 1 << 20)->id == HV__ALGO_RING,
             "several nodes with shared memory: hier selects hier_shm, shm the ring");
    }
  }
  if (!env->has_shm)
    EXPECT(hv__allreduce_select(&env->all, HV__ALGO_SHM, 1 << 20)->id == HV__ALGO_RING &&
               !strcmp(hv__allreduce_select(&env->all, HV__ALGO_HIER, 1 << 20)->name, "hier"),
           "no shared memory: shm selects the ring, hier itself");
  if (env->mpi) test_allreduce(env, "mpi", hv__allreduce_mpi);
  test_reducescatter(env);
  test_allgatherv(env);
  test_alltoall(env);
  if (env->mpi) test_broadcast(env);
}

/* ---- in-process ranks ---- */
enum { SHM_SLOT = 64 << 10 };

typedef struct local_job {
  int nodes, per_node;
  hv__local_world_t *all, **node_worlds, **cross_worlds;
  void **node_memory;
} local_job_t;

typedef struct local_rank {
  local_job_t *job;
  int rank;
} local_rank_t;

static void *local_rank_main(void *arg) {
  const local_rank_t *me = arg;
  const local_job_t *job = me->job;
  const int node = me->rank / job->per_node, lr = me->rank % job->per_node;
  rank_env_t *env = calloc(1, sizeof *env);
  host_init(env, me->rank);
  hv__transport_t t;
  hv__transport_local_init(&t, &env->host, job->all, me->rank);
  EXPECT(hv__algo_ctx_init(&env->all, &env->host, &t) == HV_SUCCESS, "context");
  hv__transport_local_init(&t, &env->host, job->node_worlds[node], lr);
  EXPECT(hv__algo_ctx_init(&env->local, &env->host, &t) == HV_SUCCESS, "node context");
  hv__transport_local_init(&t, &env->host, job->cross_worlds[lr], node);
  EXPECT(hv__algo_ctx_init(&env->cross, &env->host, &t) == HV_SUCCESS, "cross context");
  if (job->per_node > 1) {
    hv__shm_attach(&env->shm, &env->host, job->node_memory[node], lr, job->per_node, SHM_SLOT);
    env->has_shm = 1;
  }
  link_contexts(env);
  run_cases(env, job->nodes);
  hv__shm_destroy(&env->shm);
  hv__algo_ctx_free(&env->all);
  hv__algo_ctx_free(&env->local);
  hv__algo_ctx_free(&env->cross);
  free(env);
  return NULL;
}

static int run_local(int nodes, int per_node) {
  const int n = nodes * per_node;
  local_job_t job = {nodes, per_node, hv__local_world_create(n), calloc((size_t)nodes, sizeof(void *)),
                     calloc((size_t)per_node, sizeof(void *)), calloc((size_t)nodes, sizeof(void *))};
  for (int i = 0; i < nodes; i++) {
    job.node_worlds[i] = hv__local_world_create(per_node);
    job.node_memory[i] = calloc(1, hv__shm_region_bytes(per_node, SHM_SLOT));
  }
  for (int i = 0; i < per_node; i++) job.cross_worlds[i] = hv__local_world_create(nodes);
  pthread_t *threads = calloc((size_t)n, sizeof *threads);
  local_rank_t *ranks = calloc((size_t)n, sizeof *ranks);
  for (int r = 0; r < n; r++) {
    ranks[r] = (local_rank_t){&job, r};
    pthread_create(&threads[r], NULL, local_rank_main, &ranks[r]);
  }
  for (int r = 0; r < n; r++) pthread_join(threads[r], NULL);
  for (int i = 0; i < nodes; i++) {
    hv__local_world_destroy(job.node_worlds[i]);
    free(job.node_memory[i]);
  }
  for (int i = 0; i < per_node; i++) hv__local_world_destroy(job.cross_worlds[i]);
  hv__local_world_destroy(job.all);
  free(job.node_worlds);
  free(job.cross_worlds);
  free(job.node_memory);
  free(threads);
  free(ranks);
  printf("algo_test, in-process transport, %d nodes x %d ranks: %d checks, %d failures\n", nodes, per_node,
         atomic_load(&checks), atomic_load(&failures));
  return atomic_load(&failures) ? 1 : 0;
}

/* ---- MPI ranks ---- */
static int run_mpi(int *argc, char ***argv, int per_node) {
  int provided, rank, size;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (per_node < 1 || size % per_node) {
    if (rank == 0) fprintf(stderr, "algo_test: %d ranks do not split into nodes of %d\n", size, per_node);
    MPI_Finalize();
    return 2;
  }
  rank_env_t *env = calloc(1, sizeof *env);
  host_init(env, rank);
  env->mpi = 1;
  MPI_Comm all, local, cross;
  MPI_Comm_dup(MPI_COMM_WORLD, &all);
  MPI_Comm_split(all, rank / per_node, rank, &local);
  MPI_Comm_split(all, rank % per_node, rank, &cross);
  EXPECT(hv__algo_ctx_init_mpi(&env->all, &env->host, all) == HV_SUCCESS, "context");
  EXPECT(hv__algo_ctx_init_mpi(&env->local, &env->host, local) == HV_SUCCESS, "node context");
  EXPECT(hv__algo_ctx_init_mpi(&env->cross, &env->host, cross) == HV_SUCCESS, "cross context");
  /* Simulated ranks have no shared memory (their barrier would never yield to the
   * simulator): the platform's intra-node link carries the node phases. */
  env->has_shm = !HV_SIMULATED && per_node > 1 && hv__shm_create(&env->shm, &env->host, local, SHM_SLOT, NULL, 0) == HV_SUCCESS;
  EXPECT(HV_SIMULATED || per_node == 1 || env->has_shm, "rank %d: no shared memory for the node", rank);
  link_contexts(env);
  run_cases(env, size / per_node);
  hv__shm_destroy(&env->shm);
  hv__algo_ctx_free(&env->all);
  hv__algo_ctx_free(&env->local);
  hv__algo_ctx_free(&env->cross);
  free(env);
  MPI_Comm_free(&all);
  MPI_Comm_free(&local);
  MPI_Comm_free(&cross);
  int mine[2] = {atomic_load(&checks), atomic_load(&failures)}, sum[2];
  MPI_Allreduce(mine, sum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("algo_test, MPI transport, %d nodes x %d ranks: %d checks, %d failures\n", size / per_node, per_node,
           sum[0], sum[1]);
  MPI_Finalize();
  return sum[1] ? 1 : 0;
}

int main(int argc, char **argv) {
  const char *transport = "local";
  int nodes = 1, per_node = 2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--transport") && i + 1 < argc) transport = argv[++i];
    else if (!strcmp(argv[i], "--nodes") && i + 1 < argc) nodes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--per-node") && i + 1 < argc) per_node = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--expect-auto") && i + 1 < argc) expect_auto = argv[++i];
    else if (!strcmp(argv[i], "--auto-only")) auto_only = 1;
    else if (!strcmp(argv[i], "--link") && i + 1 < argc && sscanf(argv[i + 1], "%lf,%lf", &link_gbits, &link_lat_us) == 2 &&
             link_gbits > 0 && link_lat_us > 0)
      i++;
    else {
      fprintf(stderr, "usage: algo_test [--transport local|mpi] [--nodes N] [--per-node K] [--quick] "
                      "[--expect-auto SIZE=ALGO,...] [--auto-only] [--link GBITS,LAT_US]\n");
      return 2;
    }
  }
  if (!strcmp(transport, "mpi")) return run_mpi(&argc, &argv, per_node);
  if (strcmp(transport, "local") || nodes < 1 || per_node < 1 || nodes * per_node > 64) {
    fprintf(stderr, "algo_test: --transport local|mpi, 1 to 64 ranks\n");
    return 2;
  }
  return run_local(nodes, per_node);
}
