/* test_svm_grid.c: the grid (workloads/svm/grid.c) and its split across ranks.
 *  - grid_make gives numpy.logspace values, and a single value for n_tuning = 1;
 *  - grid_partition assigns every unit to a rank in [0, nranks), is deterministic, puts
 *    everything on rank 0 for one rank, and for 2..4 ranks keeps the largest expected
 *    load within 15% of the mean on the default 4 x 4 x 5 units, with the ranks' loads
 *    adding up to at least the total cost (the kernel cost is charged per holder), and
 *    no worse than dealing the units round-robin by count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid.h"

#include "svm_test_util.h"

int main(void) {
  grid_t g;
  CHECK(grid_make(&g, 4, -3, 6, -6, -2) == 0, "grid_make");
  const double want_c[4] = {-3, 0, 3, 6};
  for (int i = 0; i < 4; ++i) CHECK(fabs(g.log_c[i] - want_c[i]) < 1e-12, "log_c[%d] = %g", i, g.log_c[i]);
  CHECK(fabs(g.log_gamma[1] - (-6 + 4.0 / 3)) < 1e-12, "log_gamma[1] = %g", g.log_gamma[1]);
  grid_free(&g);
  CHECK(grid_make(&g, 1, 1, 1, -3, -3) == 0 && g.log_c[0] == 1 && g.log_gamma[0] == -3, "1 x 1 grid");
  grid_free(&g);

  const int folds = 5, n = 8000;
  CHECK(grid_make(&g, 4, 0, 3, -4, -2.5) == 0, "grid_make");
  const int nu = 16 * folds;
  int owner[80], again[80];
  double load[8];
  double total = 0.0;
  for (int u = 0; u < nu; ++u)
    total += grid_unit_cost(g.log_c[(u / folds) % 4], g.log_gamma[(u / folds) / 4], n - n / folds);
  for (int nr = 1; nr <= 4; ++nr) {
    CHECK(grid_partition(&g, folds, n, nr, owner, load) == 0, "grid_partition");
    CHECK(grid_partition(&g, folds, n, nr, again, NULL) == 0, "grid_partition");
    CHECK(memcmp(owner, again, sizeof owner) == 0, "%d ranks: split not deterministic", nr);
    int count[8] = {0};
    for (int u = 0; u < nu; ++u) {
      CHECK(owner[u] >= 0 && owner[u] < nr, "unit %d -> rank %d", u, owner[u]);
      if (owner[u] >= 0 && owner[u] < nr) count[owner[u]]++;
    }
    double mx = 0.0, sum = 0.0;
    for (int r = 0; r < nr; ++r) {
      mx = fmax(mx, load[r]);
      sum += load[r];
    }
    printf("%d rank(s): units", nr);
    for (int r = 0; r < nr; ++r) printf(" %d", count[r]);
    printf(", expected loads");
    for (int r = 0; r < nr; ++r) printf(" %.2f", load[r]);
    printf(" (max / mean %.3f)\n", mx / (sum / nr));
    CHECK(sum >= total - 1e-9, "loads %.3f below the total cost %.3f", sum, total);
    CHECK(mx <= 1.15 * sum / nr, "%d ranks: max load %.3f > 1.15 x mean %.3f", nr, mx, sum / nr);
    if (nr == 1) CHECK(count[0] == nu, "one rank holds %d of %d units", count[0], nu);
    /* Balanced by cost, not by count: dealing units round-robin (equal counts) must
     * not give a lower maximum load. */
    double rr[8] = {0};
    char held[8][4][5] = {{{0}}}; /* rank, gamma, fold: kernel charged once per holder */
    for (int u = 0; u < nu; ++u) {
      int r = u % nr, gi = (u / folds) / 4, f = u % folds;
      rr[r] += grid_unit_cost(g.log_c[(u / folds) % 4], g.log_gamma[gi], n - n / folds);
      if (!held[r][gi][f]) rr[r] += grid_kernel_cost(n - n / folds);
      held[r][gi][f] = 1;
    }
    double rr_max = 0.0;
    for (int r = 0; r < nr; ++r) rr_max = fmax(rr_max, rr[r]);
    CHECK(nr == 1 || mx <= rr_max, "%d ranks: cost split max %.3f worse than round-robin %.3f",
          nr, mx, rr_max);
  }
  grid_free(&g);
  if (check_failures) {
    fprintf(stderr, "%d check(s) failed\n", check_failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
