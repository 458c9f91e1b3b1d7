/* kcache.c: kernel rows of one (fold, gamma) training set, full matrix or LRU cache.
 *
 * The LRU list is an intrusive doubly linked list over slots; a hit moves the slot to
 * the head, a miss takes a free slot or the tail. Because the head is never evicted,
 * the row returned by the previous call survives the next one, which is what SMO
 * needs (rows i and j of the working pair at the same time). */
#include "kcache.h"

#include "rbf_kernel.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

int kcache_init_full(kcache_t *kc, const float *dist, size_t ld, const int *idx, int n,
                     double gamma) {
  memset(kc, 0, sizeof *kc);
  kc->n = n;
  kc->gamma = gamma;
  kc->full = malloc((size_t)n * (size_t)n * sizeof(float) + 1);
  if (!kc->full) return -1;
  for (int r = 0; r < n; ++r) {
    const float *src = dist + (size_t)idx[r] * ld;
    float *dst = kc->full + (size_t)r * n;
    for (int c = 0; c < n; ++c) dst[c] = src[idx[c]];
    rbf_exp_inplace(dst, (size_t)n, gamma);
  }
  kc->rows_computed = n;
  return 0;
}

int kcache_init_lru(kcache_t *kc, const float *x, const float *sq, int n, int d,
                    double gamma, size_t budget_bytes) {
  memset(kc, 0, sizeof *kc);
  kc->n = n;
  kc->gamma = gamma;
  kc->x = x;
  kc->sq = sq;
  kc->d = d;
  size_t cap = budget_bytes / ((size_t)n * sizeof(float));
  if (cap < 2) cap = 2;
  if (cap > (size_t)n) cap = (size_t)n;
  kc->capacity = (int)cap;
  kc->rows = malloc(cap * (size_t)n * sizeof(float) + 1);
  kc->slot_of = malloc((size_t)n * sizeof(int) + 1);
  kc->row_in = malloc(cap * sizeof(int) + 1);
  kc->prev = malloc(cap * sizeof(int) + 1);
  kc->next = malloc(cap * sizeof(int) + 1);
  if (!kc->rows || !kc->slot_of || !kc->row_in || !kc->prev || !kc->next) {
    kcache_free(kc);
    return -1;
  }
  for (int i = 0; i < n; ++i) kc->slot_of[i] = -1;
  for (int s = 0; s < kc->capacity; ++s) kc->row_in[s] = -1;
  kc->head = kc->tail = -1;
  return 0;
}

int kcache_init_subset(kcache_t *kc, kcache_t *parent, const int *pidx, int m,
                       size_t budget_bytes) {
  if (kcache_init_lru(kc, NULL, NULL, m, 0, parent->gamma, budget_bytes) != 0) return -1;
  kc->parent = parent;
  kc->pidx = pidx;
  return 0;
}

static void lru_unlink(kcache_t *kc, int s) {
  if (kc->prev[s] >= 0) kc->next[kc->prev[s]] = kc->next[s];
  else kc->head = kc->next[s];
  if (kc->next[s] >= 0) kc->prev[kc->next[s]] = kc->prev[s];
  else kc->tail = kc->prev[s];
}

static void lru_push_head(kcache_t *kc, int s) {
  kc->prev[s] = -1;
  kc->next[s] = kc->head;
  if (kc->head >= 0) kc->prev[kc->head] = s;
  kc->head = s;
  if (kc->tail < 0) kc->tail = s;
}

/* K(i, .) by one SGEMV: -2 X x_i + |x_i|^2 + |x_j|^2, then exp; or, for a subset,
 * gathered from the parent's row (used at once, so the parent's LRU may evict it). */
static void lru_compute_row(kcache_t *kc, int i, float *out) {
  const int n = kc->n, d = kc->d;
  if (kc->parent) {
    const float *src = kcache_row(kc->parent, kc->pidx[i]);
    for (int j = 0; j < n; ++j) out[j] = src[kc->pidx[j]];
    kc->rows_computed++;
    return;
  }
  cblas_sgemv(CblasRowMajor, CblasNoTrans, n, d, -2.0f, kc->x, d, kc->x + (size_t)i * d,
              1, 0.0f, out, 1);
  const float si = kc->sq[i];
  for (int j = 0; j < n; ++j) {
    float v = out[j] + si + kc->sq[j];
    out[j] = v > 0.0f ? v : 0.0f;
  }
  out[i] = 0.0f; /* the same point: distance exactly 0, as the full matrix has it */
  rbf_exp_inplace(out, (size_t)n, kc->gamma);
  kc->rows_computed++;
}

const float *kcache_row(kcache_t *kc, int i) {
  if (kc->full) return kc->full + (size_t)i * kc->n;
  int s = kc->slot_of[i];
  if (s >= 0) {
    if (s != kc->head) {
      lru_unlink(kc, s);
      lru_push_head(kc, s);
    }
    return kc->rows + (size_t)s * kc->n;
  }
  if (kc->used < kc->capacity) {
    s = kc->used++;
  } else {
    s = kc->tail;
    lru_unlink(kc, s);
    kc->slot_of[kc->row_in[s]] = -1;
  }
  float *row = kc->rows + (size_t)s * kc->n;
  lru_compute_row(kc, i, row);
  kc->row_in[s] = i;
  kc->slot_of[i] = s;
  lru_push_head(kc, s);
  return row;
}

void kcache_free(kcache_t *kc) {
  if (!kc) return;
  free(kc->full);
  free(kc->rows);
  free(kc->slot_of);
  free(kc->row_in);
  free(kc->prev);
  free(kc->next);
  memset(kc, 0, sizeof *kc);
}
