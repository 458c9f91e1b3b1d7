/* ovr.h: multi-class RBF SVM models on top of the binary SMO solver, and their
 * prediction. One-vs-rest (this file's ovr_fit): class c's sub-problem labels class c
 * +1 and the rest -1; all ncls sub-problems use the same kcache (one fold, one gamma),
 * so kernel rows are computed once for all classes and all C; a point gets the class
 * with the largest decision value. One-vs-one (ovo.c) fills the same model with one
 * decision function per pair of classes and predicts by votes. */
#ifndef HV_SVM_OVR_H
#define HV_SVM_OVR_H

#include <stdint.h>

#include "kcache.h"
#include "smo.h"

typedef struct ovr_model {
  int ncls, n;          /* classes, training points */
  int nfun;             /* decision functions: ncls (one-vs-rest) or pairs (one-vs-one) */
  double *coef;         /* (nfun, n): alpha_i * y_i of each sub-problem */
  double *rho;          /* (nfun) */
  smo_result_t *stats;  /* (nfun) solver statistics */
  int *pair;            /* (nfun, 2) classes (+1, -1) of each function, one-vs-one only */
} ovr_model_t;

/* Fits the sub-problems of classes first, first + stride, ... (< ncls) on the kc->n
 * training points with labels (n) in [0, ncls); other classes keep zero coefficients
 * and rho (so models fitted on several ranks add up to the whole one). A class absent
 * from the labels gets a constant decision of -1 (never predicted). Returns 0, or -1
 * when out of memory. */
int ovr_fit(kcache_t *kc, const uint8_t *labels, int ncls, int first, int stride,
            const smo_params_t *p, ovr_model_t *m);

/* Writes kernel values K(query q0 + r, training point cols[c]) to out (nq, ncols). */
typedef void (*ovr_kblock_fn)(void *ctx, int q0, int nq, const int *cols, int ncols,
                              float *out);

/* Predicts nq query points: pred (nq) gets the class (largest decision value, or most
 * votes for one-vs-one; ties to the lower class); dec (nq, nfun) the decision values
 * when not NULL. Only support vectors enter the kernel blocks. Returns 0, or -1
 * when out of memory. */
int ovr_predict(const ovr_model_t *m, int nq, ovr_kblock_fn kblock, void *ctx,
                uint8_t *pred, float *dec);

void ovr_free(ovr_model_t *m);

#endif /* HV_SVM_OVR_H */
