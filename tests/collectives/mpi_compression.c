/* mpi_compression.c: fp16/bf16 wire compression of float32 allreduce against its
 * documented error bound, per element, for every algorithm (README, "Compression"):
 *
 *   |result - exact| <= n * u * sum_r |x_r|  +  n * t  +  2^-23 * |exact|
 *
 * with n ranks, u the unit roundoff of the wire format (2^-11 fp16, 2^-8 bf16), t half
 * the smallest subnormal spacing (2^-25 fp16, 0 in practice for bf16), the exact sum
 * computed in float64 from every rank's inputs (regenerated from their seeds). The
 * bound holds because each input is rounded once when packed and each partial sum
 * once per hop, the additions themselves being done in float32; n - 1 additions lie
 * on any element's path in the ring, hierarchical and recursive-doubling algorithms.
 * Also: a sum past the fp16 range gives inf, as fp16 would, and prescaling by 1/n
 * with postscaling by n (the documented remedy) gives the right finite value. */
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
  double scale = (i % 3 == 0) ? 1000.0 : ((i % 3 == 1) ? 1.0 : 1e-3);
  return unit * scale;
}

static void check_bound(hv_comm_t *comm, const char *algo, hv_compression_t comp) {
  const size_t n = 100003;
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  for (size_t i = 0; i < n; i++) x[i] = (float)input(R, i);
  hv_allreduce_opts_t opts = {1.0, 1.0, comp};
  char name[64];
  snprintf(name, sizeof name, "comp.%s.%d", algo, comp);
  CHECK_RC(hv_allreduce(comm, name, x, y, n, HV_FLOAT32, HV_SUM, &opts));
  double u = comp == HV_COMPRESSION_FP16 ? 0x1p-11 : 0x1p-8;
  double t = comp == HV_COMPRESSION_FP16 ? 0x1p-25 : 0;
  double worst = 0;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double exact = 0, abs_sum = 0;
    for (int r = 0; r < N; r++) {
      double v = (float)input(r, i);
      exact += v;
      abs_sum += fabs(v);
    }
    double bound = N * u * abs_sum + N * t + 0x1p-23 * fabs(exact);
    double err = fabs((double)y[i] - exact);
    if (err / bound > worst) worst = err / bound;
    if (!(err <= bound) && bad++ < 5)
      fprintf(stderr, "FAIL rank %d %s comp %d [%zu]: got %.9g exact %.9g err %.3g > bound %.3g\n", R, algo, comp, i,
              y[i], exact, err, bound);
  }
  CHECK(bad == 0, "%s compression %d: %zu elements past the bound", algo, comp, bad);
  if (R == 0) printf("%-5s %s: worst error / bound = %.3f over %zu elements\n", algo, comp == HV_COMPRESSION_FP16 ? "fp16" : "bf16", worst, n);
  free(x);
  free(y);
}

static void check_overflow(hv_comm_t *comm) {
  float x[4] = {40000.0f, -40000.0f, 1.0f, 30000.0f}, y[4];
  hv_allreduce_opts_t fp16 = {1.0, 1.0, HV_COMPRESSION_FP16};
  CHECK_RC(hv_allreduce(comm, "overflow", x, y, 4, HV_FLOAT32, HV_SUM, &fp16));
  if (N >= 2) {
    CHECK(isinf(y[0]) && y[0] > 0 && isinf(y[1]) && y[1] < 0, "sum past 65504 must be +-inf: %g %g", y[0], y[1]);
    CHECK(y[2] == (float)N, "small values unaffected: %g", y[2]);
  }
  hv_allreduce_opts_t scaled = {1.0 / N, (double)N, HV_COMPRESSION_FP16};
  CHECK_RC(hv_allreduce(comm, "overflow.prescaled", x, y, 4, HV_FLOAT32, HV_SUM, &scaled));
  CHECK(fabsf(y[0] - 40000.0f * N) <= 40000.0f * N * 0x1p-10f, "prescaled sum: %g, want %g", y[0], 40000.0 * N);
  CHECK(fabsf(y[3] - 30000.0f * N) <= 30000.0f * N * 0x1p-10f, "prescaled sum: %g", y[3]);
}

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &R, &N);
  const char *algos[] = {"ring", "rd", "mpi", "hier", "shm"};
  for (int a = 0; a < 5; a++) {
    setenv("HV_ALLREDUCE_ALGO", algos[a], 1);
    hv_comm_t *comm;
    if (hv_init_from_mpi(MPI_COMM_WORLD, &comm) != HV_SUCCESS) {
      fprintf(stderr, "init: %s\n", hv_comm_last_error(NULL));
      return 1;
    }
    test_comm = comm;
    check_bound(comm, algos[a], HV_COMPRESSION_FP16);
    check_bound(comm, algos[a], HV_COMPRESSION_BF16);
    if (a == 0) check_overflow(comm);
    hv_shutdown(comm);
  }
  return test_mpi_finish("mpi_compression", R, N);
}
