/* main.c: hvrun's command line. Options come before the program; the first word that
 * is not an option (or the word after "--") is the program, and it and everything
 * after it are passed on untouched. The mode follows from the options and the
 * environment: --topology prints the map; --analyze DIR and --status read the flight
 * recorder (doctor_*.c); -np N is standalone (mpirun); a task of
 * srun / mpirun is wrapped (bind, export, exec); anything else is an error that
 * says which of these the user probably meant. Usage errors exit 2. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvrun.h"

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer: hwloc's PCI plugin (libpciaccess) leaks during hwloc_topology_load,
 * and Open MPI during init / finalize (--check); not ours, and not fixable here. The plugin has no frame pointers, so the slow
 * unwinder is needed for the stack to reach hwloc_topology_load and match. */
const char *__asan_default_options(void);
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }
const char *__lsan_default_suppressions(void) {
  return "leak:hwloc_topology_load\nleak:MPI_Init_thread\nleak:MPI_Init\nleak:ompi_mpi_finalize\n"
         "leak:libopen-pal.so\nleak:libopen-rte.so\nleak:event_base_loop\nleak:libpmix.so\n";
}
#endif

static const char *hvrun_usage_text =
    "usage: hvrun [options] PROGRAM [ARGS...]\n"
    "\n"
    "Under srun or mpirun (one hvrun per task):\n"
    "  srun --ntasks-per-node=4 hvrun workloads/cifar_ddp --epochs 30\n"
    "  binds the task to its GPU and the cores near it, exports HV_RANK, HV_SIZE,\n"
    "  HV_LOCAL_RANK, HV_LOCAL_SIZE, HV_NODE_INDEX, HV_NUM_NODES, HV_CPUS, HV_NUMA_NODE,\n"
    "  HV_GPU and CUDA_VISIBLE_DEVICES (with GPUs), OMP_NUM_THREADS, OPENBLAS_NUM_THREADS\n"
    "  and MKL_NUM_THREADS (= cores given, unless already set), then execs PROGRAM.\n"
    "  Slurm must start tasks with PMIx: MpiDefault=pmix, srun --mpi=pmix or\n"
    "  SLURM_MPI_TYPE=pmix.\n"
    "\n"
    "On one machine, or on hosts you name (execs Open MPI's mpirun):\n"
    "  hvrun -np 4 workloads/cifar_ddp --epochs 30\n"
    "  -np, -n N            number of ranks (at least 1)\n"
    "  -H, --host LIST      hosts with slots: host1:4,host2:4\n"
    "  --hostfile FILE      an Open MPI hostfile (not with -H)\n"
    "  --oversubscribe      allow more ranks than slots (added by itself on one\n"
    "                       machine without -H/--hostfile when ranks > cores)\n"
    "  --restarts N         keep the job going: when a rank dies or a node is lost,\n"
    "                       relaunch it (on the hosts that remain) up to N times; the\n"
    "                       program finds HV_RESTART (0, 1, ...) in its environment\n"
    "  --min-np M           with --restarts: never relaunch on fewer than M ranks\n"
    "  --dry-run            print the mpirun command (or, in a task, the binding and\n"
    "                       the exec) instead of running it\n"
    "\n"
    "Other modes:\n"
    "  --topology [--json]  print this node's map (NUMA nodes, cores, caches, GPUs, NICs)\n"
    "                       and the binding of each local rank (of -np N ranks, or of\n"
    "                       the task's local size under a launcher)\n"
    "  --check              under srun/mpirun (or with -np N): allreduce self-test across\n"
    "                       all ranks; rank 0 prints one line per node\n"
    "  --analyze DIR        which rank is hung, and why: reads the flight-recorder dumps\n"
    "                       (DIR/hv-flight.<job>.rank<W>.json) and prints verdicts, then\n"
    "                       the evidence; --job ID picks one job's dumps\n"
    "  --status [--job ID]  the same, live: asks each rank of a running job on this\n"
    "                       machine (its status socket) where it is; one line per rank,\n"
    "                       then the verdicts (job: the one running, or --job ID)\n"
    "  --status --slurm-job ID[.STEP]\n"
    "                       the same for a Slurm step of yours, on all its nodes (srun)\n"
    "  --raw                with --status: the ranks' documents, one per line (JSON)\n"
    "  -v, --verbose        print each task's binding (and the mpirun command)\n"
    "  -h, --help           this text\n"
    "  --version            hvrun's version\n"
    "\n"
    "Environment: HV_BIND=auto|cores|numa|none (auto keeps a binding the launcher\n"
    "already made), HV_MPIRUN (mpirun to use), HV_TOPOLOGY_SOURCE (a hwloc synthetic\n"
    "description or xml:FILE instead of this machine, for testing; disables binding).\n"
    "Put <build>/bin or <prefix>/bin on PATH; a relative PROGRAM is relative to the cwd.\n";

