/* topo_place.c: placing the engine's own resources on a rank's NUMA node, for a
 * process that hvrun did not bind (a user's own mpirun line) or for a thread that
 * must stay off the compute cores: bind the calling thread to a NUMA node's cores,
 * and allocate host staging memory bound to that node. Both go through hwloc so the
 * kernel interfaces (sched_setaffinity, mbind) stay in one place. */
#include <hwloc.h>
#include <stdlib.h>

#include "hv_topo.h"

static hwloc_obj_t place_numa_obj(const hv_topo_t *t, int numa) {
  if (!t || !t->hwloc || !t->is_this_system || numa < 0 || numa >= t->nnumas) return NULL;
  return hwloc_get_obj_by_type((hwloc_topology_t)t->hwloc, HWLOC_OBJ_NUMANODE, (unsigned)numa);
}

int hv_topo_bind_thread_numa(const hv_topo_t *t, int numa, char *err, size_t errlen) {
  hwloc_obj_t obj = place_numa_obj(t, numa);
  if (!obj || hwloc_bitmap_iszero(obj->cpuset)) {
    snprintf(err, errlen, "NUMA node index %d has no cores here (or the topology is not this machine's)", numa);
    return -1;
  }
  if (hwloc_set_cpubind((hwloc_topology_t)t->hwloc, obj->cpuset, HWLOC_CPUBIND_THREAD) != 0) {
    snprintf(err, errlen, "the kernel refused to bind the thread to NUMA node %u", obj->os_index);
    return -1;
  }
  return 0;
}

void *hv_topo_alloc_numa(const hv_topo_t *t, int numa, size_t bytes) {
  hwloc_obj_t obj = place_numa_obj(t, numa);
  if (!obj) return NULL;
  /* BIND without STRICT: the node is preferred; memory still comes from elsewhere
   * rather than failing when the node is full */
  return hwloc_alloc_membind((hwloc_topology_t)t->hwloc, bytes, obj->nodeset, HWLOC_MEMBIND_BIND,
                             HWLOC_MEMBIND_BYNODESET);
}

void hv_topo_free_numa(const hv_topo_t *t, void *ptr, size_t bytes) {
  if (t && t->hwloc && ptr) hwloc_free((hwloc_topology_t)t->hwloc, ptr, bytes);
}
