/* consumer.c: a C "trainer" outside the project that links libhvcoll through the
 * installed CMake package or pkg-config file, using hv.h alone (no mpi.h). */
#include <stdio.h>

#include "hv.h"

int main(int argc, char **argv) {
  hv_comm_t *comm;
  hv_result_t rc = hv_init(&argc, &argv, &comm);
  if (rc != HV_SUCCESS) {
    fprintf(stderr, "hv_init: %s: %s\n", hv_strerror(rc), hv_comm_last_error(NULL));
    return 1;
  }
  int rank, size;
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  float grad[3] = {1.0f * rank, 2.0f, 3.0f};
  rc = hv_allreduce(comm, "grad", grad, grad, 3, HV_FLOAT32, HV_AVERAGE, NULL);
  int ok = rc == HV_SUCCESS && grad[0] == (size - 1) / 2.0f && grad[1] == 2.0f;
  printf("consumer rank %d/%d: %s\n", rank, size, ok ? "ok" : "WRONG");
  hv_shutdown(comm);
  return ok ? 0 : 1;
}
