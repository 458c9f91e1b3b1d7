/* names.c: the text of hv's result codes, dtypes and reductions (public hv.h calls
 * the algorithms need too: their messages name dtypes and results). */
#include "hv.h"

const char *hv_strerror(hv_result_t result) {
  switch (result) {
#define HV_RESULT_TEXT_(name, value, text) \
  case name:                               \
    return text;
    HV_RESULT_LIST(HV_RESULT_TEXT_)
#undef HV_RESULT_TEXT_
  }
  return "unknown hv result code";
}

size_t hv_dtype_size(hv_dtype_t dtype) {
  static const size_t sizes[HV_NUM_DTYPES] = {1, 1, 4, 8, 2, 2, 4, 8};
  return (unsigned)dtype < HV_NUM_DTYPES ? sizes[dtype] : 0;
}

const char *hv_dtype_name(hv_dtype_t dtype) {
  static const char *const names[HV_NUM_DTYPES] = {"uint8", "int8", "int32", "int64",
                                                   "float16", "bfloat16", "float32", "float64"};
  return (unsigned)dtype < HV_NUM_DTYPES ? names[dtype] : "invalid-dtype";
}

const char *hv_op_name(hv_op_t op) {
  static const char *const names[HV_NUM_OPS] = {"sum", "average", "min", "max", "product"};
  return (unsigned)op < HV_NUM_OPS ? names[op] : "invalid-op";
}
