/* topo_discover.c: reads one node through hwloc into the plain arrays of hv_topo_t.
 *
 * NUMA nodes, packages, cores and their hardware threads come from the CPU tree
 * (restricted to what this process may use: hwloc drops cgroup-disallowed PUs).
 * GPUs come from hwloc's I/O objects: CUDA OS devices ("cuda0") when hwloc has its
 * CUDA plugin, else NVIDIA PCI display/3D controllers, kept in PCI bus order so the
 * index matches CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID (hvrun sets it). A device's
 * NUMA node is the one under its nearest non-I/O ancestor (its PCI locality).
 */
#define _POSIX_C_SOURCE 200809L
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hv_topo.h"

static void topo_set_err(char *err, size_t errlen, const char *what) {
  if (err && errlen) snprintf(err, errlen, "%s", what);
}

/* Index into numas[] of the NUMA node that holds cpuset, or -1 when it spans
 * several (a device local to the whole machine) or none. */
static int topo_numa_of_cpuset(hwloc_topology_t h, hwloc_const_cpuset_t set) {
  int found = -1, n = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < n; i++) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, (unsigned)i);
    if (!hwloc_bitmap_intersects(numa->cpuset, set)) continue;
    if (found >= 0) return n == 1 ? 0 : -1;
    found = i;
  }
  return found;
}

static int topo_io_numa(hwloc_topology_t h, hwloc_obj_t obj) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(h, obj);
  return anc && anc->cpuset ? topo_numa_of_cpuset(h, anc->cpuset) : -1;
}

static hwloc_obj_t topo_pci_parent(hwloc_obj_t obj) {
  for (hwloc_obj_t p = obj ? obj->parent : NULL; p; p = p->parent)
    if (p->type == HWLOC_OBJ_PCI_DEVICE) return p;
  return NULL;
}

static void topo_busid(hwloc_obj_t pci, char *out, size_t len) {
  snprintf(out, len, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
           pci->attr->pcidev.dev, pci->attr->pcidev.func);
}

static int topo_gpu_cmp(const void *a, const void *b) {
  return strcmp(((const hv_topo_gpu_t *)a)->busid, ((const hv_topo_gpu_t *)b)->busid);
}

/* CUDA OS devices first (named by the CUDA plugin); else NVIDIA PCI controllers. */
static int topo_read_gpus(hv_topo_t *t, hwloc_topology_t h) {
  int cap = 0;
  for (int pass = 0; pass < 2 && t->ngpus == 0; pass++) {
    hwloc_obj_t obj = NULL;
    while ((obj = pass == 0 ? hwloc_get_next_osdev(h, obj) : hwloc_get_next_pcidev(h, obj))) {
      hwloc_obj_t pci;
      if (pass == 0) {
        if (!obj->name || strncmp(obj->name, "cuda", 4) != 0) continue;
        pci = topo_pci_parent(obj);
      } else {
        /* class 0x03xx: display controllers (VGA 0x0300, 3D 0x0302); NVIDIA 0x10de */
        if (obj->attr->pcidev.vendor_id != 0x10de || (obj->attr->pcidev.class_id >> 8) != 0x03)
          continue;
        pci = obj;
      }
      if (t->ngpus == cap) {
        cap = cap ? 2 * cap : 8;
        /* On failure t->gpus is still the old block (freed by hv_topo_free). */
        hv_topo_gpu_t *gpus = realloc(t->gpus, (size_t)cap * sizeof(*t->gpus));
        if (!gpus) return -1;
        t->gpus = gpus;
      }
      hv_topo_gpu_t *g = &t->gpus[t->ngpus++];
      memset(g, 0, sizeof(*g));
      if (pci) {
        topo_busid(pci, g->busid, sizeof(g->busid));
        g->vendor_id = pci->attr->pcidev.vendor_id;
        g->device_id = pci->attr->pcidev.device_id;
      }
      snprintf(g->name, sizeof(g->name), "%s", pass == 0 ? obj->name : g->busid);
      g->numa = topo_io_numa(h, obj);
    }
  }
  if (t->ngpus > 1) qsort(t->gpus, (size_t)t->ngpus, sizeof(*t->gpus), topo_gpu_cmp);
  return 0;
}

