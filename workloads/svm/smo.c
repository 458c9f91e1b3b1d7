/* smo.c: the SMO solver of smo.h, following LIBSVM's Solver for C-SVC.
 *
 * State is kept by training-point index (alpha, G, G_bar) so kernel rows can be used
 * as the kcache stores them; the active set is the prefix [0, active) of a permutation
 * `act`, and shrinking swaps indices out of it (LIBSVM swaps whole rows instead).
 * G_bar_i = sum over a_j == C of C Q_ij lets the gradient of shrunk variables be rebuilt
 * from free variables only. Gradients are double: single precision would stall the
 * stopping test near eps = 1e-3 on large C. */
#include "smo.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SMO_TAU 1e-12

enum { AT_LOWER = 0, AT_UPPER = 1, FREE = 2 };

typedef struct smo_state {
  int n, active;
  double C, eps;
  const signed char *y;
  double *yd;      /* (n) labels as doubles, for the inner loops */
  double *alpha;   /* (n) */
  double *G;       /* (n) gradient Q a - e */
  double *G_bar;   /* (n) */
  char *status;    /* (n) */
  int *act;        /* (n) permutation; act[0, active) are active */
  kcache_t *kc;
  int unshrink;
} smo_state_t;

static void state_update_status(smo_state_t *s, int i) {
  if (s->alpha[i] >= s->C) s->status[i] = AT_UPPER;
  else if (s->alpha[i] <= 0.0) s->status[i] = AT_LOWER;
  else s->status[i] = FREE;
}

/* G of the inactive variables from G_bar and the free active ones (LIBSVM's choice
 * between row-by-active and row-by-inactive loops, by the number of kernel entries). */
static void state_reconstruct_gradient(smo_state_t *s) {
  const int n = s->n, na = s->active;
  if (na == n) return;
  int nr_free = 0;
  for (int t = na; t < n; ++t) s->G[s->act[t]] = s->G_bar[s->act[t]] - 1.0;
  for (int t = 0; t < na; ++t) nr_free += s->status[s->act[t]] == FREE;
  if ((double)nr_free * n > 2.0 * na * (double)(n - na)) {
    for (int t = na; t < n; ++t) {
      int i = s->act[t];
      const float *Ki = kcache_row(s->kc, i);
      double g = 0.0;
      for (int u = 0; u < na; ++u) {
        int j = s->act[u];
        if (s->status[j] == FREE) g += s->alpha[j] * s->yd[j] * Ki[j];
      }
      s->G[i] += s->yd[i] * g;
    }
  } else {
    for (int u = 0; u < na; ++u) {
      int j = s->act[u];
      if (s->status[j] != FREE) continue;
      const float *Kj = kcache_row(s->kc, j);
      double aj = s->alpha[j] * s->yd[j];
      for (int t = na; t < n; ++t) {
        int i = s->act[t];
        s->G[i] += s->yd[i] * aj * Kj[i];
      }
    }
  }
}

/* WSS 3: i maximises -y G over I_up; j minimises the second-order decrease among the
 * pairs violating with i. Returns 1 when the violation is below eps (optimal). */
static int state_select_pair(smo_state_t *s, int *out_i, int *out_j) {
  double Gmax = -INFINITY, Gmax2 = -INFINITY, obj_min = INFINITY;
  int gi = -1, gj = -1;
  for (int t = 0; t < s->active; ++t) {
    int k = s->act[t];
    if (s->y[k] > 0) {
      if (s->status[k] != AT_UPPER && -s->G[k] >= Gmax) { Gmax = -s->G[k]; gi = k; }
    } else {
      if (s->status[k] != AT_LOWER && s->G[k] >= Gmax) { Gmax = s->G[k]; gi = k; }
    }
  }
  if (gi < 0) return 1;
  const float *Ki = kcache_row(s->kc, gi);
  for (int t = 0; t < s->active; ++t) {
    int k = s->act[t];
    double grad_diff, quad;
    if (s->y[k] > 0) {
      if (s->status[k] == AT_LOWER) continue;
      if (s->G[k] >= Gmax2) Gmax2 = s->G[k];
      grad_diff = Gmax + s->G[k];
      quad = 2.0 - 2.0 * Ki[k]; /* K_ii + K_kk - 2 K_ik, with K_ii = 1 for RBF */
    } else {
      if (s->status[k] == AT_UPPER) continue;
      if (-s->G[k] >= Gmax2) Gmax2 = -s->G[k];
      grad_diff = Gmax - s->G[k];
      quad = 2.0 - 2.0 * Ki[k];
    }
    if (grad_diff > 0.0) {
      double od = -(grad_diff * grad_diff) / (quad > 0.0 ? quad : SMO_TAU);
      if (od <= obj_min) { obj_min = od; gj = k; }
    }
  }
  if (Gmax + Gmax2 < s->eps || gj < 0) return 1;
  *out_i = gi;
  *out_j = gj;
  return 0;
}

