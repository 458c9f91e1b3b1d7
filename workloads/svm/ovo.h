/* ovo.h: one-vs-one multi-class RBF SVM (ncls (ncls - 1) / 2 pairwise sub-problems,
 * prediction by votes), sharing the fold's kernel rows; an option of mnist_svm
 * (--multiclass ovo) beside the default one-vs-rest (ovr.h). */
#ifndef HV_SVM_OVO_H
#define HV_SVM_OVO_H

#include <stddef.h>
#include <stdint.h>

#include "kcache.h"
#include "ovr.h"
#include "smo.h"

/* Fits pairs first, first + stride, ... in the order (0,1), (0,2), ..., (ncls-2, ncls-1)
 * on the kc->n points with labels (n); the others keep zero coefficients and rho, so
 * models fitted on several ranks add up. Each pair's kernel rows are gathered from kc
 * into a cache of budget_bytes. ovr_predict then votes. Returns 0, or -1 when out of
 * memory. */
int ovo_fit(kcache_t *kc, const uint8_t *labels, int ncls, int first, int stride,
            const smo_params_t *p, size_t budget_bytes, ovr_model_t *m);

#endif /* HV_SVM_OVO_H */
