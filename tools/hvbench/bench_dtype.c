/* bench_dtype.c: dtypes and reduction ops for hvbench: names as nccl-tests spells
 * them, element access as double (every test value is a small integer, exact in every
 * dtype), MPI datatypes, and MPI user ops for float16/bfloat16, which MPI lacks.
 * The fp16/bf16 conversions are hvbench's own so checking does not trust the library
 * under test. */
#include <math.h>
#include <string.h>

#include "hvbench.h"

static const struct {
  const char *name;
  hv_dtype_t dtype;
} dtype_names[] = {{"int8", HV_INT8},       {"uint8", HV_UINT8},       {"int32", HV_INT32},
                   {"int64", HV_INT64},     {"half", HV_FLOAT16},      {"float16", HV_FLOAT16},
                   {"fp16", HV_FLOAT16},    {"bfloat16", HV_BFLOAT16}, {"bf16", HV_BFLOAT16},
                   {"float", HV_FLOAT32},   {"float32", HV_FLOAT32},   {"fp32", HV_FLOAT32},
                   {"double", HV_FLOAT64},  {"float64", HV_FLOAT64},   {"fp64", HV_FLOAT64}};

static const char *const op_names[HV_NUM_OPS] = {"sum", "avg", "min", "max", "prod"};

int dtype_parse(const char *text, hv_dtype_t *dtype) {
  for (size_t i = 0; i < sizeof(dtype_names) / sizeof(dtype_names[0]); i++)
    if (strcmp(text, dtype_names[i].name) == 0) {
      *dtype = dtype_names[i].dtype;
      return 0;
    }
  return -1;
}

int op_parse(const char *text, hv_op_t *op) {
  for (int i = 0; i < HV_NUM_OPS; i++)
    if (strcmp(text, op_names[i]) == 0) {
      *op = (hv_op_t)i;
      return 0;
    }
  if (strcmp(text, "product") == 0) {
    *op = HV_PRODUCT;
    return 0;
  }
  if (strcmp(text, "average") == 0 || strcmp(text, "mean") == 0) {
    *op = HV_AVERAGE;
    return 0;
  }
  return -1;
}

const char *dtype_short_name(hv_dtype_t dtype) {
  static const char *const names[HV_NUM_DTYPES] = {"uint8", "int8", "int32",  "int64",
                                                   "half",  "bf16", "float", "double"};
  return (unsigned)dtype < HV_NUM_DTYPES ? names[dtype] : "?";
}

const char *op_short_name(hv_op_t op) {
  return (unsigned)op < HV_NUM_OPS ? op_names[op] : "?";
}

size_t dtype_size(hv_dtype_t dtype) { return hv_dtype_size(dtype); }

int dtype_is_float(hv_dtype_t dtype) {
  return dtype == HV_FLOAT16 || dtype == HV_BFLOAT16 || dtype == HV_FLOAT32 ||
         dtype == HV_FLOAT64;
}

/* Unit roundoff doubled (the spacing of numbers just above 1). */
double dtype_epsilon(hv_dtype_t dtype) {
  switch (dtype) {
  case HV_FLOAT16: return ldexp(1.0, -10);
  case HV_BFLOAT16: return ldexp(1.0, -7);
  case HV_FLOAT32: return ldexp(1.0, -23);
  case HV_FLOAT64: return ldexp(1.0, -52);
  default: return 0.0;
  }
}

double dtype_load(const void *buf, hv_dtype_t dtype, size_t i) {
  switch (dtype) {
  case HV_UINT8: return ((const uint8_t *)buf)[i];
  case HV_INT8: return ((const int8_t *)buf)[i];
  case HV_INT32: return ((const int32_t *)buf)[i];
  case HV_INT64: return (double)((const int64_t *)buf)[i];
  case HV_FLOAT16: return half_to_float(((const uint16_t *)buf)[i]);
  case HV_BFLOAT16: return bf16_to_float(((const uint16_t *)buf)[i]);
  case HV_FLOAT32: return ((const float *)buf)[i];
  case HV_FLOAT64: return ((const double *)buf)[i];
  default: return NAN;
  }
}

void dtype_store(void *buf, hv_dtype_t dtype, size_t i, double value) {
  switch (dtype) {
  case HV_UINT8: ((uint8_t *)buf)[i] = (uint8_t)value; break;
  case HV_INT8: ((int8_t *)buf)[i] = (int8_t)value; break;
  case HV_INT32: ((int32_t *)buf)[i] = (int32_t)value; break;
  case HV_INT64: ((int64_t *)buf)[i] = (int64_t)value; break;
  case HV_FLOAT16: ((uint16_t *)buf)[i] = half_from_float((float)value); break;
  case HV_BFLOAT16: ((uint16_t *)buf)[i] = bf16_from_float((float)value); break;
  case HV_FLOAT32: ((float *)buf)[i] = (float)value; break;
  case HV_FLOAT64: ((double *)buf)[i] = value; break;
  default: break;
  }
}