static int state_be_shrunk(const smo_state_t *s, int k, double Gmax1, double Gmax2) {
  if (s->status[k] == AT_UPPER)
    return s->y[k] > 0 ? -s->G[k] > Gmax1 : -s->G[k] > Gmax2;
  if (s->status[k] == AT_LOWER)
    return s->y[k] > 0 ? s->G[k] > Gmax2 : s->G[k] > Gmax1;
  return 0;
}

static void state_shrink(smo_state_t *s) {
  double Gmax1 = -INFINITY, Gmax2 = -INFINITY;
  for (int t = 0; t < s->active; ++t) {
    int k = s->act[t];
    if (s->y[k] > 0) {
      if (s->status[k] != AT_UPPER && -s->G[k] >= Gmax1) Gmax1 = -s->G[k];
      if (s->status[k] != AT_LOWER && s->G[k] >= Gmax2) Gmax2 = s->G[k];
    } else {
      if (s->status[k] != AT_UPPER && -s->G[k] >= Gmax2) Gmax2 = -s->G[k];
      if (s->status[k] != AT_LOWER && s->G[k] >= Gmax1) Gmax1 = s->G[k];
    }
  }
  /* Near the end, bring every variable back once, so shrinking decisions taken early
   * with a rough gradient are re-checked against the exact one. */
  if (!s->unshrink && Gmax1 + Gmax2 <= s->eps * 10.0) {
    s->unshrink = 1;
    state_reconstruct_gradient(s);
    s->active = s->n;
  }
  for (int t = 0; t < s->active; ++t) {
    if (!state_be_shrunk(s, s->act[t], Gmax1, Gmax2)) continue;
    s->active--;
    while (s->active > t) {
      if (!state_be_shrunk(s, s->act[s->active], Gmax1, Gmax2)) {
        int tmp = s->act[t];
        s->act[t] = s->act[s->active];
        s->act[s->active] = tmp;
        break;
      }
      s->active--;
    }
  }
}

/* Analytic solution of the two-variable sub-problem, clipped to the box (LIBSVM). */
static void pair_update(double *ai, double *aj, int same_sign, double Kij, double Gi,
                        double Gj, double C) {
  if (!same_sign) {
    double quad = 2.0 - 2.0 * Kij; /* |phi_i - phi_j|^2 whatever the signs */
    if (quad <= 0.0) quad = SMO_TAU;
    double delta = (-Gi - Gj) / quad, diff = *ai - *aj;
    *ai += delta;
    *aj += delta;
    if (diff > 0.0) {
      if (*aj < 0.0) { *aj = 0.0; *ai = diff; }
    } else {
      if (*ai < 0.0) { *ai = 0.0; *aj = -diff; }
    }
    if (diff > 0.0) {
      if (*ai > C) { *ai = C; *aj = C - diff; }
    } else {
      if (*aj > C) { *aj = C; *ai = C + diff; }
    }
  } else {
    double quad = 2.0 - 2.0 * Kij;
    if (quad <= 0.0) quad = SMO_TAU;
    double delta = (Gi - Gj) / quad, sum = *ai + *aj;
    *ai -= delta;
    *aj += delta;
    if (sum > C) {
      if (*ai > C) { *ai = C; *aj = sum - C; }
    } else {
      if (*aj < 0.0) { *aj = 0.0; *ai = sum; }
    }
    if (sum > C) {
      if (*aj > C) { *aj = C; *ai = sum - C; }
    } else {
      if (*ai < 0.0) { *ai = 0.0; *aj = sum; }
    }
  }
}

/* G_bar follows variables entering or leaving the upper bound (full rows needed). */
static void state_track_upper(smo_state_t *s, int k, int was_upper) {
  int is_upper = s->status[k] == AT_UPPER;
  if (was_upper == is_upper) return;
  const float *Kk = kcache_row(s->kc, k);
  double c = (is_upper ? s->C : -s->C) * s->yd[k];
  for (int m = 0; m < s->n; ++m) s->G_bar[m] += c * s->yd[m] * Kk[m];
}

static double state_rho(const smo_state_t *s) {
  double ub = INFINITY, lb = -INFINITY, sum_free = 0.0;
  int nr_free = 0;
  for (int t = 0; t < s->active; ++t) {
    int k = s->act[t];
    double yG = s->yd[k] * s->G[k];
    if (s->status[k] == AT_UPPER) {
      if (s->y[k] < 0) ub = fmin(ub, yG);
      else lb = fmax(lb, yG);
    } else if (s->status[k] == AT_LOWER) {
      if (s->y[k] > 0) ub = fmin(ub, yG);
      else lb = fmax(lb, yG);
    } else {
      nr_free++;
      sum_free += yG;
    }
  }
  return nr_free > 0 ? sum_free / nr_free : (ub + lb) / 2.0;
}

