/* launch_env.c: which launcher started this task, and the task's place in the job.
 *
 * Open MPI (mpirun) is checked first: a mpirun inside a Slurm allocation passes the
 * allocation's SLURM_* variables to its children, but OMPI_COMM_WORLD_* are the truth.
 * Under srun, the local size is the length of SLURM_GTIDS (the global ranks on this
 * node), which needs no exchange and is right for uneven layouts too. Debian's Open
 * MPI can only be direct-launched by srun through PMIx, so a Slurm task without
 * PMIX_RANK is refused here with the fixes, instead of failing inside MPI_Init.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvrun.h"

const char *launch_env_name(hvrun_launcher_t l) {
  switch (l) {
  case HVRUN_LAUNCHER_SLURM: return "slurm";
  case HVRUN_LAUNCHER_OPENMPI: return "openmpi";
  default: return "none";
  }
}

/* Parses env var name as a non-negative int: 0, or -1 when unset/garbage. */
static int launch_env_int(const char *name, int *value) {
  const char *s = getenv(name);
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 0 || v > INT_MAX) return -1;
  *value = (int)v;
  return 0;
}

/* A Slurm job step's task: srun sets SLURM_PROCID, SLURM_LOCALID and a step id.
 * The batch script of sbatch is not a task (its step id is the batch step). */
static int launch_env_is_slurm_task(void) {
  const char *step = getenv("SLURM_STEP_ID");
  if (!step) step = getenv("SLURM_STEPID");
  if (!getenv("SLURM_PROCID") || !getenv("SLURM_LOCALID") || !step) return 0;
  /* 4294967294: SLURM_BATCH_SCRIPT, 4294967291: SLURM_INTERACTIVE_STEP */
  return strcmp(step, "4294967294") != 0 && strcmp(step, "batch") != 0 &&
         strcmp(step, "4294967291") != 0 && strcmp(step, "interactive") != 0;
}

int launch_env_present(void) {
  return getenv("OMPI_COMM_WORLD_RANK") != NULL || launch_env_is_slurm_task();
}

static int launch_env_count_list(const char *s) {
  int n = 0;
  for (const char *p = s; p && *p; p++)
    if (*p == ',') n++;
  return s && *s ? n + 1 : -1;
}

static int launch_env_openmpi(hvrun_task_t *t, char *err, size_t errlen) {
  static const char *names[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
  int *dst[] = {&t->rank, &t->size, &t->local_rank, &t->local_size};
  for (int i = 0; i < 4; i++)
    if (launch_env_int(names[i], dst[i]) != 0) {
      snprintf(err, errlen, "started by Open MPI but %s is missing or not a number ('%s')", names[i],
               getenv(names[i]) ? getenv(names[i]) : "");
      return -1;
    }
  t->launcher = HVRUN_LAUNCHER_OPENMPI;
  return 0;
}

static int launch_env_slurm(hvrun_task_t *t, char *err, size_t errlen) {
  if (launch_env_int("SLURM_PROCID", &t->rank) != 0 || launch_env_int("SLURM_LOCALID", &t->local_rank) != 0) {
    snprintf(err, errlen, "SLURM_PROCID or SLURM_LOCALID is not a number");
    return -1;
  }
  if (!getenv("PMIX_RANK")) {
    const char *type = getenv("SLURM_MPI_TYPE");
    snprintf(err, errlen,
             "srun started this task without PMIx (SLURM_MPI_TYPE=%s, no PMIX_RANK), so Open MPI "
             "cannot start in it. Fix: `srun --mpi=pmix ...`, or `export SLURM_MPI_TYPE=pmix` "
             "before srun, or MpiDefault=pmix in slurm.conf",
             type ? type : "unset");
    return -1;
  }
  int pmix_rank;
  if (launch_env_int("PMIX_RANK", &pmix_rank) != 0 || pmix_rank != t->rank) {
    snprintf(err, errlen, "PMIX_RANK=%s disagrees with SLURM_PROCID=%d: the environment mixes two launches",
             getenv("PMIX_RANK"), t->rank);
    return -1;
  }
  if (launch_env_int("SLURM_STEP_NUM_TASKS", &t->size) != 0 && launch_env_int("SLURM_NTASKS", &t->size) != 0 &&
      launch_env_int("SLURM_NPROCS", &t->size) != 0) {
    snprintf(err, errlen, "srun set none of SLURM_STEP_NUM_TASKS / SLURM_NTASKS: cannot tell the job size");
    return -1;
  }
  t->local_size = launch_env_count_list(getenv("SLURM_GTIDS"));
  if (t->local_size < 1 && launch_env_int("SLURM_NTASKS_PER_NODE", &t->local_size) != 0) {
    snprintf(err, errlen, "srun set neither SLURM_GTIDS nor SLURM_NTASKS_PER_NODE: cannot tell the local size");
    return -1;
  }
  if (launch_env_int("SLURM_NODEID", &t->node_index) != 0) t->node_index = -1;
  if (launch_env_int("SLURM_STEP_NUM_NODES", &t->num_nodes) != 0 && launch_env_int("SLURM_NNODES", &t->num_nodes) != 0)
    t->num_nodes = -1;
  t->launcher = HVRUN_LAUNCHER_SLURM;
  return 0;
}

int launch_env_detect(hvrun_task_t *t, char *err, size_t errlen) {
  memset(t, 0, sizeof(*t));
  t->node_index = t->num_nodes = -1;
  if (gethostname(t->host, sizeof(t->host) - 1) != 0) snprintf(t->host, sizeof(t->host), "?");
  int rc;
  if (getenv("OMPI_COMM_WORLD_RANK")) rc = launch_env_openmpi(t, err, errlen);
  else if (launch_env_is_slurm_task()) rc = launch_env_slurm(t, err, errlen);
  else {
    snprintf(err, errlen, "not started by srun or mpirun (no SLURM_PROCID/OMPI_COMM_WORLD_RANK)");
    return -1;
  }
  if (rc != 0) return rc;
  if (t->size < 1 || t->rank >= t->size || t->local_size < 1 || t->local_rank >= t->local_size ||
      t->local_size > t->size) {
    snprintf(err, errlen, "inconsistent launcher variables: rank %d of %d, local rank %d of %d",
             t->rank, t->size, t->local_rank, t->local_size);
    return -1;
  }
  return 0;
}
