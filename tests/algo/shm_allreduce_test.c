/* shm_allreduce_test.c: the flag-synchronised shared-memory allreduce
 * (collectives/algo/allreduce_shm.c) alone, across each of its thresholds, on either
 * transport:
 *   --transport local --ranks N   N ranks as threads sharing one calloc'd region
 *   --transport mpi               the ranks of mpirun on one node (POSIX shared memory)
 * With a 256 KiB slot (steps of at most 128 KiB) the counts cross: every rank reducing
 * the whole step (peers' bytes <= 4 KiB), both phases, segments of 32 KiB and more
 * (copied and reduced 4 pages at a time), one step exactly, two steps, four. Each count
 * runs in place, out of place, and as a fused batch of pieces with their own send and
 * receive buffers (some in place); float32 sums of small integers must be exact,
 * int32 sums and float32 maxima too, and float64 and float32 sums of random values
 * must lie within the rounding bound of a float64 (long double) reference and be
 * bitwise the same on every rank. Then 300 calls back to back whose sizes alternate
 * between the paths, each checked, for the halves' reuse without a closing wait, with
 * the node's AND (shm_and.c, the engine's negotiation) between them, sometimes twice
 * in a row.
 * --cma picks the single-copy path (allreduce_shm_cma.c, process_vm_readv/writev):
 *   auto     where auto takes it (from 2 MiB), the counts crossing that end;
 *   on       at every count (a rank with an empty segment, pieces, in place);
 *   off      never (HV_SHM_CMA=0): the copying path at every count, and the single-copy
 *            path must not have run;
 *   refused  (MPI) every rank drops CAP_SYS_PTRACE and makes itself non-dumpable
 *            before the node's set-up, so the kernel refuses the peers' reads (as yama's
 *            ptrace_scope or a container would): set-up must notice, say why on local
 *            rank 0, and every count must still be exact through the copying path.
 * With auto and on, the single-copy path must have run where the node allows it.
 * Nothing past a count may be written. Exit status 1 on any failure. */
#include <linux/capability.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "algo.h"
#include "test_util.h"

enum { SLOT = 256 << 10, MAX_RANKS = 16, GUARD = 8 };

static atomic_int checks, failures;
/* --cma: the host's shm_cma (-1 auto, 0 off, 1 on), and whether the kernel is made to
 * refuse (MPI only). */
static int cma_mode = -1, cma_refused;
#define EXPECT(cond, ...) CHECK_ATOMIC(checks, failures, cond, __VA_ARGS__)

/* One rank: its context (transport and shared memory) and how it compares results
 * with the other ranks. */
typedef struct rank_env {
  hv__algo_host_t host;
  hv__algo_ctx_t ctx;
  hv__shm_t shm;
  int rank, size;
  /* local: every rank's hash lands in hashes[rank], then a barrier */
  uint64_t *hashes;
  pthread_barrier_t *barrier;
} rank_env_t;

static void record_error(void *owner, const char *detail) {
  const rank_env_t *env = owner;
  fprintf(stderr, "[rank %d] %s\n", env->rank, detail);
}

static void host_init(rank_env_t *env) {
  hv__algo_host_defaults(&env->host);
  env->host.rank = env->host.errors.rank = env->rank;
  env->host.errors.record = record_error;
  env->host.errors.owner = env;
  env->host.timeout_s = 120;
  env->host.shm_cma = cma_mode;
}

