/* hv_topo.h: what one node looks like (hwloc discovery) and where each local rank
 * should run on it (the binding policy), for hvrun and the collective engine.
 *
 * hv_topo_discover() reads the node once through hwloc into plain arrays (packages,
 * NUMA nodes, cores with their hardware threads, caches, GPUs with their PCI
 * locality, network interfaces), so the policy and the printers never touch hwloc
 * and tests can build a machine by hand. hv_topo_plan() is the policy: a pure
 * function of (machine, local rank, local size) that the engine can call at any
 * time to learn which GPU, NUMA node and cores a local rank owns, e.g. to place
 * its background thread and host staging buffers on that NUMA node.
 *
 * This header includes no hwloc header; only topology/ itself links hwloc.
 */
#ifndef HV_TOPO_H
#define HV_TOPO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HV_TOPO_NAME_MAX 64
#define HV_TOPO_CPULIST_MAX 512

typedef struct hv_topo_numa {
  int os_index;          /* the kernel's node number (numactl -m N) */
  uint64_t memory_bytes; /* local memory, 0 when unknown */
  int core_first;        /* its cores are cores[core_first .. core_first+core_count-1] */
  int core_count;
} hv_topo_numa_t;

typedef struct hv_topo_core {
  int os_index; /* the kernel's core id */
  int package;  /* logical package index */
  int numa;     /* index into numas[] */
  int pu_first; /* its hardware threads are pus[pu_first .. pu_first+pu_count-1] */
  int pu_count;
} hv_topo_core_t;

typedef struct hv_topo_gpu {
  char name[HV_TOPO_NAME_MAX];  /* "cuda0" when hwloc's CUDA plugin named it, else the PCI id */
  char busid[HV_TOPO_NAME_MAX]; /* PCI domain:bus:dev.fn, e.g. "0000:3b:00.0" */
  unsigned vendor_id, device_id;
  int numa; /* index into numas[] of the nearest NUMA node, -1 when not local to one */
} hv_topo_gpu_t;

typedef struct hv_topo_nic {
  char name[HV_TOPO_NAME_MAX]; /* "eth0", "ib0", "mlx5_0" */
  char kind[16];               /* "network" or "openfabrics" */
  int numa;                    /* as for GPUs */
} hv_topo_nic_t;

typedef struct hv_topo_cache {
  int level;       /* 1, 2, 3, ... */
  char kind;       /* 'd' data, 'i' instruction, 'u' unified */
  uint64_t bytes;  /* size of one instance */
  int count;       /* instances on the node */
} hv_topo_cache_t;

/* One node. Cores are ordered by NUMA node then package then OS index, so that the
 * cores of a NUMA node are contiguous and the policy can hand out contiguous blocks. */
typedef struct hv_topo {
  char hostname[HV_TOPO_NAME_MAX];
  char source[HV_TOPO_NAME_MAX]; /* "this system", "synthetic", "xml", "manual" */
  int is_this_system;            /* binding is possible only when 1 */
  int npackages;
  int nnumas;
  hv_topo_numa_t *numas;
  int ncores;
  hv_topo_core_t *cores;
  int npus;
  int *pus; /* OS indices of hardware threads, grouped by core */
  int ngpus;
  hv_topo_gpu_t *gpus; /* in PCI bus order = CUDA order with CUDA_DEVICE_ORDER=PCI_BUS_ID */
  int nnics;
  hv_topo_nic_t *nics;
  int ncaches;
  hv_topo_cache_t caches[8];
  void *hwloc; /* hwloc_topology_t, NULL for a machine built by hand */
} hv_topo_t;

/* Discovers the node this process runs on. source is NULL for this system, or a
 * hwloc synthetic description ("pack:2 numa:1 core:4 pu:2"), or "xml:PATH" for an
 * exported hwloc XML file. On failure returns NULL and writes the reason to err. */
hv_topo_t *hv_topo_discover(const char *source, char *err, size_t errlen);

