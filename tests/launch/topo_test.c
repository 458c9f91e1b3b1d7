/* topo_test.c: unit tests of topology/ (no MPI, no launcher).
 *  - the binding policy on machines built by hand: GPUs on NUMA nodes, GPUs far from
 *    any NUMA node, no GPUs, more ranks than GPUs, more ranks than cores;
 *  - invariants for every local size 1..2*cores+1 on several machines: blocks in
 *    range, disjoint unless oversubscribed, covering each pool;
 *  - discovery through hwloc of synthetic machines, of an XML machine with GPUs and
 *    NICs (argv[1]: gpu_2numa.xml), of this machine, and the error
 *    for a bad description; cpulist formatting; the map printers (JSON shape).
 * Prints one line per failed check and exits 1 if any failed.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hv_topo.h"

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer: hwloc's PCI plugin (libpciaccess) leaks during hwloc_topology_load;
 * not ours, and not fixable from here. The plugin has no frame pointers, so the slow
 * unwinder is needed for the stack to reach hwloc_topology_load and match. */
const char *__asan_default_options(void);
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }
const char *__lsan_default_suppressions(void) { return "leak:hwloc_topology_load\n"; }
#endif

static hv_topo_binding_t plan(const hv_topo_t *t, int r, int n) {
  hv_topo_binding_t b;
  int rc = hv_topo_plan(t, r, n, &b);
  CHECK(rc == 0, "plan(%d of %d) failed", r, n);
  return b;
}

/* Blocks in range; disjoint unless oversubscribed; without GPUs (one pool of all
 * cores) every core used when not oversubscribed. */
static void check_invariants(const hv_topo_t *t, const char *what) {
  for (int n = 1; n <= 2 * t->ncores + 1; n++) {
    int *owner = calloc((size_t)t->ncores, sizeof(int));
    int over = 0;
    for (int r = 0; r < n; r++) {
      hv_topo_binding_t b = plan(t, r, n);
      over |= b.oversubscribed;
      CHECK(b.core_count >= 1 && b.core_first >= 0 && b.core_first + b.core_count <= t->ncores,
            "%s n=%d r=%d block %d+%d", what, n, r, b.core_first, b.core_count);
      CHECK(b.numa >= 0 && b.numa < t->nnumas, "%s n=%d r=%d numa %d", what, n, r, b.numa);
      CHECK(t->ngpus == 0 ? b.gpu == -1 : b.gpu == r % t->ngpus, "%s gpu %d", what, b.gpu);
      for (int c = b.core_first; c < b.core_first + b.core_count && c < t->ncores; c++) owner[c]++;
    }
    for (int c = 0; c < t->ncores && !over; c++) {
      CHECK(owner[c] <= 1, "%s n=%d: core %d given to %d ranks", what, n, c, owner[c]);
      if (t->ngpus == 0) CHECK(owner[c] == 1, "%s n=%d: core %d unused", what, n, c);
    }
    if (n > t->ncores) CHECK(over, "%s n=%d > %d cores but not oversubscribed", what, n, t->ncores);
    free(owner);
  }
}

static hv_topo_t *machine(int nnuma, int cores, int pus, int ngpus_per_numa) {
  hv_topo_t *t = hv_topo_new_manual("test");
  for (int i = 0; i < nnuma; i++) hv_topo_add_numa(t, cores, pus, 1ull << 30);
  for (int i = 0; i < nnuma; i++)
    for (int g = 0; g < ngpus_per_numa; g++) {
      char bus[32];
      snprintf(bus, sizeof(bus), "0000:%02x:00.0", 16 * i + g);
      hv_topo_add_gpu(t, bus, i);
    }
  return t;
}

