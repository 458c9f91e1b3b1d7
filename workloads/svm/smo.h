/* smo.h: SMO-type decomposition solver for the binary C-SVC dual (as in LIBSVM).
 *
 *   min_a  1/2 a' Q a - e' a   s.t.  y' a = 0,  0 <= a_i <= C,   Q_ij = y_i y_j K_ij
 *
 * Working pairs are chosen by second-order information (Fan, Chen and Lin, JMLR 2005,
 * "WSS 3"); shrinking removes variables stuck at a bound from the active set and the
 * gradient is reconstructed before the final check. Kernel rows come from a kcache,
 * so every class and every C on one (fold, gamma) shares them. */
#ifndef HV_SVM_SMO_H
#define HV_SVM_SMO_H

#include "kcache.h"

typedef struct smo_params {
  double C;
  double eps;     /* stopping tolerance on the maximal violating pair (LIBSVM: 1e-3) */
  int shrinking;  /* 1: use the shrinking heuristics */
  long max_iter;  /* 0: max(10^7, 100 n) as LIBSVM */
} smo_params_t;
#define SMO_PARAMS_INIT {1.0, 1e-3, 1, 0}

typedef struct smo_result {
  double obj;     /* dual objective 1/2 a'Qa - e'a at the solution */
  double rho;     /* decision value f(x) = sum_i a_i y_i K(x_i, x) - rho */
  long iter;
  int n_sv;       /* a_i > 0 */
  int n_bsv;      /* a_i == C */
  int converged;  /* 0 when max_iter was hit */
} smo_result_t;

/* Solves the problem on the n points of kc with labels y[i] in {-1, +1}. alpha (n) is
 * written. Returns 0, or -1 when out of memory or y has a single class. */
int smo_solve(kcache_t *kc, const signed char *y, const smo_params_t *p, double *alpha,
              smo_result_t *res);

/* Largest KKT violation of (alpha, C), recomputing the gradient from scratch:
 * max over I_up of -y_i G_i minus min over I_low of -y_i G_i (<= eps at a solution
 * returned with tolerance eps). Writes the objective to *obj when obj is not NULL. */
double smo_kkt_violation(kcache_t *kc, const signed char *y, const double *alpha, double C,
                         double *obj);

#endif /* HV_SVM_SMO_H */
