/* topo_manual.c: builds a hv_topo_t by hand (tests, and machines described in
 * words), keeping the invariants hv_topo_discover() gives: cores grouped by NUMA
 * node in order, hardware threads grouped by core, OS indices counting up. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hv_topo.h"

hv_topo_t *hv_topo_new_manual(const char *hostname) {
  hv_topo_t *t = calloc(1, sizeof(*t));
  if (!t) return NULL;
  snprintf(t->hostname, sizeof(t->hostname), "%s", hostname ? hostname : "manual");
  snprintf(t->source, sizeof(t->source), "manual");
  t->npackages = 1;
  return t;
}

int hv_topo_add_numa(hv_topo_t *t, int ncores, int pus_per_core, uint64_t memory_bytes) {
  if (!t || ncores < 0 || pus_per_core < 1) return -1;
  /* The new totals (and their + 1) must fit the int counters: no wrapped sizes. */
  if (ncores > INT_MAX - 1 - t->ncores || ncores > (INT_MAX - 1 - t->npus) / pus_per_core || t->nnumas == INT_MAX) return -1;
  hv_topo_numa_t *numas = realloc(t->numas, (size_t)(t->nnumas + 1) * sizeof(*numas));
  hv_topo_core_t *cores = realloc(t->cores, (size_t)(t->ncores + ncores + 1) * sizeof(*cores));
  int *pus = realloc(t->pus, (size_t)(t->npus + ncores * pus_per_core + 1) * sizeof(*pus));
  if (numas) t->numas = numas;
  if (cores) t->cores = cores;
  if (pus) t->pus = pus;
  if (!numas || !cores || !pus) return -1;
  int idx = t->nnumas++;
  t->numas[idx] = (hv_topo_numa_t){.os_index = idx, .memory_bytes = memory_bytes,
                                   .core_first = t->ncores, .core_count = ncores};
  for (int c = 0; c < ncores; c++) {
    hv_topo_core_t *core = &t->cores[t->ncores];
    *core = (hv_topo_core_t){.os_index = t->ncores, .package = 0, .numa = idx,
                             .pu_first = t->npus, .pu_count = pus_per_core};
    for (int p = 0; p < pus_per_core; p++) t->pus[t->npus + p] = t->npus + p;
    t->npus += pus_per_core;
    t->ncores++;
  }
  return idx;
}

int hv_topo_add_gpu(hv_topo_t *t, const char *busid, int numa) {
  if (!t || numa >= t->nnumas) return -1;
  hv_topo_gpu_t *gpus = realloc(t->gpus, (size_t)(t->ngpus + 1) * sizeof(*gpus));
  if (!gpus) return -1;
  t->gpus = gpus;
  hv_topo_gpu_t *g = &t->gpus[t->ngpus];
  memset(g, 0, sizeof(*g));
  snprintf(g->busid, sizeof(g->busid), "%s", busid ? busid : "");
  snprintf(g->name, sizeof(g->name), "cuda%d", t->ngpus);
  g->vendor_id = 0x10de;
  g->numa = numa;
  return t->ngpus++;
}
