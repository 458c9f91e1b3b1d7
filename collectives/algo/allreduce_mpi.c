/* allreduce_mpi.c: the MPI library's own MPI_Allreduce as a selectable reference
 * algorithm, plus the MPI datatypes and operations for every hv dtype (float16 and
 * bfloat16 get user-defined types and operations, created once per process). Large
 * buffers go in pieces so no int count overflows. */
#include <limits.h>
#include <pthread.h>

#include "algo.h"
#include "reduce.h"

static MPI_Datatype f16_type = MPI_DATATYPE_NULL, bf16_type = MPI_DATATYPE_NULL;
static MPI_Op half_ops[HV_NUM_OPS];
static pthread_once_t half_once = PTHREAD_ONCE_INIT;

#define DEFINE_HALF_OP(opname, hvop)                                                     \
  static void half_##opname(void *in, void *inout, int *len, MPI_Datatype *type) {       \
    hv__reduce(inout, in, (size_t)*len, *type == bf16_type ? HV_BFLOAT16 : HV_FLOAT16, hvop); \
  }
DEFINE_HALF_OP(sum, HV_SUM)
DEFINE_HALF_OP(min, HV_MIN)
DEFINE_HALF_OP(max, HV_MAX)
DEFINE_HALF_OP(prod, HV_PRODUCT)

static void create_half_types(void) {
  MPI_Type_contiguous(2, MPI_BYTE, &f16_type);
  MPI_Type_commit(&f16_type);
  MPI_Type_contiguous(2, MPI_BYTE, &bf16_type);
  MPI_Type_commit(&bf16_type);
  MPI_Op_create(half_sum, 1, &half_ops[HV_SUM]);
  half_ops[HV_AVERAGE] = half_ops[HV_SUM];
  MPI_Op_create(half_min, 1, &half_ops[HV_MIN]);
  MPI_Op_create(half_max, 1, &half_ops[HV_MAX]);
  MPI_Op_create(half_prod, 1, &half_ops[HV_PRODUCT]);
}

MPI_Datatype hv__mpi_datatype(hv_dtype_t dtype) {
  switch (dtype) {
    case HV_UINT8: return MPI_UINT8_T;
    case HV_INT8: return MPI_INT8_T;
    case HV_INT32: return MPI_INT32_T;
    case HV_INT64: return MPI_INT64_T;
    case HV_FLOAT32: return MPI_FLOAT;
    case HV_FLOAT64: return MPI_DOUBLE;
    case HV_FLOAT16:
      pthread_once(&half_once, create_half_types);
      return f16_type;
    case HV_BFLOAT16:
      pthread_once(&half_once, create_half_types);
      return bf16_type;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op hv__mpi_op(hv_dtype_t dtype, hv_op_t op) {
  if (dtype == HV_FLOAT16 || dtype == HV_BFLOAT16) {
    pthread_once(&half_once, create_half_types);
    return half_ops[op];
  }
  switch (op) {
    case HV_SUM:
    case HV_AVERAGE: return MPI_SUM;
    case HV_MIN: return MPI_MIN;
    case HV_MAX: return MPI_MAX;
    case HV_PRODUCT: return MPI_PROD;
    default: return MPI_OP_NULL;
  }
}

hv_result_t hv__allreduce_mpi(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype,
                              hv_op_t op) {
  MPI_Datatype type = hv__mpi_datatype(dtype);
  MPI_Op mop = hv__mpi_op(dtype, op);
  size_t es = hv_dtype_size(dtype);
  const size_t piece = (size_t)INT_MAX / 2;
  for (size_t done = 0; done < count; done += piece) {
    size_t len = count - done < piece ? count - done : piece;
#if HV_SIMULATED
    /* Simulated: the blocking call, which SMPI's collective selectors choose for (its
     * MPI_Iallreduce in place gave wrong values at 100003 floats on 64 ranks). */
    HV_MPI_CHECK(&ctx->host->errors, MPI_Allreduce(MPI_IN_PLACE, (char *)buf + done * es, (int)len, type, mop,
                                                   ctx->mpi));
#else
    MPI_Request req;
    HV_MPI_CHECK(&ctx->host->errors, MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + done * es, (int)len, type,
                                           mop, ctx->mpi, &req));
    HV_CHECK(hv__wait_mpi(ctx->host, 1, &req, "MPI_Iallreduce", 0));
#endif
  }
  return HV_SUCCESS;
}