static void hvrun_vmsg(const hvrun_task_t *t, const char *kind, const char *fmt, va_list ap) {
  char msg[2048];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  if (t && t->size > 0)
    fprintf(stderr, "hvrun: %srank %d/%d (local %d/%d) on host %s: %s\n", kind, t->rank, t->size,
            t->local_rank, t->local_size, t->host, msg);
  else
    fprintf(stderr, "hvrun: %s%s\n", kind, msg);
}

void hvrun_die(const hvrun_task_t *t, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hvrun_vmsg(t, "error: ", fmt, ap);
  va_end(ap);
  exit(code);
}

void hvrun_warn(const hvrun_task_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hvrun_vmsg(t, "warning: ", fmt, ap);
  va_end(ap);
}

static int hvrun_parse_np(const char *s) {
  char *end;
  errno = 0;
  long v = s ? strtol(s, &end, 10) : 0;
  if (!s || errno || *end || end == s)
    hvrun_die(NULL, 2, "-np needs a number of ranks, got '%s'", s ? s : "(nothing)");
  if (v < 1) hvrun_die(NULL, 2, "-np %ld: the number of ranks must be at least 1", v);
  if (v > 1000000) hvrun_die(NULL, 2, "-np %ld: too many ranks", v);
  return (int)v;
}

static int hvrun_parse_count(const char *opt, const char *s, long least) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < least || v > 1000000)
    hvrun_die(NULL, 2, "%s needs a whole number of at least %ld, got '%s'", opt, least, s);
  return (int)v;
}

static const char *hvrun_value(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) hvrun_die(NULL, 2, "option %s needs a value (see hvrun --help)", argv[*i]);
  return argv[++*i];
}

static void hvrun_parse(int argc, char **argv, hvrun_opts_t *o) {
  int json = 0;
  memset(o, 0, sizeof(*o));
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (a[0] != '-' || a[1] == '\0') break; /* the program */
    if (!strcmp(a, "-np") || !strcmp(a, "-n") || !strcmp(a, "--np")) o->np = hvrun_parse_np(hvrun_value(argc, argv, &i));
    else if (!strncmp(a, "-np=", 4) || !strncmp(a, "--np=", 5)) o->np = hvrun_parse_np(strchr(a, '=') + 1);
    else if (!strcmp(a, "-H") || !strcmp(a, "--host")) o->hosts = hvrun_value(argc, argv, &i);
    else if (!strcmp(a, "--hostfile")) o->hostfile = hvrun_value(argc, argv, &i);
    else if (!strcmp(a, "--oversubscribe")) o->oversubscribe = 1;
    else if (!strcmp(a, "--restarts")) o->restarts = hvrun_parse_count(a, hvrun_value(argc, argv, &i), 0);
    else if (!strcmp(a, "--min-np")) o->min_np = hvrun_parse_count(a, hvrun_value(argc, argv, &i), 1);
    else if (!strcmp(a, "--dry-run")) o->dry_run = 1;
    else if (!strcmp(a, "--topology")) o->topology = 1;
    else if (!strcmp(a, "--json")) json = 1;
    else if (!strcmp(a, "--check")) o->check = 1;
    else if (!strcmp(a, "--analyze")) o->analyze = hvrun_value(argc, argv, &i);
    else if (!strcmp(a, "--status")) o->status = 1;
    else if (!strcmp(a, "--job")) o->job = hvrun_value(argc, argv, &i);
    else if (!strcmp(a, "--slurm-job")) o->slurm_job = hvrun_value(argc, argv, &i);
    else if (!strcmp(a, "--local")) o->status_local = 1;
    else if (!strcmp(a, "--raw")) o->status_raw = 1;
    else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o->verbose = 1;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(hvrun_usage_text, stdout);
      exit(0);
    } else if (!strcmp(a, "--version")) {
      printf("hvrun (hv) %s\n", HVRUN_VERSION);
      exit(0);
    } else
      hvrun_die(NULL, 2, "unknown option '%s' (see hvrun --help; options go before the program)", a);
  }
  if (i < argc) {
    o->prog_argv = &argv[i];
    o->prog_argc = argc - i;
  }
  if (json && !o->topology) hvrun_die(NULL, 2, "--json goes with --topology");
  if (json) o->topology = 2;
}

/* --analyze and --status: read-only modes that take nothing else. */
static void hvrun_validate_doctor(const hvrun_opts_t *o) {
  const char *mode = o->analyze ? "--analyze" : "--status";
  if (o->analyze && o->status) hvrun_die(NULL, 2, "conflicting options: --analyze and --status; run them one at a time");
  if (o->prog_argv) hvrun_die(NULL, 2, "%s takes no program (got '%s')", mode, o->prog_argv[0]);
  if (o->np || o->hosts || o->hostfile || o->restarts || o->check || o->topology || o->dry_run)
    hvrun_die(NULL, 2, "%s goes with no launch option (-np, -H, --hostfile, --restarts, --check, --topology, --dry-run)",
              mode);
  if (o->analyze && (o->slurm_job || o->status_local || o->status_raw))
    hvrun_die(NULL, 2, "%s goes with --status, not --analyze", o->slurm_job ? "--slurm-job" : o->status_local ? "--local" : "--raw");
  if (o->slurm_job && (o->job || o->status_local || o->status_raw))
    hvrun_die(NULL, 2, "--slurm-job does not go with %s (it names the job, and asks every node itself)",
              o->job ? "--job" : o->status_local ? "--local" : "--raw");
}