static int topo_read_nics(hv_topo_t *t, hwloc_topology_t h) {
  int cap = 0;
  hwloc_obj_t obj = NULL;
  while ((obj = hwloc_get_next_osdev(h, obj))) {
    hwloc_obj_osdev_type_t ty = obj->attr->osdev.type;
    if ((ty != HWLOC_OBJ_OSDEV_NETWORK && ty != HWLOC_OBJ_OSDEV_OPENFABRICS) || !obj->name)
      continue;
    if (t->nnics == cap) {
      cap = cap ? 2 * cap : 8;
      hv_topo_nic_t *nics = realloc(t->nics, (size_t)cap * sizeof(*t->nics));
      if (!nics) return -1;
      t->nics = nics;
    }
    hv_topo_nic_t *n = &t->nics[t->nnics++];
    snprintf(n->name, sizeof(n->name), "%s", obj->name);
    snprintf(n->kind, sizeof(n->kind), "%s", ty == HWLOC_OBJ_OSDEV_NETWORK ? "network" : "openfabrics");
    n->numa = topo_io_numa(h, obj);
  }
  return 0;
}

static void topo_read_caches(hv_topo_t *t, hwloc_topology_t h) {
  static const hwloc_obj_type_t types[] = {HWLOC_OBJ_L1CACHE,  HWLOC_OBJ_L1ICACHE, HWLOC_OBJ_L2CACHE,
                                           HWLOC_OBJ_L3CACHE,  HWLOC_OBJ_L4CACHE,  HWLOC_OBJ_L5CACHE};
  for (size_t i = 0; i < sizeof(types) / sizeof(types[0]) && t->ncaches < 8; i++) {
    int n = hwloc_get_nbobjs_by_type(h, types[i]);
    if (n <= 0) continue;
    hwloc_obj_t c = hwloc_get_obj_by_type(h, types[i], 0);
    hv_topo_cache_t *dst = &t->caches[t->ncaches++];
    dst->level = (int)c->attr->cache.depth;
    dst->kind = c->attr->cache.type == HWLOC_OBJ_CACHE_DATA          ? 'd'
                : c->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION ? 'i'
                                                                      : 'u';
    dst->bytes = c->attr->cache.size;
    dst->count = n;
  }
}

typedef struct {
  hv_topo_core_t core;
  int logical;
} topo_core_sort_t;

static int topo_core_cmp(const void *a, const void *b) {
  const topo_core_sort_t *x = a, *y = b;
  if (x->core.numa != y->core.numa) return x->core.numa - y->core.numa;
  if (x->core.package != y->core.package) return x->core.package - y->core.package;
  return x->logical - y->logical;
}

/* Cores (or PUs on machines where hwloc reports no core level), sorted so that each
 * NUMA node owns a contiguous block; then the per-NUMA first/count. */
static int topo_read_cores(hv_topo_t *t, hwloc_topology_t h) {
  hwloc_obj_type_t ctype = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  int n = hwloc_get_nbobjs_by_type(h, ctype);
  int npu = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);
  if (n <= 0 || npu <= 0) return -1;
  topo_core_sort_t *tmp = calloc((size_t)n, sizeof(*tmp));
  t->cores = calloc((size_t)n, sizeof(*t->cores));
  t->pus = calloc((size_t)npu, sizeof(*t->pus));
  if (!tmp || !t->cores || !t->pus) {
    free(tmp);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    hwloc_obj_t c = hwloc_get_obj_by_type(h, ctype, (unsigned)i);
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_PACKAGE, c);
    int numa = topo_numa_of_cpuset(h, c->cpuset);
    tmp[i].core.os_index = (int)c->os_index;
    tmp[i].core.package = pkg ? (int)pkg->logical_index : 0;
    tmp[i].core.numa = numa < 0 ? 0 : numa;
    tmp[i].logical = i;
  }
  qsort(tmp, (size_t)n, sizeof(*tmp), topo_core_cmp);
  t->ncores = n;
  t->npus = 0;
  for (int i = 0; i < n; i++) {
    hwloc_obj_t c = hwloc_get_obj_by_type(h, ctype, (unsigned)tmp[i].logical);
    unsigned pu;
    t->cores[i] = tmp[i].core;
    t->cores[i].pu_first = t->npus;
    hwloc_bitmap_foreach_begin(pu, c->cpuset) {
      if (t->npus < npu) t->pus[t->npus++] = (int)pu;
    }
    hwloc_bitmap_foreach_end();
    t->cores[i].pu_count = t->npus - t->cores[i].pu_first;
  }
  free(tmp);
  for (int i = 0; i < t->nnumas; i++) {
    t->numas[i].core_first = 0;
    t->numas[i].core_count = 0;
  }
  for (int i = n - 1; i >= 0; i--) {
    hv_topo_numa_t *nm = &t->numas[t->cores[i].numa];
    nm->core_first = i;
    nm->core_count++;
  }
  return 0;
}

