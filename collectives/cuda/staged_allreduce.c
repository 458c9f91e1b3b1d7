/* staged_allreduce.c: the pipelined host-staging allreduce (staged_allreduce.h).
 *
 * Chunk c uses slot c mod 3. Before chunk c is reduced, the copy of chunk c+1 to the
 * host is started (once the slot's previous chunk, c-2, has left it), so that copy
 * overlaps MPI's reduction of chunk c; the copy of chunk c back to the buffer is
 * started right after its reduction and overlaps the next chunk's. */
#include "staged_allreduce.h"

#include "algo.h"
#include "reduce.h"

hv_result_t hv__staged_allreduce(const hv__algo_host_t *host, MPI_Comm mpi, const hv__stage_copier_t *cp, void *buf,
                                 size_t count, hv_dtype_t dtype, hv_op_t op, double divisor, char *staging,
                                 size_t slot_bytes) {
  const size_t es = hv_dtype_size(dtype), per = slot_bytes / es;
  if (count == 0) return HV_SUCCESS;
  if (per == 0) return hv__fail(&host->errors, HV_ERR_INVALID_ARGUMENT, "staging slots of %zu bytes hold no element", slot_bytes);
  /* MPI counts are int: a slot never holds more than INT_MAX elements. */
  const size_t chunk = per < (size_t)1 << 30 ? per : (size_t)1 << 30;
  const size_t chunks = (count + chunk - 1) / chunk;
  char *data = buf;
#define SLOT(c) ((int)((c) % HV__STAGE_SLOTS))
#define HOST(c) (staging + (size_t)SLOT(c) * slot_bytes)
#define LEN(c) ((c) + 1 < chunks ? chunk : count - (c) * chunk)
  HV_CHECK(cp->to_host(cp->ctx, 0, HOST(0), data, LEN(0) * es));
  for (size_t c = 0; c < chunks; c++) {
    HV_CHECK(cp->to_host_wait(cp->ctx, SLOT(c)));
    if (c + 1 < chunks) {
      if (c + 1 >= HV__STAGE_SLOTS) HV_CHECK(cp->to_buffer_wait(cp->ctx, SLOT(c + 1)));
      HV_CHECK(cp->to_host(cp->ctx, SLOT(c + 1), HOST(c + 1), data + (c + 1) * chunk * es, LEN(c + 1) * es));
    }
    MPI_Request req;
    HV_MPI_CHECK(&host->errors, MPI_Iallreduce(MPI_IN_PLACE, HOST(c), (int)LEN(c), hv__mpi_datatype(dtype),
                                      hv__mpi_op(dtype, op), mpi, &req));
    HV_CHECK(hv__wait_mpi(host, 1, &req, "the cross-node allreduce of a device buffer", 0));
    if (divisor > 0) hv__divide(HOST(c), LEN(c), dtype, divisor);
    HV_CHECK(cp->to_buffer(cp->ctx, SLOT(c), data + c * chunk * es, HOST(c), LEN(c) * es));
  }
  for (size_t c = chunks > HV__STAGE_SLOTS ? chunks - HV__STAGE_SLOTS : 0; c < chunks; c++)
    HV_CHECK(cp->to_buffer_wait(cp->ctx, SLOT(c)));
#undef SLOT
#undef HOST
#undef LEN
  return HV_SUCCESS;
}
