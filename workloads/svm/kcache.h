/* kcache.h: the kernel rows of one training set (one fold, one gamma), shared by
 * every SMO solve on it: each C of the grid and each one-vs-rest class.
 *
 * K does not depend on C or on the class (only the labels' signs do, and the solver
 * applies them), so the rows are computed once per (fold, gamma) and reused. Two modes:
 *  - full: the whole (n, n) matrix, exponentiated from a precomputed squared-distance
 *    matrix; used when it fits the memory budget (the 8,000-image case).
 *  - lru: a least-recently-used cache of rows, each computed on demand with one SGEMV
 *    against the training points; used for large training sets.
 *  - subset: an LRU cache whose rows are gathered from a parent kcache's rows, for a
 *    subset of its points (one-vs-one pairs of classes): no kernel is recomputed.
 * Rows are indexed by training point and always hold all n columns. */
#ifndef HV_SVM_KCACHE_H
#define HV_SVM_KCACHE_H

#include <stddef.h>

typedef struct kcache {
  int n;
  double gamma;
  float *full; /* (n, n) in full mode, else NULL */
  /* lru mode */
  const float *x; /* (n, d) training points, not owned */
  const float *sq; /* (n) squared norms, not owned */
  int d;
  int capacity;
  float *rows;   /* (capacity, n) */
  int *slot_of;  /* (n) slot holding row i, or -1 */
  int *row_in;   /* (capacity) row held by a slot, or -1 */
  int *prev, *next; /* (capacity) recency list, head = most recent */
  int head, tail, used;
  long rows_computed;
  struct kcache *parent; /* subset mode: rows come from parent rows pidx[] */
  const int *pidx;
} kcache_t;

/* Full mode from squared distances: K[r][c] = exp(-gamma * dist[idx[r] * ld + idx[c]])
 * for r, c in [0, n). Returns 0, or -1 when out of memory. */
int kcache_init_full(kcache_t *kc, const float *dist, size_t ld, const int *idx, int n,
                     double gamma);

/* LRU mode over x (n, d) with squared norms sq, using at most budget_bytes for rows
 * (at least two rows are always kept). Returns 0, or -1 when out of memory. */
int kcache_init_lru(kcache_t *kc, const float *x, const float *sq, int n, int d,
                    double gamma, size_t budget_bytes);

/* Subset mode: the m points pidx[0..m) of parent (pidx kept, not copied), with room
 * for budget_bytes of rows. Returns 0, or -1 when out of memory. */
int kcache_init_subset(kcache_t *kc, kcache_t *parent, const int *pidx, int m,
                       size_t budget_bytes);

/* Row i: K(i, 0..n-1). The pointer stays valid until the second next call (a row
 * just returned is never the one evicted), so two rows can be used together. */
const float *kcache_row(kcache_t *kc, int i);

void kcache_free(kcache_t *kc);

#endif /* HV_SVM_KCACHE_H */