static int topo_load(hwloc_topology_t h, const char *source, hv_topo_t *t, char *err, size_t errlen) {
  snprintf(t->source, sizeof(t->source), "this system");
  if (source && strncmp(source, "xml:", 4) == 0) {
    if (hwloc_topology_set_xml(h, source + 4) != 0) {
      snprintf(err, errlen, "cannot read hwloc XML file '%s'", source + 4);
      return -1;
    }
    snprintf(t->source, sizeof(t->source), "xml");
  } else if (source && *source) {
    if (hwloc_topology_set_synthetic(h, source) != 0) {
      snprintf(err, errlen, "invalid hwloc synthetic description '%s' (try \"pack:2 core:4 pu:2\")",
               source);
      return -1;
    }
    snprintf(t->source, sizeof(t->source), "synthetic");
  }
  /* PCI devices and OS devices (GPUs, NICs) are filtered out by default */
  hwloc_topology_set_io_types_filter(h, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(h) != 0) {
    snprintf(err, errlen, "hwloc could not load the topology");
    return -1;
  }
  return 0;
}

hv_topo_t *hv_topo_discover(const char *source, char *err, size_t errlen) {
  char scratch[16];
  if (!err || !errlen) {
    err = scratch;
    errlen = sizeof(scratch);
  }
  hv_topo_t *t = calloc(1, sizeof(*t));
  hwloc_topology_t h;
  if (!t || hwloc_topology_init(&h) != 0) {
    free(t);
    topo_set_err(err, errlen, "out of memory initialising hwloc");
    return NULL;
  }
  t->hwloc = h;
  if (topo_load(h, source, t, err, errlen) != 0) {
    hv_topo_free(t);
    return NULL;
  }
  t->is_this_system = hwloc_topology_is_thissystem(h);
  if (gethostname(t->hostname, sizeof(t->hostname) - 1) != 0) snprintf(t->hostname, sizeof(t->hostname), "?");
  t->npackages = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PACKAGE);
  t->nnumas = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
  if (t->nnumas <= 0) t->nnumas = 1;
  t->numas = calloc((size_t)t->nnumas, sizeof(*t->numas));
  if (!t->numas) goto fail;
  for (int i = 0; i < t->nnumas; i++) {
    hwloc_obj_t nm = hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, (unsigned)i);
    t->numas[i].os_index = nm ? (int)nm->os_index : 0;
    t->numas[i].memory_bytes = nm ? nm->attr->numanode.local_memory : 0;
  }
  if (topo_read_cores(t, h) != 0) goto fail;
  topo_read_caches(t, h);
  if (topo_read_gpus(t, h) != 0 || topo_read_nics(t, h) != 0) {
    topo_set_err(err, errlen, "out of memory listing the GPUs and NICs");
    hv_topo_free(t);
    return NULL;
  }
  return t;
fail:
  topo_set_err(err, errlen, "hwloc reported no usable cores (or out of memory)");
  hv_topo_free(t);
  return NULL;
}

void hv_topo_free(hv_topo_t *t) {
  if (!t) return;
  if (t->hwloc) hwloc_topology_destroy((hwloc_topology_t)t->hwloc);
  free(t->numas);
  free(t->cores);
  free(t->pus);
  free(t->gpus);
  free(t->nics);
  free(t);
}