/* An empty machine to fill by hand (tests): hv_topo_add_* below keep the invariants. */
hv_topo_t *hv_topo_new_manual(const char *hostname);
/* Adds a NUMA node with ncores cores of pus_per_core threads; returns its index. */
int hv_topo_add_numa(hv_topo_t *topo, int ncores, int pus_per_core, uint64_t memory_bytes);
/* Adds a GPU near NUMA node numa (-1: none); returns its index. */
int hv_topo_add_gpu(hv_topo_t *topo, const char *busid, int numa);

void hv_topo_free(hv_topo_t *topo);

/* ---- binding policy ------------------------------------------------------ */

typedef struct hv_topo_binding {
  int local_rank, local_size;
  int gpu;              /* index into gpus[] (= CUDA device in PCI order), -1 when no GPU */
  int gpu_shared;       /* 1 when more local ranks than GPUs */
  int numa;             /* index into numas[] where the rank, its thread and buffers live */
  int core_first;       /* cores[core_first .. core_first+core_count-1] */
  int core_count;       /* cores given to the rank: the thread count for BLAS / OpenMP */
  int ranks_sharing;    /* local ranks whose cores come from the same pool (same NUMA) */
  int oversubscribed;   /* 1 when more ranks than cores in the pool: cores are shared */
  char cpulist[HV_TOPO_CPULIST_MAX]; /* OS PU indices, "0-3,8-11" */
} hv_topo_binding_t;

/* The policy. With GPUs: local rank r gets GPU r mod ngpus and runs on that GPU's NUMA
 * node; the cores of that node are split evenly (contiguous blocks) among the local
 * ranks that share it. Without GPUs: all cores are split evenly among the local
 * ranks, in NUMA order. More ranks than cores: one core each, round robin, and
 * oversubscribed is set. Returns 0, or -1 for a bad rank/size. */
int hv_topo_plan(const hv_topo_t *topo, int local_rank, int local_size,
                 hv_topo_binding_t *binding);

/* Binds the calling process (all its threads, and what it execs) to binding's cores.
 * Returns 0, or -1 with the reason in err (not this system, kernel refused...). */
int hv_topo_bind_process(const hv_topo_t *topo, const hv_topo_binding_t *binding, char *err,
                         size_t errlen);

/* For the engine: binds the calling thread to the cores of numas[numa] (e.g. the
 * background thread of a rank hvrun did not bind). Returns 0, or -1 with err. */
int hv_topo_bind_thread_numa(const hv_topo_t *topo, int numa, char *err, size_t errlen);
/* Host memory (page-aligned) bound to numas[numa], for staging buffers; NULL when
 * the node is unknown or allocation fails. Free with hv_topo_free_numa(). */
void *hv_topo_alloc_numa(const hv_topo_t *topo, int numa, size_t bytes);
void hv_topo_free_numa(const hv_topo_t *topo, void *ptr, size_t bytes);

/* The calling process's current CPU affinity as an OS PU list ("0-1"), and how many
 * cores it touches (ncores may be NULL). Returns 0, or -1 (not this system). */
int hv_topo_affinity(const hv_topo_t *topo, char *out, size_t outlen, int *ncores);

/* Writes "0-3,8" for the sorted-or-not list of OS indices ids[n]. Returns 0, or -1
 * when out is too small (out then ends with "..."). */
int hv_topo_cpulist_format(const int *ids, int n, char *out, size_t outlen);

/* ---- printable map --------------------------------------------------------- */

/* Human-readable map of the node, then the binding of local ranks 0..local_size-1
 * (none when local_size is 0), with an oversubscription warning when it applies. */
void hv_topo_map_write_text(FILE *out, const hv_topo_t *topo, int local_size);
/* The same as one JSON object (keys: host, source, packages, numa_nodes, cores, pus,
 * caches, gpus, nics, bindings, oversubscribed). */
void hv_topo_map_write_json(FILE *out, const hv_topo_t *topo, int local_size);

#ifdef __cplusplus
}
#endif
#endif /* HV_TOPO_H */
