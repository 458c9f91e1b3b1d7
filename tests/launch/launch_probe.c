/* launch_probe.c: the test program that hvrun launches in tests/launch/. Each rank
 * prints one line with what it sees (MPI rank/size, its node group from
 * MPI_COMM_TYPE_SHARED, hvrun's HV_* variables, thread counts, CUDA variables, its
 * real CPU affinity) and checks it against hvrun's promises:
 *   - HV_RANK/HV_SIZE equal MPI's rank/size; HV_LOCAL_SIZE equals the node group;
 *     HV_LOCAL_RANK values are 0..n-1 on each node;
 *   - the affinity equals HV_CPUS when hvrun bound the task;
 *   - ranks of one node have disjoint affinities unless HV_OVERSUBSCRIBED=1;
 *   - an integer MPI_Allreduce over all ranks gives n(n+1)/2.
 * The line ends "OK" or "BAD <reasons>", and the exit code is 1 on any BAD.
 * Options: --expect-size N, --expect-nodes N (fail when different).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROBE_MAXCPU 1024

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer: hwloc's PCI plugin (libpciaccess) leaks during hwloc_topology_load,
 * and Open MPI during init / finalize (--check); not ours, and not fixable here. The plugin has no frame pointers, so the slow
 * unwinder is needed for the stack to reach hwloc_topology_load and match. */
const char *__asan_default_options(void);
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }
const char *__lsan_default_suppressions(void) {
  return "leak:hwloc_topology_load\nleak:MPI_Init_thread\nleak:MPI_Init\nleak:ompi_mpi_finalize\n"
         "leak:libopen-pal.so\nleak:libopen-rte.so\nleak:event_base_loop\nleak:libpmix.so\n";
}
#endif

static int probe_env_int(const char *name) {
  const char *s = getenv(name);
  return s && *s ? atoi(s) : -1;
}

static const char *probe_env(const char *name) {
  const char *s = getenv(name);
  return s ? s : "-";
}

/* Affinity as a byte mask (for the disjointness check) and as a list "0-1". */
static void probe_affinity(unsigned char *mask, char *list, size_t len) {
  cpu_set_t set;
  CPU_ZERO(&set);
  memset(mask, 0, PROBE_MAXCPU);
  list[0] = '\0';
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return;
  size_t used = 0;
  for (int c = 0; c < PROBE_MAXCPU && c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    mask[c] = 1;
    int e = c;
    while (e + 1 < CPU_SETSIZE && e + 1 < PROBE_MAXCPU && CPU_ISSET(e + 1, &set)) mask[++e] = 1;
    int n = e == c ? snprintf(list + used, len - used, "%s%d", used ? "," : "", c)
                   : snprintf(list + used, len - used, "%s%d-%d", used ? "," : "", c, e);
    if (n < 0 || (size_t)n >= len - used) break;
    used += (size_t)n;
    c = e;
  }
}

