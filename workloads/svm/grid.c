/* grid.c: grid values, the cost model, and the greedy LPT split across ranks.
 *
 * Cost model, fitted to the CPU time per (point, fold) measured on the 8,000-image
 * MNIST subset (6,400 points per fold, eps 1e-3, a 4 x 4 grid with log10 C in [0, 3],
 * log10 gamma in [-4, -2.5]): SMO work roughly doubles per decade of C until C is large
 * enough that the multipliers stop hitting the bound, which happens at a smaller C
 * the larger gamma is (log10 C_sat ~ -2 log10 gamma - 5); above gamma ~ 3e-4 the
 * kernel gets narrow, most points become support vectors and every fit costs more.
 * Errors in the model cost balance only, never results. */
#include "grid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int grid_make(grid_t *g, int n_tuning, double log_c_min, double log_c_max,
              double log_gamma_min, double log_gamma_max) {
  memset(g, 0, sizeof *g);
  g->n_c = g->n_gamma = n_tuning;
  g->log_c = malloc(sizeof(double) * (size_t)n_tuning + 1);
  g->log_gamma = malloc(sizeof(double) * (size_t)n_tuning + 1);
  if (!g->log_c || !g->log_gamma) {
    grid_free(g);
    return -1;
  }
  for (int i = 0; i < n_tuning; ++i) {
    double t = n_tuning > 1 ? (double)i / (n_tuning - 1) : 0.0;
    g->log_c[i] = log_c_min + (log_c_max - log_c_min) * t;
    g->log_gamma[i] = log_gamma_min + (log_gamma_max - log_gamma_min) * t;
  }
  return 0;
}

void grid_free(grid_t *g) {
  if (!g) return;
  free(g->log_c);
  free(g->log_gamma);
  memset(g, 0, sizeof *g);
}

double grid_unit_cost(double log_c, double log_gamma, int n) {
  /* Relative to n = 6400: SMO work ~ iterations x active size ~ n^2. */
  double scale = ((double)n / 6400.0) * ((double)n / 6400.0);
  double e = fmin(log_c, -2.0 * log_gamma - 5.0);
  e = fmax(-1.0, fmin(5.0, e));
  double base = 1.0 + 1.1 * fmax(0.0, log_gamma + 3.5);
  return scale * base * pow(2.0, e);
}

double grid_kernel_cost(int n) {
  double r = (double)n / 6400.0;
  return 0.15 * r * r; /* n^2 exps and the gathers around them, in the same units */
}

int grid_partition(const grid_t *g, int folds, int n_train, int nranks, int *owner,
                   double *load_out) {
  return grid_partition_todo(g, folds, n_train, nranks, NULL, owner, load_out);
}

int grid_partition_todo(const grid_t *g, int folds, int n_train, int nranks, const char *skip,
                        int *owner, double *load_out) {
  const int np = g->n_c * g->n_gamma, nu = np * folds;
  int *order = malloc(sizeof(int) * (size_t)nu + 1);
  double *cost = malloc(sizeof(double) * (size_t)nu + 1);
  double *load = calloc((size_t)nranks + 1, sizeof(double));
  /* has[r * n_gamma * folds + gi * folds + f]: rank r already holds that kernel. */
  char *has = calloc((size_t)nranks * g->n_gamma * folds + 1, 1);
  if (!order || !cost || !load || !has) {
    free(order); free(cost); free(load); free(has);
    return -1;
  }
  int n_fit = folds > 1 ? n_train - n_train / folds : n_train;
  int nt = 0; /* units to place */
  for (int u = 0; u < nu; ++u) {
    int p = u / folds;
    owner[u] = -1;
    if (!skip || !skip[u]) order[nt++] = u;
    cost[u] = grid_unit_cost(g->log_c[p % g->n_c], g->log_gamma[p / g->n_c], n_fit);
  }
  /* Sort by cost, largest first; ties by unit index so every rank agrees. Insertion
   * sort: grids are small (hundreds of units). */
  for (int a = 1; a < nt; ++a) {
    int u = order[a], b = a;
    while (b > 0 && (cost[order[b - 1]] < cost[u] ||
                     (cost[order[b - 1]] == cost[u] && order[b - 1] > u))) {
      order[b] = order[b - 1];
      --b;
    }
    order[b] = u;
  }
  const double kcost = grid_kernel_cost(n_fit);
  for (int a = 0; a < nt; ++a) {
    int u = order[a], p = u / folds, f = u % folds, gi = p / g->n_c;
    int best = 0;
    double best_load = INFINITY;
    for (int r = 0; r < nranks; ++r) {
      size_t k = ((size_t)r * g->n_gamma + gi) * folds + f;
      double l = load[r] + cost[u] + (has[k] ? 0.0 : kcost);
      if (l < best_load) {
        best_load = l;
        best = r;
      }
    }
    has[((size_t)best * g->n_gamma + gi) * folds + f] = 1;
    load[best] = best_load;
    owner[u] = best;
  }
  if (load_out) memcpy(load_out, load, sizeof(double) * (size_t)nranks);
  free(order); free(cost); free(load); free(has);
  return 0;
}