/* ---- MPI ---- */

MPI_Datatype dtype_mpi(hv_dtype_t dtype) {
  switch (dtype) {
  case HV_UINT8: return MPI_UINT8_T;
  case HV_INT8: return MPI_INT8_T;
  case HV_INT32: return MPI_INT32_T;
  case HV_INT64: return MPI_INT64_T;
  case HV_FLOAT16:
  case HV_BFLOAT16: return MPI_UINT16_T; /* reduced through the user ops below */
  case HV_FLOAT32: return MPI_FLOAT;
  case HV_FLOAT64: return MPI_DOUBLE;
  default: return MPI_DATATYPE_NULL;
  }
}

/* User ops for 16-bit floats: widen to float, combine, round back, as NCCL does. */
static MPI_Op user_ops[2][HV_NUM_OPS]; /* [0] half, [1] bf16 */

static float combine(float a, float b, int op) {
  switch (op) {
  case HV_MIN: return a < b ? a : b;
  case HV_MAX: return a > b ? a : b;
  case HV_PRODUCT: return a * b;
  default: return a + b; /* sum; average divides afterwards */
  }
}

#define DEFINE_USER_OP(fmt, op, to_f, from_f)                                              \
  static void user_##fmt##_##op(void *in, void *inout, int *len, MPI_Datatype *type) {     \
    const uint16_t *a = in;                                                                \
    uint16_t *b = inout;                                                                   \
    (void)type;                                                                            \
    for (int i = 0; i < *len; i++) b[i] = from_f(combine(to_f(a[i]), to_f(b[i]), op));     \
  }
DEFINE_USER_OP(half, HV_SUM, half_to_float, half_from_float)
DEFINE_USER_OP(half, HV_MIN, half_to_float, half_from_float)
DEFINE_USER_OP(half, HV_MAX, half_to_float, half_from_float)
DEFINE_USER_OP(half, HV_PRODUCT, half_to_float, half_from_float)
DEFINE_USER_OP(bf16, HV_SUM, bf16_to_float, bf16_from_float)
DEFINE_USER_OP(bf16, HV_MIN, bf16_to_float, bf16_from_float)
DEFINE_USER_OP(bf16, HV_MAX, bf16_to_float, bf16_from_float)
DEFINE_USER_OP(bf16, HV_PRODUCT, bf16_to_float, bf16_from_float)

void dtype_mpi_ops_create(void) {
  MPI_Op_create(user_half_HV_SUM, 1, &user_ops[0][HV_SUM]);
  MPI_Op_create(user_half_HV_MIN, 1, &user_ops[0][HV_MIN]);
  MPI_Op_create(user_half_HV_MAX, 1, &user_ops[0][HV_MAX]);
  MPI_Op_create(user_half_HV_PRODUCT, 1, &user_ops[0][HV_PRODUCT]);
  MPI_Op_create(user_bf16_HV_SUM, 1, &user_ops[1][HV_SUM]);
  MPI_Op_create(user_bf16_HV_MIN, 1, &user_ops[1][HV_MIN]);
  MPI_Op_create(user_bf16_HV_MAX, 1, &user_ops[1][HV_MAX]);
  MPI_Op_create(user_bf16_HV_PRODUCT, 1, &user_ops[1][HV_PRODUCT]);
  user_ops[0][HV_AVERAGE] = user_ops[0][HV_SUM];
  user_ops[1][HV_AVERAGE] = user_ops[1][HV_SUM];
}

void dtype_mpi_ops_free(void) {
  for (int f = 0; f < 2; f++)
    for (int op = 0; op < HV_NUM_OPS; op++)
      if (op != HV_AVERAGE && user_ops[f][op] != MPI_OP_NULL && user_ops[f][op] != 0)
        MPI_Op_free(&user_ops[f][op]);
}

MPI_Op dtype_mpi_op(hv_dtype_t dtype, hv_op_t op) {
  if (dtype == HV_FLOAT16) return user_ops[0][op];
  if (dtype == HV_BFLOAT16) return user_ops[1][op];
  switch (op) {
  case HV_MIN: return MPI_MIN;
  case HV_MAX: return MPI_MAX;
  case HV_PRODUCT: return MPI_PROD;
  default: return MPI_SUM;
  }
}
