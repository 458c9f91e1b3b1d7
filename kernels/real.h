/* real.h: the floating-point type of the trainer and kernels. hvkernels/hvtrainer use
 * float; the *_f64 builds of the same sources (HV_REAL_F64=1) use double, so gradient
 * checks and references run the very code that trains, only in float64. */
#ifndef HV_KERNELS_REAL_H
#define HV_KERNELS_REAL_H

#include <stddef.h>

#ifndef HV_REAL_F64
#define HV_REAL_F64 0
#endif

#if HV_REAL_F64
typedef double real_t;
#define REAL_EPSILON 2.220446049250313e-16
#else
typedef float real_t;
#define REAL_EPSILON 1.1920929e-07f
#endif

/* Name of real_t ("float32" / "float64"), for logs and checkpoint headers. */
const char *real_name(void);

#endif /* HV_KERNELS_REAL_H */
