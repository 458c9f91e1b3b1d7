/* topo_plan.c: the binding policy (which GPU, NUMA node and cores a local rank gets)
 * and applying it to the process.
 *
 * The policy works on "pools" of cores. With GPUs, a rank's pool is the NUMA node of
 * its GPU (GPU = local rank mod ngpus), so host staging, the engine thread and the
 * GPU's DMA stay on one memory controller; a GPU local to no single NUMA node (or a
 * NUMA node without cores) pools all cores. Without GPUs the pool is every core. A
 * pool is split into contiguous, even blocks among the ranks that share it (the
 * first ones get one more core when it does not divide), so ranks never share a core
 * unless there are more ranks than cores: then each rank gets one core round robin
 * and the binding says oversubscribed, for hvrun to report.
 */
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#include "hv_topo.h"

int hv_topo_cpulist_format(const int *ids, int n, char *out, size_t outlen) {
  if (!out || outlen < 4) return -1;
  int *s = malloc((size_t)(n > 0 ? n : 1) * sizeof(*s));
  if (!s) return -1;
  memcpy(s, ids, (size_t)(n > 0 ? n : 0) * sizeof(*s));
  for (int i = 1; i < n; i++) /* insertion sort: lists are short */
    for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
      int x = s[j];
      s[j] = s[j - 1];
      s[j - 1] = x;
    }
  size_t used = 0;
  out[0] = '\0';
  int rc = 0;
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && s[j + 1] <= s[j] + 1) j++;
    char piece[32];
    if (s[j] == s[i]) snprintf(piece, sizeof(piece), "%s%d", used ? "," : "", s[i]);
    else snprintf(piece, sizeof(piece), "%s%d-%d", used ? "," : "", s[i], s[j]);
    size_t len = strlen(piece);
    if (used + len + 4 > outlen) {
      snprintf(out + used, outlen - used, "...");
      rc = -1;
      break;
    }
    memcpy(out + used, piece, len + 1);
    used += len;
    i = j + 1;
  }
  free(s);
  return rc;
}

/* The NUMA node whose cores a local rank draws from: -1 means all cores. */
static int plan_pool_numa(const hv_topo_t *t, int local_rank) {
  if (t->ngpus <= 0) return -1;
  int numa = t->gpus[local_rank % t->ngpus].numa;
  if (numa < 0 || numa >= t->nnumas || t->numas[numa].core_count <= 0) return -1;
  return numa;
}

int hv_topo_plan(const hv_topo_t *t, int local_rank, int local_size, hv_topo_binding_t *b) {
  if (!t || !b || local_size < 1 || local_rank < 0 || local_rank >= local_size || t->ncores < 1)
    return -1;
  memset(b, 0, sizeof(*b));
  b->local_rank = local_rank;
  b->local_size = local_size;
  b->gpu = t->ngpus > 0 ? local_rank % t->ngpus : -1;
  b->gpu_shared = t->ngpus > 0 && local_size > t->ngpus;

  int pool = plan_pool_numa(t, local_rank);
  int pool_first = pool < 0 ? 0 : t->numas[pool].core_first;
  int pool_count = pool < 0 ? t->ncores : t->numas[pool].core_count;
  int idx = 0, sharing = 0;
  for (int r = 0; r < local_size; r++) {
    if (plan_pool_numa(t, r) != pool) continue;
    if (r < local_rank) idx++;
    sharing++;
  }
  b->ranks_sharing = sharing;
  if (sharing > pool_count) {
    b->oversubscribed = 1;
    b->core_first = pool_first + idx % pool_count;
    b->core_count = 1;
  } else {
    int base = pool_count / sharing, extra = pool_count % sharing;
    b->core_first = pool_first + idx * base + (idx < extra ? idx : extra);
    b->core_count = base + (idx < extra ? 1 : 0);
  }
  b->numa = pool >= 0 ? pool : t->cores[b->core_first].numa;

  int *ids = malloc((size_t)t->npus * sizeof(*ids) + sizeof(int));
  if (!ids) return -1;
  int n = 0;
  for (int c = b->core_first; c < b->core_first + b->core_count; c++)
    for (int p = 0; p < t->cores[c].pu_count; p++) ids[n++] = t->pus[t->cores[c].pu_first + p];
  hv_topo_cpulist_format(ids, n, b->cpulist, sizeof(b->cpulist));
  free(ids);
  return 0;
}

int hv_topo_bind_process(const hv_topo_t *t, const hv_topo_binding_t *b, char *err, size_t errlen) {
  if (!t || !t->hwloc || !t->is_this_system) {
    snprintf(err, errlen, "the topology (%s) is not this machine's", t ? t->source : "none");
    return -1;
  }
  hwloc_topology_t h = (hwloc_topology_t)t->hwloc;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (int c = b->core_first; c < b->core_first + b->core_count && c < t->ncores; c++)
    for (int p = 0; p < t->cores[c].pu_count; p++)
      hwloc_bitmap_set(set, (unsigned)t->pus[t->cores[c].pu_first + p]);
  /* PROCESS: every thread, and the program we exec next, inherits the mask */
  int rc = hwloc_set_cpubind(h, set, HWLOC_CPUBIND_PROCESS);
  if (rc != 0) snprintf(err, errlen, "the kernel refused CPU binding to PUs %s", b->cpulist);
  hwloc_bitmap_free(set);
  return rc == 0 ? 0 : -1;
}

int hv_topo_affinity(const hv_topo_t *t, char *out, size_t outlen, int *ncores) {
  if (!t || !t->hwloc || !t->is_this_system || !out || !outlen) return -1;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return -1;
  int rc = hwloc_get_cpubind((hwloc_topology_t)t->hwloc, set, HWLOC_CPUBIND_PROCESS);
  if (rc == 0) {
    hwloc_bitmap_list_snprintf(out, outlen, set);
    int n = 0;
    for (int c = 0; c < t->ncores; c++)
      for (int p = 0; p < t->cores[c].pu_count; p++)
        if (hwloc_bitmap_isset(set, (unsigned)t->pus[t->cores[c].pu_first + p])) {
          n++;
          break;
        }
    if (ncores) *ncores = n;
  }
  hwloc_bitmap_free(set);
  return rc == 0 ? 0 : -1;
}