static uint64_t hash_bytes(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* Whether every rank's hash equals mine. */
static int same_everywhere(rank_env_t *env, uint64_t h) {
  uint64_t all[MAX_RANKS];
  if (env->hashes) {
    env->hashes[env->rank] = h;
    pthread_barrier_wait(env->barrier);
    memcpy(all, env->hashes, sizeof(uint64_t) * (size_t)env->size);
    pthread_barrier_wait(env->barrier);
  } else {
    MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
  }
  for (int r = 0; r < env->size; r++)
    if (all[r] != h) return 0;
  return 1;
}

/* Inputs: kind 0 small integers (exact sums), 1 random in [-1, 1) (seeded by rank,
 * element and round), 2 integers for max. */
static double value(int kind, int r, size_t i, int round) {
  if (kind == 0) return (double)((i * 7 + (size_t)r * 3 + (size_t)round) % 5 + 1);
  if (kind == 2) return (double)((i * 3 + (size_t)r * 5 + (size_t)round) % 11);
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull ^ (uint64_t)(r + 1) * 0xBF58476D1CE4E5B9ull ^ (uint64_t)round << 40;
  x ^= x >> 31, x *= 0x94D049BB133111EBull, x ^= x >> 29;
  return (double)(x >> 11) / (double)(1ull << 52) - 1.0;
}

typedef struct case_spec {
  hv_dtype_t dtype;
  hv_op_t op;
  int kind;
  size_t count;
  int placement; /* 0 out of place, 1 in place, 2 pieces */
  int round;
} case_spec_t;

/* The split of a batch into 5 pieces (starts[5] = count): uneven, some empty when
 * the count is small; the caller puts the first and third in place. */
static size_t piece_bounds(size_t count, size_t *starts) {
  static const double cuts[] = {0.0, 0.13, 0.14, 0.5, 0.77};
  for (int k = 0; k < 5; k++) starts[k] = (size_t)(cuts[k] * (double)count);
  starts[5] = count;
  return 5;
}

static void run_case(rank_env_t *env, const case_spec_t *c) {
  const size_t es = hv_dtype_size(c->dtype), n = c->count;
  unsigned char *send = malloc((n + GUARD) * es), *recv = malloc((n + GUARD) * es);
  for (size_t i = 0; i < n; i++) elem_set(send, c->dtype, i, value(c->kind, env->rank, i, c->round));
  memset(send + n * es, 0xA5, GUARD * es);
  memset(recv, 0x5A, (n + GUARD) * es);
  hv_result_t rc;
  const char *where = c->placement == 0 ? "out of place" : c->placement == 1 ? "in place" : "pieces";
  if (c->placement == 1) {
    memcpy(recv, send, (n + GUARD) * es);
    rc = hv__allreduce_shm(&env->ctx, recv, n, c->dtype, c->op);
  } else if (c->placement == 0) {
    hv__piece_t whole = {(const char *)send, (char *)recv, 0, n};
    rc = hv__allreduce_shm_pieces(&env->ctx, &whole, 1, c->dtype, c->op);
  } else {
    size_t starts[6];
    const size_t np = piece_bounds(n, starts);
    hv__piece_t p[5];
    for (size_t k = 0; k < np; k++) {
      const int in_place = k == 0 || k == 2;
      if (in_place) memcpy(recv + starts[k] * es, send + starts[k] * es, (starts[k + 1] - starts[k]) * es);
      p[k] = (hv__piece_t){(const char *)(in_place ? recv : send) + starts[k] * es, (char *)recv + starts[k] * es,
                           starts[k], starts[k + 1] - starts[k]};
    }
    rc = hv__allreduce_shm_pieces(&env->ctx, p, np, c->dtype, c->op);
  }
  char what[160];
  snprintf(what, sizeof what, "%d ranks, %s %s count %zu (%zu bytes), %s, kind %d, round %d", env->size,
           hv_dtype_name(c->dtype), hv_op_name(c->op), n, n * es, where, c->kind, c->round);
  EXPECT(rc == HV_SUCCESS, "rank %d: %s: %s", env->rank, what, hv_strerror(rc));
  size_t bad = 0, first = 0;
  double got0 = 0, want0 = 0;
  for (size_t i = 0; i < n; i++) {
    long double exact = 0, magnitude = 0;
    for (int r = 0; r < env->size; r++) {
      const double x = value(c->kind, r, i, c->round);
      double xr = x;
      if (c->dtype == HV_FLOAT32) xr = (float)x; /* the input as stored */
      if (c->op == HV_MAX) exact = r == 0 || xr > exact ? xr : exact;
      else exact += xr;
      magnitude += fabsl((long double)xr);
    }
    const double got = elem_get(recv, c->dtype, i);
    /* float32: each of size-1 additions rounds once (2^-24 relative), float64 2^-53. */
    const long double u = c->dtype == HV_FLOAT32 ? 0x1p-24L : c->dtype == HV_FLOAT64 ? 0x1p-53L : 0.0L;
    const long double bound = c->kind == 1 ? (long double)env->size * u * magnitude : 0.0L;
    if (fabsl((long double)got - exact) > bound) {
      if (!bad++) first = i, got0 = got, want0 = (double)exact;
    }
  }
  EXPECT(bad == 0, "rank %d: %s: %zu wrong, first [%zu] got %.17g expected %.17g", env->rank, what, bad, first, got0,
         want0);
  for (size_t b = 0; b < GUARD * es; b++)
    if (recv[n * es + b] != (c->placement == 1 ? 0xA5 : 0x5A)) {
      EXPECT(0, "rank %d: %s wrote past the count", env->rank, what);
      break;
    }
  EXPECT(same_everywhere(env, hash_bytes(recv, n * es)), "rank %d: %s: results differ between ranks", env->rank, what);
  free(send);
  free(recv);
}

/* The node's AND (shm_and.c, the engine's negotiation vector) between allreduces:
 * word i of rank r has every bit set but bit (i + r + round) % 64 and, in word 0,
 * bit 63 - r. */
static void check_and(rank_env_t *env, int round) {
  enum { WORDS = 33 };
  uint64_t in[WORDS], out[WORDS];
  EXPECT(hv__shm_and_usable(&env->shm, WORDS), "rank %d: the AND does not fit the slot's tail", env->rank);
  for (size_t i = 0; i < WORDS; i++) in[i] = ~(1ull << ((i + (size_t)env->rank + (size_t)round) % 64));
  in[0] &= ~(1ull << (63 - env->rank));
  hv_result_t rc = hv__shm_and(&env->shm, in, out, WORDS, NULL);
  EXPECT(rc == HV_SUCCESS, "rank %d: AND round %d: %s", env->rank, round, hv_strerror(rc));
  for (size_t i = 0; i < WORDS; i++) {
    uint64_t want = ~0ull;
    for (int r = 0; r < env->size; r++) {
      want &= ~(1ull << ((i + (size_t)r + (size_t)round) % 64));
      if (i == 0) want &= ~(1ull << (63 - r));
    }
    EXPECT(out[i] == want, "rank %d: AND round %d word %zu: %016llx, expected %016llx", env->rank, round, i,
           (unsigned long long)out[i], (unsigned long long)want);
  }
}

static void run_cases(rank_env_t *env) {
  /* float32 elements: 1,024 is 4 KiB (whole-step at 2 ranks), 8,192 32 KiB (2 ranks'
   * segments of 16 KiB: one pass), 16,411 (segments past 32 KiB: 4 pages at a time),
   * 32,768 exactly one step, 32,769 two, 100,003 four. */
  static const size_t counts[] = {1, 3, 255, 1023, 1024, 1025, 4097, 8191, 8192, 16411, 32768, 32769, 100003};
  const unsigned long runs = env->shm.runs, cma_runs = env->shm.cma_runs;
  for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
    for (int placement = 0; placement < 3; placement++) {
      run_case(env, &(case_spec_t){HV_FLOAT32, HV_SUM, 0, counts[ci], placement, 0});
      run_case(env, &(case_spec_t){HV_FLOAT32, HV_SUM, 1, counts[ci], placement, 1});
    }
  static const size_t other[] = {7, 511, 2049, 12289, 40001};
  for (size_t ci = 0; ci < sizeof other / sizeof other[0]; ci++)
    for (int placement = 0; placement < 3; placement++) {
      run_case(env, &(case_spec_t){HV_FLOAT64, HV_SUM, 1, other[ci], placement, 2});
      run_case(env, &(case_spec_t){HV_INT32, HV_SUM, 0, other[ci], placement, 3});
      run_case(env, &(case_spec_t){HV_FLOAT32, HV_MAX, 2, other[ci], placement, 4});
      run_case(env, &(case_spec_t){HV_UINT8, HV_SUM, 0, other[ci] * 3 + 1, placement, 5});
    }
  /* Back to back, sizes switching paths every call: a half-slot is written again two
   * steps later with no closing wait, so a missing or misplaced wait shows here. */
  static const size_t cycle[] = {700, 9000, 40000, 1025, 33000, 257};
  for (int round = 0; round < 300; round++) {
    run_case(env, &(case_spec_t){HV_FLOAT32, HV_SUM, 0, cycle[round % 6], round % 3, round});
    if (round % 3 != 1) check_and(env, round);
    if (round % 3 == 2) check_and(env, round + 1000); /* two in a row, as idle negotiation rounds */
  }
  /* Around the single-copy path's threshold (auto: from 2 MiB of float32, 524,288
   * elements), and 64 KiB and 1 MiB, exact sums, every placement. */
  static const size_t ends[] = {16384, 262144, 524287, 524288, 524289};
  for (size_t ci = 0; ci < sizeof ends / sizeof ends[0]; ci++)
    for (int placement = 0; placement < 3; placement++)
      run_case(env, &(case_spec_t){HV_FLOAT32, HV_SUM, 0, ends[ci], placement, 6});
  EXPECT(env->shm.runs > runs, "rank %d: the allreduce never ran in shared memory", env->rank);
  if (cma_mode == 0 || cma_refused)
    EXPECT(env->shm.cma_runs == cma_runs && !env->shm.cma, "rank %d: the single-copy path was on (ran %lu times)",
           env->rank, env->shm.cma_runs - cma_runs);
  else if (env->shm.cma)
    EXPECT(env->shm.cma_runs > cma_runs, "rank %d: the single-copy path never ran", env->rank);
  else if (env->rank == 0)
    printf("shm_allreduce_test: this node refuses process_vm_readv (%s): only the copying path ran\n",
           env->shm.cma_off);
}

/* --cma refused: without CAP_SYS_PTRACE and dumpable, a process's memory is closed to
 * its siblings' process_vm_readv, whatever yama says. */
static int refuse_peer_access(void) {
  struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  if (syscall(SYS_capget, &head, data) != 0) return -1;
  data[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
  if (syscall(SYS_capset, &head, data) != 0) return -1;
  return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* ---- in-process ranks ---- */
typedef struct local_job {
  int size;
  hv__local_world_t *world;
  void *memory;
  uint64_t hashes[MAX_RANKS];
  pthread_barrier_t barrier;
} local_job_t;

typedef struct local_rank {
  local_job_t *job;
  int rank;
} local_rank_t;

static void *local_rank_main(void *arg) {
  const local_rank_t *me = arg;
  rank_env_t *env = calloc(1, sizeof *env);
  env->rank = me->rank;
  env->size = me->job->size;
  env->hashes = me->job->hashes;
  env->barrier = &me->job->barrier;
  host_init(env);
  hv__transport_t t;
  hv__transport_local_init(&t, &env->host, me->job->world, me->rank);
  EXPECT(hv__algo_ctx_init(&env->ctx, &env->host, &t) == HV_SUCCESS, "context");
  hv__shm_attach(&env->shm, &env->host, me->job->memory, me->rank, env->size, SLOT);
  env->ctx.shm = &env->shm;
  run_cases(env);
  hv__shm_destroy(&env->shm);
  hv__algo_ctx_free(&env->ctx);
  free(env);
  return NULL;
}

static int run_local(int n) {
  local_job_t job;
  memset(&job, 0, sizeof job);
  job.size = n;
  job.world = hv__local_world_create(n);
  job.memory = calloc(1, hv__shm_region_bytes(n, SLOT));
  pthread_barrier_init(&job.barrier, NULL, (unsigned)n);
  pthread_t threads[MAX_RANKS];
  local_rank_t ranks[MAX_RANKS];
  for (int r = 0; r < n; r++) {
    ranks[r] = (local_rank_t){&job, r};
    pthread_create(&threads[r], NULL, local_rank_main, &ranks[r]);
  }
  for (int r = 0; r < n; r++) pthread_join(threads[r], NULL);
  pthread_barrier_destroy(&job.barrier);
  hv__local_world_destroy(job.world);
  free(job.memory);
  printf("shm_allreduce_test, in-process transport, %d ranks: %d checks, %d failures\n", n, atomic_load(&checks),
         atomic_load(&failures));
  return atomic_load(&failures) ? 1 : 0;
}

/* ---- MPI ranks (one node) ---- */
static int run_mpi(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  rank_env_t *env = calloc(1, sizeof *env);
  MPI_Comm_rank(MPI_COMM_WORLD, &env->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &env->size);
  if (env->size > MAX_RANKS) {
    if (env->rank == 0) fprintf(stderr, "shm_allreduce_test: at most %d ranks\n", MAX_RANKS);
    MPI_Finalize();
    return 2;
  }
  host_init(env);
  MPI_Comm all;
  MPI_Comm_dup(MPI_COMM_WORLD, &all);
  EXPECT(hv__algo_ctx_init_mpi(&env->ctx, &env->host, all) == HV_SUCCESS, "context");
  if (cma_refused) EXPECT(refuse_peer_access() == 0, "rank %d: could not drop CAP_SYS_PTRACE", env->rank);
  const int has_shm = hv__shm_create(&env->shm, &env->host, all, SLOT, NULL, 0) == HV_SUCCESS;
  EXPECT(has_shm, "rank %d: no shared memory for the node", env->rank);
  if (has_shm && cma_refused && env->size > 1) {
    EXPECT(!env->shm.cma, "rank %d: the node's set-up took process_vm_readv as allowed", env->rank);
    if (env->rank == 0) {
      EXPECT(strstr(env->shm.cma_off, "process_vm_readv") != NULL, "rank 0: no reason given: '%s'",
             env->shm.cma_off);
      printf("shm_allreduce_test: refused as asked: %s\n", env->shm.cma_off);
    }
  }
  if (has_shm) {
    env->ctx.shm = &env->shm;
    run_cases(env);
  }
  hv__shm_destroy(&env->shm);
  hv__algo_ctx_free(&env->ctx);
  MPI_Comm_free(&all);
  int mine[2] = {atomic_load(&checks), atomic_load(&failures)}, sum[2];
  MPI_Allreduce(mine, sum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (env->rank == 0)
    printf("shm_allreduce_test, MPI transport, %d ranks: %d checks, %d failures\n", env->size, sum[0], sum[1]);
  free(env);
  MPI_Finalize();
  return sum[1] ? 1 : 0;
}

int main(int argc, char **argv) {
  const char *transport = "local";
  int ranks = 2, bad = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--transport") && i + 1 < argc) transport = argv[++i];
    else if (!strcmp(argv[i], "--ranks") && i + 1 < argc) ranks = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--cma") && i + 1 < argc) {
      const char *m = argv[++i];
      cma_mode = !strcmp(m, "on") ? 1 : !strcmp(m, "off") ? 0 : -1;
      cma_refused = !strcmp(m, "refused");
      bad = strcmp(m, "on") && strcmp(m, "off") && strcmp(m, "auto") && !cma_refused;
    } else bad = 1;
    if (bad) {
      fprintf(stderr, "usage: shm_allreduce_test [--transport local|mpi] [--ranks N (local)] "
                      "[--cma auto|on|off|refused]\n");
      return 2;
    }
  }
  if (cma_refused && strcmp(transport, "mpi")) {
    fprintf(stderr, "shm_allreduce_test: --cma refused needs --transport mpi (threads share one process)\n");
    return 2;
  }
  if (!strcmp(transport, "mpi")) return run_mpi(&argc, &argv);
  if (strcmp(transport, "local") || ranks < 1 || ranks > MAX_RANKS) {
    fprintf(stderr, "shm_allreduce_test: --transport local|mpi, 1 to %d ranks\n", MAX_RANKS);
    return 2;
  }
  return run_local(ranks);
}
