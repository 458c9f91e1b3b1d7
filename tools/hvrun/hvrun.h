/* hvrun.h: the pieces of hvrun, the per-task wrapper (under srun or mpirun) and
 * local launcher (hvrun -np N prog: execs Open MPI's mpirun).
 *
 *   main.c        options, mode choice, --help, the one error helper
 *   launch_env.c  which launcher started this task, and its rank / local rank / size
 *   task_exec.c   binding (topology/ policy), HV_* / thread-count env, exec
 *   gpu_select.c  the task's GPU, among those a scheduler may already have chosen
 *   mpirun_cmd.c  the mpirun command line of standalone mode
 *   self_check.c  --check: an allreduce self-test through libhvcoll, one line per node
 *   restart.c     --restarts N: runs mpirun, and relaunches the job on the survivors
 *   run_record.c  each task's start / end records in the job's run directory (restarts)
 *   doctor_*.c    --analyze DIR and --status: which rank is hung, and why, from the
 *                 flight recorder's documents (doctor.h; FLIGHT_RECORDER.md)
 */
#ifndef HVRUN_H
#define HVRUN_H

#include <stddef.h>

#include "hv_topo.h"

typedef enum {
  HVRUN_LAUNCHER_NONE = 0,
  HVRUN_LAUNCHER_SLURM,   /* srun (with PMIx) */
  HVRUN_LAUNCHER_OPENMPI, /* Open MPI's mpirun / orted */
} hvrun_launcher_t;

/* Where this task sits in the job, as the launcher told it. */
typedef struct hvrun_task {
  hvrun_launcher_t launcher;
  int rank, size;
  int local_rank, local_size;
  int node_index, num_nodes; /* -1 when the launcher does not say */
  char host[64];
} hvrun_task_t;

typedef struct hvrun_opts {
  int np;               /* -np N; 0 when not given */
  const char *hosts;    /* -H host1:slots,host2:slots */
  const char *hostfile; /* --hostfile F */
  int oversubscribe;
  int dry_run;
  int topology; /* --topology; 2 with --json */
  int check;
  int verbose;
  int restarts; /* --restarts N: relaunches after a lost rank or node (0: exec mpirun) */
  int min_np;   /* --min-np M: never relaunch on fewer ranks */
  const char *analyze;   /* --analyze DIR */
  int status;             /* --status */
  const char *job;        /* --job ID (with --status or --analyze) */
  const char *slurm_job;  /* --slurm-job ID[.STEP] (with --status) */
  int status_local;       /* --local: this node only (what srun runs on each node) */
  int status_raw;         /* --raw: print the documents, one per line */
  char **prog_argv; /* the program and its arguments (NULL-terminated); NULL if none */
  int prog_argc;
} hvrun_opts_t;

/* Prints "hvrun: <message>" (plus the task's rank and host when task is not NULL)
 * to stderr and exits with code. The only exit path for errors. */
void hvrun_die(const hvrun_task_t *task, int code, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
void hvrun_warn(const hvrun_task_t *task, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 when this process was started as a task by srun or mpirun (task-level variables
 * present), else 0. */
int launch_env_present(void);
/* Fills task from the launcher's variables. Returns 0, or -1 with a message in err
 * that names the cause and the fix (e.g. srun without PMIx). */
int launch_env_detect(hvrun_task_t *task, char *err, size_t errlen);
const char *launch_env_name(hvrun_launcher_t launcher);

/* Finds prog the way execvp would (PATH when it has no '/'), and checks it is a
 * regular executable file. Writes its path (absolute when make_absolute) to out.
 * Returns 0, 126 (found, not executable) or 127 (not found), with errno text in err. */
int task_exec_resolve(const char *prog, int make_absolute, char *out, size_t outlen, char *err,
                      size_t errlen);
/* Task mode: binds, exports the environment, then execs opts->prog_argv (or runs the
 * self-check with --check). Does not return. */
void task_exec_run(const hvrun_opts_t *opts, const hvrun_task_t *task);

#define HVRUN_MAX_GPUS 64

/* The GPUs a scheduler gave this task (CUDA_VISIBLE_DEVICES), and their machine indices. */
typedef struct gpu_select {
  int nvis;                         /* entries of CUDA_VISIBLE_DEVICES, 0 when unset */
  int narrowed;                     /* 1 when topo->gpus was narrowed to them */
  char tokens[HVRUN_MAX_GPUS][32];  /* the entries as given */
  int phys[HVRUN_MAX_GPUS];         /* their indices among the machine's GPUs (PCI order) */
} gpu_select_t;

/* Narrows topo->gpus to the scheduler's GPUs when their machine indices are known. */
void gpu_select_narrow(hv_topo_t *topo, gpu_select_t *sel);
/* Exports HV_GPU, CUDA_VISIBLE_DEVICES (and CUDA_DEVICE_ORDER) for the binding. */
void gpu_select_export(const hv_topo_t *topo, const gpu_select_t *sel, const hv_topo_binding_t *b,
                       int local_rank);

/* Standalone mode: builds and execs (or with --dry-run prints) the mpirun command
 * that runs this hvrun binary on every rank. Does not return. */
void mpirun_cmd_run(const hvrun_opts_t *opts);
/* The mpirun command for np ranks on hosts ("h1:2,h2:2"; NULL: the user's -H or
 * --hostfile), running `hvrun --check` when extra is "--check"; NULL-terminated. */
char **mpirun_cmd_build(const hvrun_opts_t *opts, int np, const char *hosts, const char *extra,
                        char *mpirun_path, size_t path_len);
void mpirun_cmd_print(char **argv);
void mpirun_cmd_free(char **argv);

/* --restarts: runs the job, and after a lost rank or node relaunches it on what
 * remains. Returns the exit code for hvrun. */
int restart_supervise(const hvrun_opts_t *opts);

/* Restart records (HV_RUN_DIR and HV_RESTART exported by restart_supervise): the
 * task writes "start" before the program runs and "end" when it ends; the program
 * runs as a child, so that a task killed with it still leaves its verdict. */
int run_record_wanted(void);
void run_record_exec(const hvrun_task_t *task, char **argv) __attribute__((noreturn));

/* --check under a launcher: hv_init, exact allreduce, consistency of hv's view with
 * the launcher's, rank 0 prints one line per node. Returns the exit code. */
int self_check_run(const hvrun_task_t *task, const hv_topo_t *topo, const hv_topo_binding_t *binding);

/* --analyze DIR: reads the dumps (DIR/hv-flight.<job>.rank<W>.json, only job's when not
 * NULL), prints the verdicts then the evidence. Returns 0; bad input exits 1. */
int doctor_analyze_run(const char *dir, const char *job);
/* --status: asks the ranks of a running job (job, or the one running here; or a Slurm
 * step through srun when slurm_job), prints one line per rank then the verdicts; with
 * raw, prints the documents one per line instead (for the Slurm merge). Returns 0;
 * bad input exits 1. */
int doctor_status_run(const char *job, const char *slurm_job, int raw);

#endif /* HVRUN_H */
