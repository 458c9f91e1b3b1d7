/* test_mpi.h: the start and the end that the multi-rank collectives tests share under
 * mpirun. Start: MPI with MPI_THREAD_MULTIPLE (hv's background thread calls MPI while
 * the test's threads submit), this process's world rank and the world size, and hv on
 * MPI_COMM_WORLD for the tests that need no settings first. End: every
 * rank's failures (check.h counts a rank's own) summed over the world, so a failure on
 * any rank fails the test on all of them with the same exit code; one line from rank 0
 * ("... 0 failures on all ranks", which tests/collectives/hier_netns.sh looks for). */
#ifndef HV_TEST_MPI_H
#define HV_TEST_MPI_H

#include <mpi.h>
#include <stdio.h>

#include "check.h"
#include "hv.h"
#include "hv_mpi.h"

static inline void test_mpi_init(int *argc, char ***argv, int *rank, int *size) {
  int provided;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

/* hv on MPI_COMM_WORLD; a failed init aborts the job with the reason (no test can run). */
static inline hv_comm_t *test_mpi_hv(int rank) {
  hv_comm_t *comm = NULL;
  if (hv_init_from_mpi(MPI_COMM_WORLD, &comm) != HV_SUCCESS) {
    fprintf(stderr, "rank %d: hv_init_from_mpi: %s\n", rank, hv_comm_last_error(NULL));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return comm;
}

/* After hv_shutdown: finalizes MPI; the exit code, 0 when no rank failed a check. */
static inline int test_mpi_finish(const char *name, int rank, int size) {
  int total = 0;
  MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%s on %d ranks: %d checks on rank 0, %d failures on all ranks\n", name, size, check_count, total);
  MPI_Finalize();
  return total ? 1 : 0;
}

#endif /* HV_TEST_MPI_H */
