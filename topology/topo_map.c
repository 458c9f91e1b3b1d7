/* topo_map.c: the printable topology map of one node (hvrun --topology): the
 * machine (packages, NUMA nodes with their cores, caches, GPUs, NICs) and the
 * binding each local rank would get, as human text or as one JSON object.
 * Both printers walk the same hv_topo_t and hv_topo_plan() results, so the text
 * and the JSON never disagree. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hv_topo.h"

static void map_bytes(uint64_t b, char *out, size_t len) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = (double)b;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  snprintf(out, len, v == (double)(uint64_t)v ? "%.0f %s" : "%.1f %s", v, unit[u]);
}

static void map_numa_pus(const hv_topo_t *t, int numa, char *out, size_t len) {
  const hv_topo_numa_t *nm = &t->numas[numa];
  int *ids = malloc((size_t)t->npus * sizeof(*ids) + sizeof(int));
  int n = 0;
  if (!ids) {
    snprintf(out, len, "?");
    return;
  }
  for (int c = nm->core_first; c < nm->core_first + nm->core_count; c++)
    for (int p = 0; p < t->cores[c].pu_count; p++) ids[n++] = t->pus[t->cores[c].pu_first + p];
  hv_topo_cpulist_format(ids, n, out, len);
  free(ids);
}

static const char *map_numa_name(const hv_topo_t *t, int numa, char *buf, size_t len) {
  if (numa < 0 || numa >= t->nnumas) return "none";
  snprintf(buf, len, "%d", t->numas[numa].os_index);
  return buf;
}

/* Plans every local rank; returns how many are oversubscribed (0 when none). */
static int map_plan_all(const hv_topo_t *t, int local_size, hv_topo_binding_t *b) {
  int over = 0;
  for (int r = 0; r < local_size; r++) {
    if (hv_topo_plan(t, r, local_size, &b[r]) != 0) memset(&b[r], 0, sizeof(b[r]));
    over += b[r].oversubscribed;
  }
  return over;
}

void hv_topo_map_write_text(FILE *out, const hv_topo_t *t, int local_size) {
  char buf[HV_TOPO_CPULIST_MAX], nb[16];
  fprintf(out, "hv topology of node %s (source: %s)\n", t->hostname, t->source);
  fprintf(out, "  machine : %d package%s, %d NUMA node%s, %d cores, %d hardware threads\n",
          t->npackages, t->npackages == 1 ? "" : "s", t->nnumas, t->nnumas == 1 ? "" : "s",
          t->ncores, t->npus);
  if (t->ncaches > 0) {
    fprintf(out, "  caches  :");
    for (int i = 0; i < t->ncaches; i++) {
      map_bytes(t->caches[i].bytes, buf, sizeof(buf));
      fprintf(out, "%s L%d%s %s x%d", i ? "," : "", t->caches[i].level,
              t->caches[i].kind == 'u' ? "" : (t->caches[i].kind == 'd' ? "d" : "i"), buf,
              t->caches[i].count);
    }
    fprintf(out, "\n");
  }
  for (int i = 0; i < t->nnumas; i++) {
    char mem[32];
    map_bytes(t->numas[i].memory_bytes, mem, sizeof(mem));
    map_numa_pus(t, i, buf, sizeof(buf));
    fprintf(out, "  NUMA %-3d: %d cores, PUs %s, %s\n", t->numas[i].os_index, t->numas[i].core_count,
            buf, mem);
  }
  if (t->ngpus == 0) fprintf(out, "  GPUs    : none\n");
  for (int i = 0; i < t->ngpus; i++)
    fprintf(out, "  GPU %-4d: %s (PCI %s, %04x:%04x), NUMA %s\n", i, t->gpus[i].name, t->gpus[i].busid,
            t->gpus[i].vendor_id, t->gpus[i].device_id, map_numa_name(t, t->gpus[i].numa, nb, sizeof(nb)));
  if (t->nnics == 0) fprintf(out, "  NICs    : none found on PCI\n");
  for (int i = 0; i < t->nnics; i++)
    fprintf(out, "  NIC     : %s (%s), NUMA %s\n", t->nics[i].name, t->nics[i].kind,
            map_numa_name(t, t->nics[i].numa, nb, sizeof(nb)));
  if (local_size <= 0) return;

  hv_topo_binding_t *b = calloc((size_t)local_size, sizeof(*b));
  if (!b) return;
  int over = map_plan_all(t, local_size, b);
  fprintf(out, "binding of %d local rank%s (%s):\n", local_size, local_size == 1 ? "" : "s",
          t->ngpus > 0 ? "GPU round robin, cores of the GPU's NUMA node split evenly"
                       : "no GPU: cores split evenly");
  for (int r = 0; r < local_size; r++) {
    char gpu[32];
    if (b[r].gpu < 0) snprintf(gpu, sizeof(gpu), "none");
    else snprintf(gpu, sizeof(gpu), "%d%s", b[r].gpu, b[r].gpu_shared ? " (shared)" : "");
    fprintf(out, "  local rank %-3d: GPU %s, NUMA %s, %d core%s, PUs %s, threads %d%s\n", r, gpu,
            map_numa_name(t, b[r].numa, nb, sizeof(nb)), b[r].core_count, b[r].core_count == 1 ? "" : "s",
            b[r].cpulist, b[r].core_count, b[r].oversubscribed ? " [oversubscribed]" : "");
  }
  if (over)
    fprintf(out, "  warning: %d local ranks on %d cores: oversubscribed, ranks share cores "
                 "and run slower\n", local_size, t->ncores);
  free(b);
}

