/* self_check_stub.c: `hvrun --check` in a build without libhvcoll (the collectives
 * target was not configured): says so instead of pretending to test anything. */
#include "hvrun.h"

int self_check_run(const hvrun_task_t *task, const hv_topo_t *topo, const hv_topo_binding_t *b) {
  (void)topo;
  (void)b;
  hvrun_warn(task, "--check needs libhvcoll, and this hvrun was built without it (no hvcoll target)");
  return 1;
}