static void test_gpu_policy(void) {
  /* 2 NUMA x 4 cores x 2 threads, 2 GPUs per NUMA node: a DGX-like box in small */
  hv_topo_t *t = machine(2, 4, 2, 2);
  for (int r = 0; r < 4; r++) {
    hv_topo_binding_t b = plan(t, r, 4);
    CHECK(b.gpu == r && b.numa == r / 2 && b.core_count == 2 && b.core_first == 2 * r && !b.oversubscribed,
          "4 ranks: r=%d gpu %d numa %d cores %d+%d", r, b.gpu, b.numa, b.core_first, b.core_count);
  }
  hv_topo_binding_t b = plan(t, 1, 4);
  CHECK(strcmp(b.cpulist, "4-7") == 0, "cpulist %s", b.cpulist);
  /* 8 ranks on 4 GPUs: GPUs shared, 4 ranks per NUMA node, 1 core each */
  b = plan(t, 5, 8);
  CHECK(b.gpu == 1 && b.gpu_shared && b.numa == 0 && b.core_count == 1 && b.ranks_sharing == 4,
        "8 ranks r=5: gpu %d numa %d cores %d sharing %d", b.gpu, b.numa, b.core_count, b.ranks_sharing);
  check_invariants(t, "2numa-4gpu");
  hv_topo_free(t);

  /* both GPUs on NUMA 1: every rank runs there; NUMA 0's cores stay free */
  t = machine(2, 4, 1, 0);
  hv_topo_add_gpu(t, "0000:81:00.0", 1);
  hv_topo_add_gpu(t, "0000:82:00.0", 1);
  for (int r = 0; r < 4; r++) {
    b = plan(t, r, 4);
    CHECK(b.numa == 1 && b.core_first == 4 + r && b.core_count == 1, "gpus on numa1 r=%d: numa %d core %d",
          r, b.numa, b.core_first);
  }
  check_invariants(t, "gpus-on-numa1");
  hv_topo_free(t);

  /* a GPU local to no single NUMA node pools all cores */
  t = machine(2, 2, 1, 0);
  hv_topo_add_gpu(t, "0000:01:00.0", -1);
  b = plan(t, 1, 2);
  CHECK(b.gpu == 0 && b.gpu_shared && b.core_first == 2 && b.core_count == 2, "far gpu: %d+%d", b.core_first,
        b.core_count);
  check_invariants(t, "far-gpu");
  hv_topo_free(t);
}

static void test_cpu_policy(void) {
  hv_topo_t *t = machine(2, 4, 1, 0);
  for (int r = 0; r < 4; r++) {
    hv_topo_binding_t b = plan(t, r, 4);
    CHECK(b.gpu == -1 && b.core_count == 2 && b.core_first == 2 * r && b.numa == r / 2,
          "no gpu r=%d: %d+%d numa %d", r, b.core_first, b.core_count, b.numa);
  }
  hv_topo_binding_t b = plan(t, 0, 3); /* 8 cores / 3 ranks: 3, 3, 2 */
  CHECK(b.core_count == 3, "uneven split %d", b.core_count);
  b = plan(t, 2, 3);
  CHECK(b.core_first == 6 && b.core_count == 2, "uneven split last %d+%d", b.core_first, b.core_count);
  check_invariants(t, "2numa-nogpu");
  hv_topo_free(t);

  /* this CI machine's shape: 2 cores, 4 ranks: oversubscribed, round robin */
  t = machine(1, 2, 1, 0);
  for (int r = 0; r < 4; r++) {
    b = plan(t, r, 4);
    CHECK(b.oversubscribed && b.core_count == 1 && b.core_first == r % 2, "oversub r=%d core %d", r, b.core_first);
  }
  b = plan(t, 1, 2);
  CHECK(!b.oversubscribed && strcmp(b.cpulist, "1") == 0, "2 ranks on 2 cores: %s", b.cpulist);
  check_invariants(t, "2cores");
  hv_topo_binding_t bad;
  CHECK(hv_topo_plan(t, 4, 4, &bad) == -1 && hv_topo_plan(t, 0, 0, &bad) == -1, "bad rank accepted");
  hv_topo_free(t);
}

static void test_cpulist(void) {
  char out[64];
  int a[] = {9, 8, 0, 1, 2, 3, 11, 10, 5};
  hv_topo_cpulist_format(a, 9, out, sizeof(out));
  CHECK(strcmp(out, "0-3,5,8-11") == 0, "%s", out);
  hv_topo_cpulist_format(a, 0, out, sizeof(out));
  CHECK(strcmp(out, "") == 0, "%s", out);
  int many[40];
  for (int i = 0; i < 40; i++) many[i] = 2 * i;
  CHECK(hv_topo_cpulist_format(many, 40, out, 16) == -1 && strstr(out, "..."), "truncation %s", out);
}

