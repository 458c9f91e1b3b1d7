/* grid.h: the (C, gamma) search grid and its split across ranks.
 *
 * The work is cut into units (grid point, fold). Units sharing (gamma, fold) share
 * one kernel matrix, so a rank pays the kernel once per (gamma, fold) it holds. The
 * split is greedy longest-processing-time first on an expected cost per unit
 * (grid_unit_cost), charging the kernel cost to a rank the first time it gets that
 * (gamma, fold): balanced by cost, not by count, and deterministic (every rank
 * computes the same assignment without communicating). */
#ifndef HV_SVM_GRID_H
#define HV_SVM_GRID_H

typedef struct grid {
  int n_c, n_gamma;        /* points: n_gamma * n_c, index p = gi * n_c + ci */
  double *log_c;           /* (n_c) log10(C) */
  double *log_gamma;       /* (n_gamma) log10(gamma) */
} grid_t;

/* n_tuning values of each, evenly spaced in log10 from min to max (numpy.logspace). */
int grid_make(grid_t *g, int n_tuning, double log_c_min, double log_c_max,
              double log_gamma_min, double log_gamma_max);
void grid_free(grid_t *g);

/* Expected cost (arbitrary units) of one SMO fit set (all classes, one fold) at
 * (log10 C, log10 gamma) on n training points, and of one kernel matrix. */
double grid_unit_cost(double log_c, double log_gamma, int n);
double grid_kernel_cost(int n);

/* owner (n_gamma * n_c * folds) gets the rank of unit u = p * folds + fold. load
 * (nranks) gets each rank's expected cost when not NULL. Returns 0, or -1 out of memory. */
int grid_partition(const grid_t *g, int folds, int n_train, int nranks, int *owner,
                   double *load);

/* The same split of the units u with !skip[u] (skip NULL: all); skipped units get
 * owner -1 (a resumed run: the units its journal kept). */
int grid_partition_todo(const grid_t *g, int folds, int n_train, int nranks, const char *skip,
                        int *owner, double *load);

#endif /* HV_SVM_GRID_H */