int smo_solve(kcache_t *kc, const signed char *y, const smo_params_t *p, double *alpha,
              smo_result_t *res) {
  const int n = kc->n;
  memset(res, 0, sizeof *res);
  int npos = 0;
  for (int i = 0; i < n; ++i) npos += y[i] > 0;
  if (n < 2 || npos == 0 || npos == n) return -1;

  smo_state_t s = {0};
  s.n = n;
  s.active = n;
  s.C = p->C;
  s.eps = p->eps;
  s.y = y;
  s.kc = kc;
  s.alpha = alpha;
  s.yd = malloc((size_t)n * sizeof(double));
  s.G = malloc((size_t)n * sizeof(double));
  s.G_bar = malloc((size_t)n * sizeof(double));
  s.status = malloc((size_t)n);
  s.act = malloc((size_t)n * sizeof(int));
  if (!s.yd || !s.G || !s.G_bar || !s.status || !s.act) {
    free(s.yd); free(s.G); free(s.G_bar); free(s.status); free(s.act);
    return -1;
  }
  /* Start from a = 0: G = -e, everything at the lower bound, G_bar = 0. */
  for (int i = 0; i < n; ++i) {
    alpha[i] = 0.0;
    s.yd[i] = y[i] > 0 ? 1.0 : -1.0;
    s.G[i] = -1.0;
    s.G_bar[i] = 0.0;
    s.status[i] = AT_LOWER;
    s.act[i] = i;
  }

  long max_iter = p->max_iter > 0 ? p->max_iter : (100L * n > 10000000L ? 100L * n : 10000000L);
  long iter = 0;
  int counter = (n < 1000 ? n : 1000) + 1;
  int converged = 0;
  while (iter < max_iter) {
    if (--counter == 0) {
      counter = n < 1000 ? n : 1000;
      if (p->shrinking) state_shrink(&s);
    }
    int i, j;
    if (state_select_pair(&s, &i, &j)) {
      /* Optimal on the active set: check again on all variables. */
      state_reconstruct_gradient(&s);
      s.active = n;
      if (state_select_pair(&s, &i, &j)) { converged = 1; break; }
      counter = 1; /* shrink again at the next iteration */
    }
    ++iter;
    const float *Ki = kcache_row(kc, i);
    const float *Kj = kcache_row(kc, j);
    double old_ai = alpha[i], old_aj = alpha[j];
    pair_update(&alpha[i], &alpha[j], y[i] == y[j], Ki[j], s.G[i], s.G[j], s.C);
    double dai = (alpha[i] - old_ai) * s.yd[i], daj = (alpha[j] - old_aj) * s.yd[j];
    if (s.active == n) { /* contiguous: vectorises */
      for (int k = 0; k < n; ++k) s.G[k] += s.yd[k] * (Ki[k] * dai + Kj[k] * daj);
    } else {
      for (int t = 0; t < s.active; ++t) {
        int k = s.act[t];
        s.G[k] += s.yd[k] * (Ki[k] * dai + Kj[k] * daj);
      }
    }
    int ui = s.status[i] == AT_UPPER, uj = s.status[j] == AT_UPPER;
    state_update_status(&s, i);
    state_update_status(&s, j);
    state_track_upper(&s, i, ui);
    state_track_upper(&s, j, uj);
  }
  if (!converged) {
    /* Hit max_iter: still return a consistent rho from the full gradient. */
    state_reconstruct_gradient(&s);
    s.active = n;
  }

  res->rho = state_rho(&s);
  double obj = 0.0;
  for (int i = 0; i < n; ++i) {
    obj += alpha[i] * (s.G[i] - 1.0);
    res->n_sv += alpha[i] > 0.0;
    res->n_bsv += alpha[i] >= s.C;
  }
  res->obj = obj / 2.0;
  res->iter = iter;
  res->converged = converged;
  free(s.yd); free(s.G); free(s.G_bar); free(s.status); free(s.act);
  return 0;
}

double smo_kkt_violation(kcache_t *kc, const signed char *y, const double *alpha, double C,
                         double *obj) {
  const int n = kc->n;
  double up = -INFINITY, low = INFINITY, o = 0.0;
  for (int i = 0; i < n; ++i) {
    const float *Ki = kcache_row(kc, i);
    double g = -1.0, yi = y[i] > 0 ? 1.0 : -1.0;
    for (int j = 0; j < n; ++j)
      if (alpha[j] > 0.0) g += yi * (y[j] > 0 ? 1.0 : -1.0) * Ki[j] * alpha[j];
    o += alpha[i] * (g - 1.0);
    double v = -yi * g;
    /* I_up: y=+1 below C or y=-1 above 0; I_low: y=+1 above 0 or y=-1 below C. */
    int in_up = yi > 0 ? alpha[i] < C : alpha[i] > 0.0;
    int in_low = yi > 0 ? alpha[i] > 0.0 : alpha[i] < C;
    if (in_up && v > up) up = v;
    if (in_low && v < low) low = v;
  }
  if (obj) *obj = o / 2.0;
  return up - low;
}