/* Options that cannot go together, and what is missing; before anything runs. */
static void hvrun_validate(const hvrun_opts_t *o, int under_launcher) {
  if (o->hosts && o->hostfile) hvrun_die(NULL, 2, "conflicting options: -H and --hostfile; give one host list");
  if (o->topology && o->check) hvrun_die(NULL, 2, "conflicting options: --topology and --check; run them one at a time");
  if ((o->topology || o->check) && o->prog_argv)
    hvrun_die(NULL, 2, "%s takes no program (got '%s')", o->topology ? "--topology" : "--check", o->prog_argv[0]);
  if (o->topology) return;
  if (!o->np && (o->hosts || o->hostfile || o->oversubscribe))
    hvrun_die(NULL, 2, "-np N is missing: %s needs the number of ranks",
              o->hosts ? "-H" : o->hostfile ? "--hostfile" : "--oversubscribe");
  if ((o->restarts || o->min_np) && !o->np)
    hvrun_die(NULL, 2, "%s needs -np N: hvrun must launch the job itself to relaunch it (inside a Slurm "
                       "allocation: `hvrun --restarts N -np P prog`, not under srun)",
              o->restarts ? "--restarts" : "--min-np");
  if (o->min_np && !o->restarts) hvrun_die(NULL, 2, "--min-np goes with --restarts N");
  if (o->restarts && o->check) hvrun_die(NULL, 2, "--restarts does not go with --check");
  if (o->np && under_launcher)
    hvrun_die(NULL, 2, "conflicting: -np %d inside a task of srun/mpirun would start one mpirun per task; "
                       "drop -np (the launcher already started the ranks)", o->np);
  if (!o->prog_argv && !o->check)
    hvrun_die(NULL, 2, "no program given (usage: hvrun [options] PROGRAM [ARGS...]; see hvrun --help)");
  if (!o->np && !under_launcher)
    hvrun_die(NULL, 2, "not started by srun or mpirun, and -np N is missing: run `hvrun -np N %s` on this "
                       "machine, or `srun --ntasks-per-node=N hvrun %s` on a Slurm cluster",
              o->check ? "--check" : o->prog_argv[0], o->check ? "--check" : o->prog_argv[0]);
}

static int hvrun_topology(const hvrun_opts_t *o, int under_launcher) {
  char err[512];
  hv_topo_t *t = hv_topo_discover(getenv("HV_TOPOLOGY_SOURCE"), err, sizeof(err));
  if (!t) hvrun_die(NULL, 1, "topology discovery failed: %s", err);
  int local_size = o->np;
  hvrun_task_t task;
  if (!local_size && under_launcher && launch_env_detect(&task, err, sizeof(err)) == 0) local_size = task.local_size;
  if (!local_size) local_size = t->ngpus > 0 ? t->ngpus : 1;
  if (o->topology == 2) hv_topo_map_write_json(stdout, t, local_size);
  else hv_topo_map_write_text(stdout, t, local_size);
  hv_topo_free(t);
  return 0;
}

int main(int argc, char **argv) {
  hvrun_opts_t o;
  if (argc < 2) {
    fputs(hvrun_usage_text, stderr);
    return 2;
  }
  hvrun_parse(argc, argv, &o);
  if (o.analyze || o.status) {
    hvrun_validate_doctor(&o);
    return o.analyze ? doctor_analyze_run(o.analyze, o.job) : doctor_status_run(o.job, o.slurm_job, o.status_raw);
  }
  if (o.job || o.slurm_job || o.status_local || o.status_raw)
    hvrun_die(NULL, 2, "%s goes with --status%s", o.job ? "--job" : o.slurm_job ? "--slurm-job" : o.status_local ? "--local" : "--raw",
              o.job ? " or --analyze" : "");
  int under = launch_env_present();
  hvrun_validate(&o, under);
  if (o.topology) return hvrun_topology(&o, under);
  if (o.np && o.restarts && !o.dry_run) return restart_supervise(&o);
  if (o.np) mpirun_cmd_run(&o);
  hvrun_task_t task;
  char err[1024];
  if (launch_env_detect(&task, err, sizeof(err)) != 0) {
    const char *r = getenv("SLURM_PROCID") ? getenv("SLURM_PROCID") : getenv("OMPI_COMM_WORLD_RANK");
    hvrun_task_t who = {0};
    snprintf(who.host, sizeof(who.host), "%s", task.host);
    hvrun_die(NULL, 1, "rank %s on host %s cannot start: %s", r ? r : "?", who.host, err);
  }
  task_exec_run(&o, &task);
  return 1;
}
