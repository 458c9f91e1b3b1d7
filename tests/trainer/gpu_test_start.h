/* gpu_test_start.h: how the trainer's multi-rank GPU tests start: every rank asks for
 * a GPU (1 present, 0 none, -1 broken; tests/common/gpu_present.h); the lowest answer
 * over the ranks decides, a broken rank failing everyone. Once a GPU is present
 * everywhere, selecting this rank's and moving the model to it must work. */
#ifndef HV_TESTS_GPU_TEST_START_H
#define HV_TESTS_GPU_TEST_START_H
#include <mpi.h>
#include <stdio.h>

#include "gpu_present.h"
#include "model.h"
#include "model_gpu.h"

/* 0: go on, the model is on this rank's GPU. Else the test's exit status on every
 * rank: 77 (skipped: no GPU on some rank, said by rank 0) or 1 (failed: the failing
 * rank says why). prog names the test in those lines. */
static inline int gpu_test_start(const char *prog, int rank, int local_rank, model_t *gpu) {
  char err[512] = "";
  int present = test_gpu_present(err, sizeof err), least = 0;
  MPI_Allreduce(&present, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int ok = least > 0, all = 0;
  if (ok && model_gpu_select(local_rank, err, sizeof err) < 0) ok = 0;
  if (ok && model_to_gpu(gpu) != 0) ok = 0, snprintf(err, sizeof err, "model_to_gpu: %s", gpu->err);
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all) return 0;
  const int skip = least == 0;
  if (skip && rank == 0) printf("%s: skipped (%s)\n", prog, present == 0 ? err : "no GPU on another rank");
  if (!skip && (present < 0 || !ok)) fprintf(stderr, "%s: rank %d: FAILED: %s\n", prog, rank, err);
  if (!skip && ok && rank == 0) fprintf(stderr, "%s: FAILED on another rank\n", prog);
  return skip ? 77 : 1;
}

#endif
