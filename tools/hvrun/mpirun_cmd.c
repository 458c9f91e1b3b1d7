/* mpirun_cmd.c: standalone mode, `hvrun -np N [-H ...|--hostfile F] prog args`.
 *
 * hv has no process manager of its own: this builds the Open MPI mpirun command
 * that starts `hvrun prog args` as every rank, and execs it. Each rank's hvrun then
 * takes the task path (launch_env.c, task_exec.c), so binding is hvrun's alone and
 * mpirun gets --bind-to none. HV_* and NCCL_* variables (and PATH, LD_LIBRARY_PATH,
 * so remote hosts find the same programs) are forwarded with -x. Oversubscription
 * is added only when asked, or for a single-machine demo (no host list, no Slurm
 * allocation) with more ranks than cores, and then said on stderr.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvrun.h"

#ifndef HVRUN_MPIRUN
#define HVRUN_MPIRUN "mpirun"
#endif

extern char **environ;

typedef struct {
  char **v;
  int n, cap;
} mpirun_argv_t;

static void mpirun_argv_push(mpirun_argv_t *a, const char *s) {
  if (a->n + 2 > a->cap) {
    a->cap = a->cap ? 2 * a->cap : 64;
    a->v = realloc(a->v, (size_t)a->cap * sizeof(char *));
    if (!a->v) hvrun_die(NULL, 1, "out of memory");
  }
  a->v[a->n++] = strdup(s);
  a->v[a->n] = NULL;
}

/* Cores on this machine, for the single-machine oversubscription decision. */
static int mpirun_local_cores(void) {
  char err[128];
  hv_topo_t *t = hv_topo_discover(NULL, err, sizeof(err));
  int n = t ? t->ncores : (int)sysconf(_SC_NPROCESSORS_ONLN);
  hv_topo_free(t);
  return n > 0 ? n : 1;
}

/* Prints a word for a shell: quoted when it holds anything but safe characters. */
static void mpirun_print_word(const char *s) {
  if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") == strlen(s)) {
    fputs(s, stdout);
    return;
  }
  putchar('\'');
  for (; *s; s++) {
    if (*s == '\'') fputs("'\\''", stdout);
    else putchar(*s);
  }
  putchar('\'');
}

/* Builds the command for np ranks on hosts ("h1:2,h2:2"; NULL: the user's -H or
 * --hostfile), with `extra` (NULL or "--check") in place of the program when given.
 * The strings live as long as the process. */
char **mpirun_cmd_build(const hvrun_opts_t *o, int np_ranks, const char *hosts, const char *extra,
                        char *mpirun_path, size_t path_len) {
  char path[PATH_MAX], err[512], self[PATH_MAX], np[32];
  int check = o->check || extra;
  if (!check) {
    int rc = task_exec_resolve(o->prog_argv[0], 1, path, sizeof(path), err, sizeof(err));
    if (rc) hvrun_die(NULL, rc, "cannot run '%s': %s", o->prog_argv[0], err);
  }
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) hvrun_die(NULL, 1, "cannot find hvrun's own path (/proc/self/exe)");
  self[len] = '\0';

  const char *mpirun = getenv("HV_MPIRUN");
  if (!mpirun || !*mpirun) mpirun = HVRUN_MPIRUN;
  if (task_exec_resolve(mpirun, 0, mpirun_path, path_len, err, sizeof(err)) != 0)
    hvrun_die(NULL, 127, "Open MPI's mpirun ('%s') not found: %s. Install openmpi-bin or set HV_MPIRUN",
              mpirun, err);

  mpirun_argv_t a = {0};
  mpirun_argv_push(&a, mpirun);
  snprintf(np, sizeof(np), "%d", np_ranks);
  mpirun_argv_push(&a, "-np");
  mpirun_argv_push(&a, np);
  if (hosts) {
    mpirun_argv_push(&a, "--host");
    mpirun_argv_push(&a, hosts);
  } else if (o->hosts) {
    mpirun_argv_push(&a, "--host");
    mpirun_argv_push(&a, o->hosts);
  } else if (o->hostfile) {
    mpirun_argv_push(&a, "--hostfile");
    mpirun_argv_push(&a, o->hostfile);
  }
  int single_demo = !hosts && !o->hosts && !o->hostfile && !getenv("SLURM_JOB_ID");
  if (o->oversubscribe) mpirun_argv_push(&a, "--oversubscribe");
  else if (single_demo) {
    int cores = mpirun_local_cores();
    if (np_ranks > cores) {
      const char *attempt = getenv("HV_RESTART");
      if (!extra && (!attempt || strcmp(attempt, "0") == 0)) /* said once, not per restart */
        fprintf(stderr, "hvrun: note: %d ranks on %d cores of this machine: adding --oversubscribe "
                        "(single-machine demo; ranks share cores)\n", np_ranks, cores);
      mpirun_argv_push(&a, "--oversubscribe");
    }
  }
  mpirun_argv_push(&a, "--bind-to"); /* hvrun binds each rank itself */
  mpirun_argv_push(&a, "none");
  if (geteuid() == 0 && !getenv("OMPI_ALLOW_RUN_AS_ROOT")) mpirun_argv_push(&a, "--allow-run-as-root");
  for (char **e = environ; *e; e++) {
    if (strncmp(*e, "HV_", 3) != 0 && strncmp(*e, "NCCL_", 5) != 0 && strncmp(*e, "PATH=", 5) != 0 &&
        strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0)
      continue;
    char name[256];
    size_t nl = strcspn(*e, "=");
    if (nl >= sizeof(name)) continue;
    memcpy(name, *e, nl);
    name[nl] = '\0';
    if (strcmp(name, "HV_MPIRUN") == 0) continue;
    mpirun_argv_push(&a, "-x");
    mpirun_argv_push(&a, name);
  }
  mpirun_argv_push(&a, self);
  if (o->verbose && !extra) mpirun_argv_push(&a, "-v");
  if (check) mpirun_argv_push(&a, "--check");
  else {
    mpirun_argv_push(&a, path);
    for (int i = 1; i < o->prog_argc; i++) mpirun_argv_push(&a, o->prog_argv[i]);
  }
  return a.v;
}

void mpirun_cmd_print(char **argv) {
  for (int i = 0; argv[i]; i++) {
    if (i) putchar(' ');
    mpirun_print_word(argv[i]);
  }
  putchar('\n');
  fflush(stdout);
}

void mpirun_cmd_run(const hvrun_opts_t *o) {
  char mpirun_path[PATH_MAX];
  char **argv = mpirun_cmd_build(o, o->np, NULL, NULL, mpirun_path, sizeof(mpirun_path));
  if (o->dry_run || o->verbose) {
    mpirun_cmd_print(argv);
    if (o->dry_run) exit(0);
  }
  execvp(mpirun_path, argv);
  hvrun_die(NULL, 126, "cannot exec %s: %s", mpirun_path, strerror(errno));
}