static void map_json_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
    else if (c < 0x20) fprintf(out, "\\u%04x", c);
    else fputc(c, out);
  }
  fputc('"', out);
}

void hv_topo_map_write_json(FILE *out, const hv_topo_t *t, int local_size) {
  char buf[HV_TOPO_CPULIST_MAX];
  fprintf(out, "{\"host\": ");
  map_json_str(out, t->hostname);
  fprintf(out, ", \"source\": ");
  map_json_str(out, t->source);
  fprintf(out, ", \"packages\": %d, \"cores\": %d, \"pus\": %d,\n", t->npackages, t->ncores, t->npus);
  fprintf(out, " \"numa_nodes\": [");
  for (int i = 0; i < t->nnumas; i++) {
    map_numa_pus(t, i, buf, sizeof(buf));
    fprintf(out, "%s{\"os_index\": %d, \"cores\": %d, \"pus\": \"%s\", \"memory_bytes\": %" PRIu64 "}",
            i ? ", " : "", t->numas[i].os_index, t->numas[i].core_count, buf, t->numas[i].memory_bytes);
  }
  fprintf(out, "],\n \"caches\": [");
  for (int i = 0; i < t->ncaches; i++)
    fprintf(out, "%s{\"level\": %d, \"kind\": \"%c\", \"bytes\": %" PRIu64 ", \"count\": %d}", i ? ", " : "",
            t->caches[i].level, t->caches[i].kind, t->caches[i].bytes, t->caches[i].count);
  fprintf(out, "],\n \"gpus\": [");
  for (int i = 0; i < t->ngpus; i++) {
    fprintf(out, "%s{\"index\": %d, \"name\": ", i ? ", " : "", i);
    map_json_str(out, t->gpus[i].name);
    fprintf(out, ", \"pci\": ");
    map_json_str(out, t->gpus[i].busid);
    fprintf(out, ", \"numa\": %d}", t->gpus[i].numa >= 0 ? t->numas[t->gpus[i].numa].os_index : -1);
  }
  fprintf(out, "],\n \"nics\": [");
  for (int i = 0; i < t->nnics; i++) {
    fprintf(out, "%s{\"name\": ", i ? ", " : "");
    map_json_str(out, t->nics[i].name);
    fprintf(out, ", \"kind\": \"%s\", \"numa\": %d}", t->nics[i].kind,
            t->nics[i].numa >= 0 ? t->numas[t->nics[i].numa].os_index : -1);
  }
  fprintf(out, "],\n \"bindings\": [");
  int over = 0;
  hv_topo_binding_t *b = local_size > 0 ? calloc((size_t)local_size, sizeof(*b)) : NULL;
  if (b) {
    over = map_plan_all(t, local_size, b);
    for (int r = 0; r < local_size; r++)
      fprintf(out, "%s\n  {\"local_rank\": %d, \"gpu\": %d, \"gpu_shared\": %s, \"numa\": %d, "
                   "\"cores\": %d, \"pus\": \"%s\", \"threads\": %d, \"oversubscribed\": %s}",
              r ? "," : "", r, b[r].gpu, b[r].gpu_shared ? "true" : "false",
              b[r].numa >= 0 && b[r].numa < t->nnumas ? t->numas[b[r].numa].os_index : -1,
              b[r].core_count, b[r].cpulist, b[r].core_count, b[r].oversubscribed ? "true" : "false");
    free(b);
  }
  fprintf(out, "],\n \"local_size\": %d, \"oversubscribed\": %s}\n", local_size > 0 ? local_size : 0,
          over ? "true" : "false");
}
