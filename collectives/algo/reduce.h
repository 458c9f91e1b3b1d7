/* reduce.h: element-wise kernels on host buffers: reduction of one buffer into
 * another, scaling, and dtype conversion with scaling (fusion packing/unpacking
 * with compression). */
#ifndef HV_REDUCE_H
#define HV_REDUCE_H

#include <stddef.h>

#include "hv.h"

/* dst[i] = dst[i] op src[i] for n elements (AVERAGE reduces as SUM). 16-bit floats are
 * combined in float32 and rounded once. Integer sums wrap around. */
void hv__reduce(void *dst, const void *src, size_t n, hv_dtype_t dtype, hv_op_t op);

/* dst[i] = a[i] op b[i], the same bits as copying a to dst then hv__reduce(dst, b).
 * dst may be a itself, but must not otherwise overlap a or b. */
void hv__reduce_to(void *dst, const void *a, const void *b, size_t n, hv_dtype_t dtype, hv_op_t op);

/* buf[i] *= factor for a float dtype (no-op for factor 1 or integer dtypes). */
void hv__scale(void *buf, size_t n, hv_dtype_t dtype, double factor);

/* buf[i] /= divisor for a float dtype (AVERAGE): a division, not a multiplication by
 * 1/divisor, so an average that is representable comes out exact. */
void hv__divide(void *buf, size_t n, hv_dtype_t dtype, double divisor);

/* dst[i] = (dst_dtype)(src[i] * factor). Float dtypes only when converting; equal
 * dtypes with factor 1 is a memmove. */
void hv__convert(void *dst, hv_dtype_t dst_dtype, const void *src, hv_dtype_t src_dtype,
                 size_t n, double factor);

int hv__dtype_is_float(hv_dtype_t dtype);

#endif
