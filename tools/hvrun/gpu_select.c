/* gpu_select.c: which GPU a task gets, when a scheduler may already have chosen.
 *
 * Without CUDA_VISIBLE_DEVICES, the policy's GPU (local rank mod GPUs, in PCI order)
 * is exported as CUDA_VISIBLE_DEVICES with CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA's
 * numbering is ours. When the scheduler set CUDA_VISIBLE_DEVICES (Slurm gres), the
 * policy must choose among those GPUs only, and place the rank on the NUMA node of
 * the GPU it really gets. Their machine indices come from SLURM_STEP_GPUS /
 * SLURM_JOB_GPUS when Slurm gives them (with device cgroups CUDA_VISIBLE_DEVICES is
 * renumbered from 0), else from CUDA_VISIBLE_DEVICES itself when it is numeric; the
 * topology's GPU list is narrowed to them, in that order. UUIDs or indices that do
 * not fit leave the list alone and the rank takes entry (local rank mod entries).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "hvrun.h"

/* Splits a comma list into tokens; returns the count, or -1 when too long. */
static int gpu_select_split(const char *s, char tokens[][32], int max) {
  int n = 0;
  for (const char *p = s; p && *p;) {
    size_t len = strcspn(p, ",");
    if (n == max || len >= 32) return -1;
    memcpy(tokens[n], p, len);
    tokens[n++][len] = '\0';
    p += len;
    if (*p == ',') p++;
  }
  return n;
}

static int gpu_select_number(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  return *s && !*end && v >= 0 && v < 100000 ? (int)v : -1;
}

void gpu_select_narrow(hv_topo_t *topo, gpu_select_t *sel) {
  memset(sel, 0, sizeof(*sel));
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  if (topo->ngpus <= 0 || !vis || !*vis) return;
  sel->nvis = gpu_select_split(vis, sel->tokens, HVRUN_MAX_GPUS);
  if (sel->nvis <= 0) {
    sel->nvis = 0;
    return;
  }
  char phys_tok[HVRUN_MAX_GPUS][32];
  const char *slurm = getenv("SLURM_STEP_GPUS");
  if (!slurm || !*slurm) slurm = getenv("SLURM_JOB_GPUS");
  const char *src = slurm && gpu_select_split(slurm, phys_tok, HVRUN_MAX_GPUS) == sel->nvis ? slurm : vis;
  if (gpu_select_split(src, phys_tok, HVRUN_MAX_GPUS) != sel->nvis) return;
  for (int i = 0; i < sel->nvis; i++) {
    sel->phys[i] = gpu_select_number(phys_tok[i]);
    if (sel->phys[i] < 0 || sel->phys[i] >= topo->ngpus) return; /* UUIDs, or not ours */
  }
  hv_topo_gpu_t *narrowed = malloc((size_t)sel->nvis * sizeof(*narrowed));
  if (!narrowed) return;
  for (int i = 0; i < sel->nvis; i++) narrowed[i] = topo->gpus[sel->phys[i]];
  free(topo->gpus);
  topo->gpus = narrowed;
  topo->ngpus = sel->nvis;
  sel->narrowed = 1;
}

void gpu_select_export(const hv_topo_t *topo, const gpu_select_t *sel, const hv_topo_binding_t *b,
                       int local_rank) {
  char buf[32];
  if (topo->ngpus <= 0 || b->gpu < 0) return;
  if (sel->narrowed) { /* b->gpu indexes the scheduler's list */
    setenv("CUDA_VISIBLE_DEVICES", sel->tokens[b->gpu], 1);
    snprintf(buf, sizeof(buf), "%d", sel->phys[b->gpu]);
  } else if (sel->nvis > 0) {
    setenv("CUDA_VISIBLE_DEVICES", sel->tokens[local_rank % sel->nvis], 1);
    snprintf(buf, sizeof(buf), "%s", sel->tokens[local_rank % sel->nvis]);
  } else {
    /* our index is the PCI-order index: make CUDA number devices the same way */
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
    snprintf(buf, sizeof(buf), "%d", b->gpu);
    setenv("CUDA_VISIBLE_DEVICES", buf, 1);
  }
  setenv("HV_GPU", buf, 1);
}