int main(int argc, char **argv) {
  int expect_size = -1, expect_nodes = -1;
  for (int i = 1; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "--expect-size")) expect_size = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--expect-nodes")) expect_nodes = atoi(argv[++i]);
  }
  MPI_Init(&argc, &argv);
  int rank, size, lrank, lsize;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &lrank);
  MPI_Comm_size(node, &lsize);
  int is_leader = lrank == 0, nodes = 0;
  MPI_Allreduce(&is_leader, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  char host[64] = "?", why[512] = "";
  gethostname(host, sizeof(host) - 1);
  static unsigned char mask[PROBE_MAXCPU];
  char cpus[256];
  probe_affinity(mask, cpus, sizeof(cpus));
#define PROBE_BAD(...) snprintf(why + strlen(why), sizeof(why) - strlen(why), " " __VA_ARGS__)

  if (probe_env_int("HV_RANK") != rank) PROBE_BAD("HV_RANK=%s!=%d", probe_env("HV_RANK"), rank);
  if (probe_env_int("HV_SIZE") != size) PROBE_BAD("HV_SIZE=%s!=%d", probe_env("HV_SIZE"), size);
  if (probe_env_int("HV_LOCAL_SIZE") != lsize) PROBE_BAD("HV_LOCAL_SIZE=%s!=%d", probe_env("HV_LOCAL_SIZE"), lsize);
  if (expect_size >= 0 && size != expect_size) PROBE_BAD("size=%d!=%d", size, expect_size);
  if (expect_nodes >= 0 && nodes != expect_nodes) PROBE_BAD("nodes=%d!=%d", nodes, expect_nodes);
  const char *applied = probe_env("HV_BIND_APPLIED");
  if ((!strcmp(applied, "auto") || !strcmp(applied, "cores")) && strcmp(cpus, probe_env("HV_CPUS")) != 0)
    PROBE_BAD("affinity %s != HV_CPUS %s", cpus, probe_env("HV_CPUS"));
  if (probe_env_int("OMP_NUM_THREADS") < 1) PROBE_BAD("OMP_NUM_THREADS=%s", probe_env("OMP_NUM_THREADS"));

  /* the local ranks 0..n-1 of each node, and disjoint cores unless oversubscribed */
  int hv_lrank = probe_env_int("HV_LOCAL_RANK");
  int *lranks = malloc((size_t)lsize * sizeof(int));
  unsigned char *masks = malloc((size_t)lsize * PROBE_MAXCPU);
  MPI_Allgather(&hv_lrank, 1, MPI_INT, lranks, 1, MPI_INT, node);
  MPI_Allgather(mask, PROBE_MAXCPU, MPI_UNSIGNED_CHAR, masks, PROBE_MAXCPU, MPI_UNSIGNED_CHAR, node);
  int seen_ok = 1, disjoint = 1;
  for (int i = 0; i < lsize; i++) {
    int found = 0;
    for (int j = 0; j < lsize; j++) found += lranks[j] == i;
    if (found != 1) seen_ok = 0;
    for (int j = 0; j < lsize; j++)
      for (int c = 0; j != i && c < PROBE_MAXCPU; c++)
        if (masks[i * PROBE_MAXCPU + c] && masks[j * PROBE_MAXCPU + c]) disjoint = 0;
  }
  if (!seen_ok) PROBE_BAD("HV_LOCAL_RANK values on this node are not 0..%d", lsize - 1);
  int over = probe_env_int("HV_OVERSUBSCRIBED") == 1;
  if (!disjoint && !over && strcmp(applied, "none") != 0) PROBE_BAD("local ranks share cores though not oversubscribed");
  free(lranks);
  free(masks);

  long one = rank + 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (sum != (long)size * (size + 1) / 2) PROBE_BAD("allreduce %ld != %ld", sum, (long)size * (size + 1) / 2);

  printf("probe rank=%d size=%d local=%d/%d node_group=%d nodes=%d host=%s hv_local_rank=%s hv_node=%s "
         "launcher=%s cpus=%s hv_cpus=%s bind=%s disjoint=%s oversubscribed=%s omp=%s openblas=%s cuda=%s "
         "allreduce=%ld %s%s\n",
         rank, size, hv_lrank, lsize, lsize, nodes, host, probe_env("HV_LOCAL_RANK"), probe_env("HV_NODE_INDEX"),
         probe_env("HV_LAUNCHER"), cpus, probe_env("HV_CPUS"), applied, disjoint ? "yes" : "no",
         probe_env("HV_OVERSUBSCRIBED"), probe_env("OMP_NUM_THREADS"), probe_env("OPENBLAS_NUM_THREADS"),
         probe_env("CUDA_VISIBLE_DEVICES"), sum, why[0] ? "BAD" : "OK", why);
  fflush(stdout);
  MPI_Comm_free(&node);
  MPI_Finalize();
  return why[0] ? 1 : 0;
}
