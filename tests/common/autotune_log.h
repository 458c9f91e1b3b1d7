/* autotune_log.h: whether HV_AUTOTUNE=1 has made its choice, for the programs that
 * run steps until it has (tests/collectives/mpi_autotune.c, tests/perf/bench_autotune.c):
 * the tuner (the world's rank 0) appends a "chosen,done,..." row to its HV_AUTOTUNE_LOG
 * when it settles, so rank 0 looks for that row and broadcasts the answer, and every
 * rank leaves its loop at the same step. */
#ifndef HV_TESTS_AUTOTUNE_LOG_H
#define HV_TESTS_AUTOTUNE_LOG_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* 1 once rank 0's log has the chosen row, the same answer on every rank of
 * MPI_COMM_WORLD (collective); 0 while it has not, or when log is NULL. */
static inline int autotune_log_chosen(const char *log, int rank) {
  int done = 0;
  if (rank == 0 && log) {
    FILE *f = fopen(log, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
      if (strncmp(line, "chosen,", 7) == 0) done = 1;
    if (f) fclose(f);
  }
  MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return done;
}

#endif /* HV_TESTS_AUTOTUNE_LOG_H */
