/* cifar_hook_state.c: the per-rank comm-hook state files of cifar_hook_state.h. A
 * file is one header line ("hv-hook-state 1 hook <spec> world <W> rank <R> step <S>
 * count <N> real <bytes> fnv <hash>") and then the N values as raw bytes; the FNV-1a
 * hash of those bytes catches a truncated or damaged file. */
#include "cifar_hook_state.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "cifar_ckpt.h"

static uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static void path_of(char *out, size_t len, const char *dir, long long step, int rank) {
  snprintf(out, len, "%s/hook-step-%012lld.rank%d", dir, step, rank);
}

/* Removes this rank's files older than the newest CIFAR_CKPT_KEEP steps. */
static void prune(const char *dir, int rank) {
  DIR *dd = opendir(dir);
  if (!dd) return;
  long long steps[64];
  int n = 0;
  struct dirent *e;
  char suffix[32];
  snprintf(suffix, sizeof suffix, ".rank%d", rank);
  while ((e = readdir(dd)) && n < 64) {
    long long s;
    int used = 0;
    if (sscanf(e->d_name, "hook-step-%lld%n", &s, &used) == 1 && !strcmp(e->d_name + used, suffix)) steps[n++] = s;
  }
  closedir(dd);
  for (int i = 0; i < n; i++) {
    int newer = 0;
    for (int j = 0; j < n; j++) newer += steps[j] > steps[i];
    if (newer >= CIFAR_CKPT_KEEP) {
      char p[4200];
      path_of(p, sizeof p, dir, steps[i], rank);
      remove(p);
    }
  }
}

int cifar_hook_state_save(const char *dir, ddp_t *d, const char *hook, int rank, int world, long long step,
                          char *err, size_t errlen) {
  const size_t n = ddp_hook_state_count(d);
  if (n == 0) return 0;
  real_t *v = malloc(n * sizeof *v);
  if (!v) {
    snprintf(err, errlen, "rank %d: out of memory for the comm hook's state (%zu values)", rank, n);
    return -1;
  }
  ddp_hook_state_copy(d, v, 0);
  char p[4200];
  path_of(p, sizeof p, dir, step, rank);
  atomic_file_t af;
  int rc = atomic_file_open(&af, p, err, errlen);
  if (rc == 0) {
    fprintf(af.f, "hv-hook-state 1 hook %s world %d rank %d step %lld count %zu real %zu fnv %" PRIu64 "\n", hook,
            world, rank, step, n, sizeof *v, fnv1a(v, n * sizeof *v));
    if (fwrite(v, sizeof *v, n, af.f) != n) {
      atomic_file_abort(&af);
      snprintf(err, errlen, "rank %d: writing %s failed", rank, p);
      rc = -1;
    } else {
      rc = atomic_file_commit(&af, 0, err, errlen);
    }
  }
  free(v);
  if (rc == 0) prune(dir, rank);
  return rc;
}

int cifar_hook_state_load(const char *dir, ddp_t *d, const char *hook, int rank, int world, long long step,
                          char *why, size_t len) {
  const size_t n = ddp_hook_state_count(d);
  if (n == 0) return 0;
  char p[4200], line[600], want[600];
  path_of(p, sizeof p, dir, step, rank);
  FILE *f = fopen(p, "rb");
  if (!f) {
    snprintf(why, len, "%s: no such file", p);
    return 1;
  }
  uint64_t hash = 0;
  int rc = 1;
  real_t *v = malloc(n * sizeof *v);
  snprintf(want, sizeof want, "hv-hook-state 1 hook %s world %d rank %d step %lld count %zu real %zu fnv ", hook,
           world, rank, step, n, sizeof *v);
  if (!v) snprintf(why, len, "out of memory");
  else if (!fgets(line, sizeof line, f) || strncmp(line, want, strlen(want)))
    snprintf(why, len, "%s is for another run (its header: %.200s; this run's: %.200s...)", p, line, want);
  else if (sscanf(line + strlen(want), "%" SCNu64, &hash) != 1 || fread(v, sizeof *v, n, f) != n ||
           fgetc(f) != EOF || fnv1a(v, n * sizeof *v) != hash)
    snprintf(why, len, "%s is truncated or damaged (checksum)", p);
  else {
    ddp_hook_state_copy(d, v, 1);
    rc = 0;
  }
  free(v);
  fclose(f);
  return rc;
}
