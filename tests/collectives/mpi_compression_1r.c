/* mpi_compression_1r.c: the single-rounding 16-bit allreduce (HV_COMPRESSION=fp16-1r,
 * bf16-1r) against its documented bound, per element (README, "Compression"):
 *
 *   |result - exact| <= (2.01 u + 2 (n - 1) 2^-24) sum_r |x_r|  +  (n + 2) t
 *                       +  2^-23 |exact|
 *
 * (u = 2^-11 fp16, 2^-8 bf16; t = 2^-25 fp16, 0 bf16; the exact sum in float64 from
 * every rank's inputs, regenerated from their seeds). Unlike the ring's n u, the
 * u term does not grow with n: run at 2, 4 and 8 ranks. Also: the batch ran as "1r"
 * (hv_comm_allreduce_count), HV_COMPRESSION=fp16-1r is read as the default, every rank
 * holds the same bits, AVERAGE divides, and a plain fp16 allreduce over the same
 * inputs at 8 ranks breaks the 1r bound (the test can tell them apart). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv.h"
#include "hv_mpi.h"
#include "test_mpi.h"
#include "test_util.h"

static int R, N;

static double input(int rank, size_t i) {
  double unit = test_unit_random(rank, i);
  /* mostly of one sign per element, so the sum is large: rounding a partial sum
   * costs its full share (what makes the ring's error grow with n) */
  double scale = (i % 3 == 0) ? 1000.0 : ((i % 3 == 1) ? 1.0 : 1e-3);
  return (unit * 0.25 + (i % 2 ? 0.75 : -0.75)) * scale;
}

/* worst error / 1r bound over the elements; *bad: elements past it */
static double measure(hv_comm_t *comm, const char *name, hv_compression_t comp, hv_op_t op, size_t *bad) {
  const size_t n = 100003;
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *lo = malloc(n * sizeof *lo);
  for (size_t i = 0; i < n; i++) x[i] = (float)input(R, i);
  hv_allreduce_opts_t opts = {1.0, 1.0, comp};
  CHECK_RC(hv_allreduce(comm, name, x, y, n, HV_FLOAT32, op, &opts));
  /* DEFAULT is HV_COMPRESSION=fp16-1r here */
  const int fp16 = comp == HV_COMPRESSION_FP16 || comp == HV_COMPRESSION_FP16_1R || comp == HV_COMPRESSION_DEFAULT;
  const double u = fp16 ? 0x1p-11 : 0x1p-8, t = fp16 ? 0x1p-25 : 0;
  double worst = 0;
  *bad = 0;
  for (size_t i = 0; i < n; i++) {
    double exact = 0, abs_sum = 0;
    for (int r = 0; r < N; r++) {
      double v = (float)input(r, i);
      exact += v;
      abs_sum += fabs(v);
    }
    double bound = (2.01 * u + 2 * (N - 1) * 0x1p-24) * abs_sum + (N + 2) * t + 0x1p-23 * fabs(exact);
    if (op == HV_AVERAGE) exact /= N, bound /= N;
    const double err = fabs((double)y[i] - exact);
    worst = fmax(worst, err / bound);
    if (!(err <= bound) && (*bad)++ < 3 && comp >= HV_COMPRESSION_FP16_1R)
      fprintf(stderr, "FAIL rank %d %s [%zu]: got %.9g exact %.9g err %.3g > bound %.3g\n", R, name, i, y[i], exact,
              err, bound);
  }
  /* the same bits on every rank */
  const hv_allreduce_opts_t plain = {1.0, 1.0, HV_COMPRESSION_NONE};
  CHECK_RC(hv_allreduce(comm, "1r.min", y, lo, n, HV_FLOAT32, HV_MIN, &plain));
  CHECK(memcmp(lo, y, n * sizeof *y) == 0, "%s: ranks hold different results", name);
  free(x), free(y), free(lo);
  return worst;
}

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &R, &N);
  setenv("HV_COMPRESSION", "fp16-1r", 1);
  hv_comm_t *comm;
  if (hv_init_from_mpi(MPI_COMM_WORLD, &comm) != HV_SUCCESS) {
    fprintf(stderr, "init: %s\n", hv_comm_last_error(NULL));
    return 1;
  }
  test_comm = comm;
  hv_compression_t dflt;
  CHECK(hv_comm_compression(comm, &dflt) == HV_SUCCESS && dflt == HV_COMPRESSION_FP16_1R);
  size_t bad;
  const struct { const char *name; hv_compression_t comp; hv_op_t op; } cases[] = {
      {"fp16-1r", HV_COMPRESSION_DEFAULT, HV_SUM},
      {"bf16-1r", HV_COMPRESSION_BF16_1R, HV_SUM},
      {"fp16-1r.avg", HV_COMPRESSION_FP16_1R, HV_AVERAGE}};
  for (size_t c = 0; c < 3; c++) {
    const double w = measure(comm, cases[c].name, cases[c].comp, cases[c].op, &bad);
    CHECK(bad == 0, "%s on %d ranks: %zu elements past the bound", cases[c].name, N, bad);
    if (R == 0) printf("%-12s n=%d: worst error / 1r bound = %.3f\n", cases[c].name, N, w);
  }
  uint64_t runs = 0;
  CHECK(hv_comm_allreduce_count(comm, "1r", &runs) == HV_SUCCESS && runs == (N > 1 ? 3u : 0u), "1r ran %llu times",
        (unsigned long long)runs);
  /* the ring's fp16 at 8 ranks: its n - 1 roundings of partial sums break the 1r bound */
  const double ring = measure(comm, "fp16.ring", HV_COMPRESSION_FP16, HV_SUM, &bad);
  if (R == 0) printf("%-12s n=%d: worst error / 1r bound = %.3f (%zu elements past it)\n", "fp16 (ring)", N, ring, bad);
  if (N >= 8) CHECK(ring > 1.0, "plain fp16 stayed within the single-rounding bound at %d ranks", N);
  hv_shutdown(comm);
  return test_mpi_finish("mpi_compression_1r", R, N);
}
