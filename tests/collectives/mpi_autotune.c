/* mpi_autotune.c: HV_AUTOTUNE=1.
 *   mpi_autotune LOG.csv   (HV_AUTOTUNE=1 HV_AUTOTUNE_LOG=LOG.csv set by the caller)
 *  - steps of 64 named float32 allreduces of 16 KiB, submitted in a group, run until
 *    rank 0's log has its "chosen" row (at most 120 s): every sum is exact at every
 *    step, while the fusion threshold and cycle time change under the ranks' feet;
 *  - the log has the warm-up, fusion and cycle phases, each fusion and cycle candidate
 *    three times, positive scores, every sample at least HV_AUTOTUNE_SAMPLE_SECONDS
 *    long (0.5 unless set; the tests set 0.1), and a chosen setting among the
 *    candidates;
 *  - bad settings fail hv_init on every rank, naming the variable: HV_AUTOTUNE=2,
 *    HV_AUTOTUNE_SAMPLE_SECONDS=0 and =abc, and a log in a directory that does not
 *    exist. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune_log.h"
#include "hv.h"
#include "hv_mpi.h"
#include "test_mpi.h"
#include "test_util.h"

#define TENSORS 64
#define COUNT 4096 /* 64 x 16 KiB = 1 MiB a step: the 256 KiB threshold splits it */

static int R, N;

static void check_log(const char *log) {
  FILE *f = fopen(log, "r");
  CHECK(f != NULL, "no autotune log at %s", log);
  if (!f) return;
  char line[512];
  int warmup = 0, fusion = 0, cycle = 0, chosen = 0, bad_score = 0, short_sample = 0;
  const char *len = getenv("HV_AUTOTUNE_SAMPLE_SECONDS");
  const double sample_s = len && *len ? atof(len) : 0.5;
  size_t chosen_fusion = 0;
  double chosen_cycle = 0;
  CHECK(fgets(line, sizeof line, f) && strstr(line, "sample,phase,fusion_threshold_bytes"), "log header: %s", line);
  while (fgets(line, sizeof line, f)) {
    char phase[32];
    size_t fu = 0, sm = 0;
    double cy = 0, score = 0, seconds = 0;
    if (strncmp(line, "chosen,", 7) == 0) {
      chosen += sscanf(line, "chosen,done,%zu,%lf,%zu", &chosen_fusion, &chosen_cycle, &sm) == 3;
      continue;
    }
    int k = sscanf(line, "%*d,%31[a-z],%zu,%lf,%zu,%*d,%*f,%lf,%lf", phase, &fu, &cy, &sm, &seconds, &score);
    CHECK(k == 6, "log row not understood: %s", line);
    if (k != 6) continue;
    short_sample += seconds < sample_s;
    warmup += !strcmp(phase, "warmup");
    fusion += !strcmp(phase, "fusion");
    cycle += !strcmp(phase, "cycle");
    bad_score += !(score > 0);
  }
  fclose(f);
  CHECK(warmup == 2 && fusion == 18 && cycle == 15 && chosen == 1 && bad_score == 0 && short_sample == 0,
        "log: %d warm-up, %d fusion, %d cycle samples, %d chosen rows, %d scores <= 0, %d samples under %g s "
        "(expected 2, 18, 15, 1, 0, 0)",
        warmup, fusion, cycle, chosen, bad_score, short_sample, sample_s);
  const size_t fusions[] = {256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 128u << 20};
  const double cycles[] = {0.1, 0.5, 1.0, 2.5, 5.0};
  int fusion_ok = 0, cycle_ok = 0;
  for (int i = 0; i < 6; i++) fusion_ok |= chosen_fusion == fusions[i];
  for (int i = 0; i < 5; i++) cycle_ok |= chosen_cycle == cycles[i];
  CHECK(fusion_ok && cycle_ok, "chosen fusion %zu / cycle %g is not a candidate", chosen_fusion, chosen_cycle);
  printf("mpi_autotune: chose HV_FUSION_THRESHOLD=%zu HV_CYCLE_TIME=%g\n", chosen_fusion, chosen_cycle);
}

