/* task_exec.c: what hvrun does in each task under srun / mpirun: discover the node,
 * take the binding policy's answer for this local rank, bind, export the job's shape
 * (HV_*), the GPU (gpu_select.c) and thread counts, then exec the program
 * with its arguments untouched (so the program's pid is the task's pid, and signals
 * and exit codes reach srun / mpirun directly).
 *
 * HV_BIND chooses the binding: auto (default) binds to the planned cores unless the
 * launcher already narrowed our affinity (mpirun's --bind-to core, srun's
 * --cpu-bind), which we then keep rather than fight; cores forces the plan; numa
 * binds to the plan's whole NUMA node; none leaves affinity alone (emulated nodes
 * that share the same physical cores want this).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvrun.h"

extern char **environ;

static int task_exec_check_file(const char *path, char *err, size_t errlen) {
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "%s", strerror(errno));
    return 127;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "is a directory");
    return 126;
  }
  if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0) {
    snprintf(err, errlen, "not an executable file (chmod +x?)");
    return 126;
  }
  return 0;
}

int task_exec_resolve(const char *prog, int make_absolute, char *out, size_t outlen, char *err,
                      size_t errlen) {
  if (!prog || !*prog) {
    snprintf(err, errlen, "empty program name");
    return 127;
  }
  if (strchr(prog, '/')) { /* relative paths are relative to the cwd, as for execvp */
    int rc = task_exec_check_file(prog, err, errlen);
    if (rc) return rc;
    char cwd[PATH_MAX];
    if (make_absolute && prog[0] != '/' && getcwd(cwd, sizeof(cwd)))
      snprintf(out, outlen, "%s/%s", cwd, prog);
    else
      snprintf(out, outlen, "%s", prog);
    return 0;
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  int best = 127;
  char dir_err[PATH_MAX + 160] = "not found on PATH (give a path such as ./prog)";
  for (const char *p = path; *p;) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    char cand[PATH_MAX];
    snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, len ? p : ".", prog);
    char why[128];
    int rc = task_exec_check_file(cand, why, sizeof(why));
    if (rc == 0) {
      snprintf(out, outlen, "%s", make_absolute ? cand : prog);
      return 0;
    }
    if (rc == 126 && best == 127) {
      best = 126;
      snprintf(dir_err, sizeof(dir_err), "%s: %s", cand, why);
    }
    p += len;
    if (*p == ':') p++;
  }
  snprintf(err, errlen, "%s", dir_err);
  return best;
}

static void task_exec_setenv_int(const char *name, int v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%d", v);
  setenv(name, buf, 1);
}

/* Applies HV_BIND; returns the PU list and thread count the task really has. */
static void task_exec_bind(const hvrun_task_t *task, const hv_topo_t *topo, hv_topo_binding_t *b,
                           const char **mode_out) {
  const char *mode = getenv("HV_BIND");
  if (!mode || !*mode) mode = "auto";
  char cur[HV_TOPO_CPULIST_MAX] = "", all[HV_TOPO_CPULIST_MAX] = "", err[256];
  int cur_cores = 0;
  int have_cur = hv_topo_affinity(topo, cur, sizeof(cur), &cur_cores) == 0;
  hv_topo_cpulist_format(topo->pus, topo->npus, all, sizeof(all));
  *mode_out = mode;
  if (strcmp(mode, "none") == 0 || !topo->is_this_system) {
    if (have_cur) {
      snprintf(b->cpulist, sizeof(b->cpulist), "%s", cur);
      b->core_count = cur_cores;
    }
    if (!topo->is_this_system) *mode_out = "none (topology is not this machine's)";
    return;
  }
  if (strcmp(mode, "auto") == 0 && have_cur && strcmp(cur, all) != 0) {
    snprintf(b->cpulist, sizeof(b->cpulist), "%s", cur); /* the launcher bound us: keep it */
    b->core_count = cur_cores;
    *mode_out = "launcher";
    return;
  }
  if (strcmp(mode, "numa") == 0) {
    const hv_topo_numa_t *nm = &topo->numas[b->numa];
    if (nm->core_count > 0) {
      b->core_first = nm->core_first;
      b->core_count = nm->core_count;
      int *ids = malloc((size_t)topo->npus * sizeof(int));
      int n = 0;
      for (int c = nm->core_first; ids && c < nm->core_first + nm->core_count; c++)
        for (int p = 0; p < topo->cores[c].pu_count; p++) ids[n++] = topo->pus[topo->cores[c].pu_first + p];
      if (ids) hv_topo_cpulist_format(ids, n, b->cpulist, sizeof(b->cpulist));
      free(ids);
    }
  } else if (strcmp(mode, "auto") != 0 && strcmp(mode, "cores") != 0) {
    hvrun_die(task, 2, "HV_BIND=%s: unknown binding mode (use auto, cores, numa or none)", mode);
  }
  if (hv_topo_bind_process(topo, b, err, sizeof(err)) != 0)
    hvrun_warn(task, "could not bind to PUs %s: %s; running unbound", b->cpulist, err);
}

