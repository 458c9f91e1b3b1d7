/* fault_record.c: tells `hvrun --restarts` (tools/hvrun/restart.c) why this rank's
 * engine stopped, when hvrun supervises the job (HV_RUN_DIR and HV_RESTART set): one
 * line "KIND SUBJECT" in $HV_RUN_DIR/attempt-$HV_RESTART/rank-R.fault, KIND being lost,
 * stalled or timeout and SUBJECT the rank at fault (-1 when unknown). A program that
 * exits with an error of its own leaves none, and is not relaunched: the line is what
 * separates "a peer is gone" from "the program failed". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hv_internal.h"

/* The rank in MPI_COMM_WORLD (hvrun's numbering) of `rank` of comm->mpi. */
static int world_rank(const hv_comm_t *comm, int rank) {
  MPI_Group mine, world;
  int out = -1;
  if (MPI_Comm_group(comm->mpi, &mine) != MPI_SUCCESS) return -1;
  if (MPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS) {
    if (MPI_Group_translate_ranks(mine, 1, &rank, world, &out) != MPI_SUCCESS || out == MPI_UNDEFINED) out = -1;
    MPI_Group_free(&world);
  }
  MPI_Group_free(&mine);
  return out;
}

void hv__fault_record(const hv_comm_t *comm, const char *kind, int subject) {
  const char *dir = getenv("HV_RUN_DIR"), *attempt = getenv("HV_RESTART");
  if (!dir || !*dir || !attempt || !*attempt) return;
  char path[PATH_MAX], tmp[PATH_MAX + 8], line[64];
  int rank = world_rank(comm, comm->rank);
  if (rank < 0) return;
  if ((size_t)snprintf(path, sizeof path, "%s/attempt-%s/rank-%d.fault", dir, attempt, rank) >= sizeof path) return;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int len = snprintf(line, sizeof line, "%s %d\n", kind, subject >= 0 ? world_rank(comm, subject) : -1);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return; /* not shared with this node: hvrun probes the hosts instead */
  int ok = write(fd, line, (size_t)len) == len;
  if (close(fd) != 0) ok = 0;
  if (ok) rename(tmp, path);
  else unlink(tmp);
}