static void expect_init_fails(const char *var, const char *value, const char *text) {
  const char *old = getenv(var);
  char *saved = old ? strdup(old) : NULL;
  setenv(var, value, 1);
  hv_comm_t *c = NULL;
  hv_result_t rc = hv_init_from_mpi(MPI_COMM_WORLD, &c);
  CHECK(rc != HV_SUCCESS && c == NULL, "rank %d: hv_init with %s='%s' succeeded", R, var, value);
  if (R == 0)
    CHECK(strstr(hv_comm_last_error(NULL), text) != NULL, "rank 0: %s='%s': '%s' should name '%s'", var, value,
          hv_comm_last_error(NULL), text);
  if (rc == HV_SUCCESS) hv_shutdown(c);
  if (saved) setenv(var, saved, 1), free(saved);
  else unsetenv(var);
}

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &R, &N);
  const char *log = argc > 1 ? argv[1] : getenv("HV_AUTOTUNE_LOG");
  if (!log || !getenv("HV_AUTOTUNE")) {
    if (R == 0) fprintf(stderr, "usage: HV_AUTOTUNE=1 HV_AUTOTUNE_LOG=LOG.csv mpirun ... mpi_autotune LOG.csv\n");
    MPI_Finalize();
    return 2;
  }
  hv_comm_t *comm = test_mpi_hv(R);
  float *bufs = malloc(sizeof(float) * TENSORS * COUNT);
  hv_handle_t h[TENSORS];
  long step = 0, wrong = 0;
  const double t0 = MPI_Wtime();
  for (; MPI_Wtime() - t0 < 120; step++) {
    hv_group_start(comm);
    for (int k = 0; k < TENSORS; k++) {
      char name[32];
      snprintf(name, sizeof name, "grad/%d", k);
      for (int i = 0; i < COUNT; i++) bufs[k * COUNT + i] = (float)((R + 1) * (k + 1) + (step % 7));
      CHECK_RC(hv_allreduce_async(comm, name, bufs + k * COUNT, bufs + k * COUNT, COUNT, HV_FLOAT32, HV_SUM, NULL, &h[k]));
    }
    hv_group_end(comm);
    CHECK_RC(hv_wait_all(h, TENSORS));
    for (int k = 0; k < TENSORS; k++) {
      const float want = (float)((k + 1) * N * (N + 1) / 2 + N * (step % 7));
      if (bufs[k * COUNT] != want || bufs[k * COUNT + COUNT - 1] != want) wrong++;
    }
    if (step % 50 == 49 && autotune_log_chosen(log, R)) break;
  }
  CHECK(wrong == 0, "rank %d: %ld wrong sums in %ld steps", R, wrong, step);
  CHECK(autotune_log_chosen(log, R), "rank %d: no choice after %.0f s (%ld steps)", R, MPI_Wtime() - t0, step);
  CHECK_RC(hv_shutdown(comm));
  if (R == 0) check_log(log);

  expect_init_fails("HV_AUTOTUNE", "2", "HV_AUTOTUNE");
  expect_init_fails("HV_AUTOTUNE_SAMPLE_SECONDS", "0", "HV_AUTOTUNE_SAMPLE_SECONDS");
  expect_init_fails("HV_AUTOTUNE_SAMPLE_SECONDS", "abc", "HV_AUTOTUNE_SAMPLE_SECONDS");
  expect_init_fails("HV_AUTOTUNE_LOG", "/nonexistent-dir/autotune.csv", "HV_AUTOTUNE_LOG");

  free(bufs);
  int total = 0;
  MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (R == 0) printf("mpi_autotune on %d ranks: %ld steps, %d checks, %d failures on all ranks\n", N, step, check_count, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