static void test_discover(void) {
  char err[256] = "";
  hv_topo_t *t = hv_topo_discover("pack:2 numa:2 core:3 pu:2", err, sizeof(err));
  CHECK(t != NULL, "synthetic: %s", err);
  if (t) {
    CHECK(t->npackages == 2 && t->nnumas == 4 && t->ncores == 12 && t->npus == 24 && !t->is_this_system,
          "synthetic shape %d %d %d %d", t->npackages, t->nnumas, t->ncores, t->npus);
    for (int i = 0; i < t->nnumas; i++)
      CHECK(t->numas[i].core_first == 3 * i && t->numas[i].core_count == 3, "numa %d block", i);
    check_invariants(t, "synthetic");
    char e2[128];
    hv_topo_binding_t b = plan(t, 0, 1);
    CHECK(hv_topo_bind_process(t, &b, e2, sizeof(e2)) == -1, "bound to a synthetic machine");
    FILE *f = tmpfile();
    hv_topo_map_write_json(f, t, 5);
    rewind(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    int depth = 0, ok = 1;
    for (size_t i = 0; i < n; i++) {
      depth += buf[i] == '{' || buf[i] == '[';
      depth -= buf[i] == '}' || buf[i] == ']';
      if (depth < 0) ok = 0;
    }
    CHECK(ok && depth == 0 && strstr(buf, "\"bindings\"") && strstr(buf, "\"local_rank\": 4"), "json: %s", buf);
    hv_topo_free(t);
  }
  t = hv_topo_discover("banana:3", err, sizeof(err));
  CHECK(t == NULL && strstr(err, "synthetic"), "bad description: %s", err);
  t = hv_topo_discover(NULL, err, sizeof(err));
  CHECK(t != NULL && t->ncores >= 1 && t->is_this_system, "this machine: %s", err);
  if (t) {
    hv_topo_map_write_text(stdout, t, 2);
    char aff[256];
    int ncores = 0;
    CHECK(hv_topo_affinity(t, aff, sizeof(aff), &ncores) == 0 && ncores >= 1, "affinity");
    char *buf = hv_topo_alloc_numa(t, 0, 1 << 20);
    CHECK(buf != NULL, "alloc on NUMA 0");
    if (buf) buf[0] = buf[(1 << 20) - 1] = 1;
    hv_topo_free_numa(t, buf, 1 << 20);
    CHECK(hv_topo_alloc_numa(t, t->nnumas, 4096) == NULL, "alloc on a NUMA node that does not exist");
    char e3[128];
    CHECK(hv_topo_bind_thread_numa(t, 0, e3, sizeof(e3)) == 0, "bind thread to NUMA 0: %s", e3);
    hv_topo_free(t);
  }
}

/* GPUs from hwloc I/O objects: CUDA OS devices, then (without them) NVIDIA PCI
 * controllers; the NUMA node of each from its PCI locality; NICs. */
static void test_discover_xml(const char *xml) {
  char err[256] = "", src[1100];
  snprintf(src, sizeof(src), "xml:%s", xml);
  hv_topo_t *t = hv_topo_discover(src, err, sizeof(err));
  CHECK(t != NULL, "%s: %s", src, err);
  if (!t) return;
  CHECK(t->ngpus == 2 && t->nnumas == 2 && t->ncores == 4, "xml shape: %d gpus", t->ngpus);
  if (t->ngpus == 2) {
    CHECK(strcmp(t->gpus[0].name, "cuda0") == 0 && t->gpus[0].numa == 0, "gpu0 %s numa %d", t->gpus[0].name,
          t->gpus[0].numa);
    CHECK(strcmp(t->gpus[1].busid, "0000:65:00.0") == 0 && t->gpus[1].numa == 1, "gpu1 %s numa %d",
          t->gpus[1].busid, t->gpus[1].numa);
  }
  CHECK(t->nnics == 2 && t->nics[0].numa == 1, "nics %d", t->nnics);
  hv_topo_binding_t b = plan(t, 1, 2);
  CHECK(b.gpu == 1 && b.numa == 1 && strcmp(b.cpulist, "2-3") == 0, "xml rank 1: gpu %d numa %d %s", b.gpu,
        b.numa, b.cpulist);
  check_invariants(t, "xml");
  hv_topo_free(t);

  /* the same machine without hwloc's CUDA plugin: NVIDIA PCI devices, named by bus id */
  FILE *in = fopen(xml, "r");
  char tmp[] = "/tmp/hv_topo_test_XXXXXX";
  int fd = mkstemp(tmp);
  FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
  CHECK(in && out, "temp xml");
  if (!in || !out) return;
  char line[1024];
  while (fgets(line, sizeof(line), in))
    if (!strstr(line, "subtype=\"CUDA\"")) fputs(line, out);
  fclose(in);
  fclose(out);
  snprintf(src, sizeof(src), "xml:%s", tmp);
  t = hv_topo_discover(src, err, sizeof(err));
  remove(tmp);
  CHECK(t && t->ngpus == 2 && strcmp(t->gpus[0].name, "0000:17:00.0") == 0 && t->gpus[1].numa == 1,
        "pci fallback: %s", err);
  hv_topo_free(t);
}

int main(int argc, char **argv) {
  if (argc > 1) test_discover_xml(argv[1]);
  test_cpulist();
  test_gpu_policy();
  test_cpu_policy();
  test_discover();
  printf("topo_test: %s (%d failures)\n", check_failures ? "FAILED" : "passed", check_failures);
  return check_failures ? 1 : 0;
}