static void task_exec_export(const hvrun_task_t *task, const hv_topo_t *topo, const hv_topo_binding_t *b,
                             const char *bind_mode, const gpu_select_t *gpus) {
  task_exec_setenv_int("HV_RANK", task->rank);
  task_exec_setenv_int("HV_SIZE", task->size);
  task_exec_setenv_int("HV_LOCAL_RANK", task->local_rank);
  task_exec_setenv_int("HV_LOCAL_SIZE", task->local_size);
  task_exec_setenv_int("HV_NODE_INDEX", task->node_index);
  task_exec_setenv_int("HV_NUM_NODES", task->num_nodes);
  setenv("HV_LAUNCHER", launch_env_name(task->launcher), 1);
  setenv("HV_CPUS", b->cpulist, 1);
  setenv("HV_BIND_APPLIED", bind_mode, 1);
  task_exec_setenv_int("HV_NUMA_NODE", b->numa >= 0 ? topo->numas[b->numa].os_index : -1);
  task_exec_setenv_int("HV_OVERSUBSCRIBED", b->oversubscribed);
  gpu_select_export(topo, gpus, b, task->local_rank);
  setenv("HV_HVRUN", "1", 1);
  int threads = b->core_count > 0 ? b->core_count : 1;
  static const char *thread_vars[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"};
  for (size_t i = 0; i < sizeof(thread_vars) / sizeof(thread_vars[0]); i++)
    if (!getenv(thread_vars[i])) task_exec_setenv_int(thread_vars[i], threads); /* the user's value wins */
}

void task_exec_run(const hvrun_opts_t *opts, const hvrun_task_t *task) {
  char err[512], path[PATH_MAX];
  if (!opts->check) {
    int rc = task_exec_resolve(opts->prog_argv[0], 0, path, sizeof(path), err, sizeof(err));
    if (rc) {
      char cwd[PATH_MAX] = "?";
      if (!getcwd(cwd, sizeof(cwd))) snprintf(cwd, sizeof(cwd), "?");
      hvrun_die(task, rc, "cannot run '%s': %s (cwd %s)", opts->prog_argv[0], err, cwd);
    }
  }
  hv_topo_t *topo = hv_topo_discover(getenv("HV_TOPOLOGY_SOURCE"), err, sizeof(err));
  if (!topo) hvrun_die(task, 1, "topology discovery failed: %s", err);
  gpu_select_t gpus;
  gpu_select_narrow(topo, &gpus);
  hv_topo_binding_t b;
  if (hv_topo_plan(topo, task->local_rank, task->local_size, &b) != 0)
    hvrun_die(task, 1, "no binding for local rank %d of %d", task->local_rank, task->local_size);
  if (b.oversubscribed && task->local_rank == 0)
    hvrun_warn(task, "%d local ranks on %d cores of node %s: oversubscribed, ranks share cores "
                     "and run slower", task->local_size, topo->ncores, task->host);
  const char *mode = opts->dry_run ? "not applied (dry run)" : "none";
  if (!opts->dry_run) task_exec_bind(task, topo, &b, &mode);
  task_exec_export(task, topo, &b, mode, &gpus);
  if (opts->verbose || opts->dry_run)
    fprintf(stderr, "hvrun: rank %d/%d local %d/%d host %s: GPU %d NUMA %d PUs %s threads %d bind %s%s\n",
            task->rank, task->size, task->local_rank, task->local_size, task->host, b.gpu,
            b.numa >= 0 ? topo->numas[b.numa].os_index : -1, b.cpulist, b.core_count, mode,
            b.oversubscribed ? " oversubscribed" : "");
  if (opts->check) {
    int rc = self_check_run(task, topo, &b);
    hv_topo_free(topo);
    exit(rc);
  }
  hv_topo_free(topo);
  if (opts->dry_run) {
    static const char *shown[] = {"HV_", "CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER=", "OMP_NUM_THREADS=",
                                  "OPENBLAS_NUM_THREADS=", "MKL_NUM_THREADS="};
    for (char **e = environ; *e; e++)
      for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++)
        if (strncmp(*e, shown[i], strlen(shown[i])) == 0) printf("export %s\n", *e);
    printf("exec");
    for (int i = 0; i < opts->prog_argc; i++) printf(" %s", opts->prog_argv[i]);
    printf("\n");
    exit(0);
  }
  fflush(NULL);
  if (run_record_wanted()) run_record_exec(task, opts->prog_argv); /* under hvrun --restarts */
  execvp(opts->prog_argv[0], opts->prog_argv);
  int e = errno;
  hvrun_die(task, e == ENOENT ? 127 : 126, "cannot exec '%s': %s", opts->prog_argv[0], strerror(e));
}
