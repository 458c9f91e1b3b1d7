/* mpi_flight.c: a program for the flight recorder's tests (check_flight.py).
 *   exit  (default): named collectives of every kind, a fused batch, a name that needs
 *         escaping, and two GPU-style ordered calls on host buffers; with
 *         HV_FLIGHT_RECORDER=DIR every rank dumps at hv_shutdown, and the script checks
 *         the documents against what this program did.
 *   hang SECONDS: every rank submits 'late', but rank 1 first sleeps SECONDS in user
 *         code: meanwhile the script asks the status sockets and sends SIGUSR1.
 * Exit status: 0 when every collective returned what it should. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hv.h"
#include "hv_internal_bench.h"
#include "test_util.h"

int main(int argc, char **argv) {
  hv_comm_t *comm = NULL;
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "mpi_flight: hv_init: %s\n", hv_comm_last_error(NULL));
    return 1;
  }
  test_comm = comm;
  int rank = 0, size = 0;
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  const char *mode = argc > 1 ? argv[1] : "exit";

  if (strcmp(mode, "hang") == 0) {
    int seconds = argc > 2 ? atoi(argv[2]) : 5;
    float v = 1;
    CHECK_RC(hv_allreduce(comm, "warmup", &v, &v, 1, HV_FLOAT32, HV_SUM, NULL));
    /* The whole time, though SIGUSR1 interrupts a sleep. */
    for (double until = MPI_Wtime() + seconds; rank == 1 && MPI_Wtime() < until;) usleep(10000);
    v = 1;
    CHECK_RC(hv_allreduce(comm, "late", &v, &v, 1, HV_FLOAT32, HV_SUM, NULL));
    CHECK(v == (float)size, "late: %g", v);
  } else {
    /* Three steps of 8 fused gradients, counts 1024 + i. */
    enum { K = 8 };
    static float grads[K][1100];
    for (int step = 0; step < 3; step++) {
      hv_handle_t h[K];
      char name[K][32];
      for (int i = 0; i < K; i++) {
        for (int e = 0; e < 1024 + i; e++) grads[i][e] = (float)(rank + 1);
        snprintf(name[i], sizeof name[i], "grad/%d", i);
        CHECK_RC(hv_allreduce_async(comm, name[i], grads[i], grads[i], (size_t)(1024 + i), HV_FLOAT32, HV_SUM, NULL,
                                    &h[i]));
      }
      CHECK_RC(hv_wait_all(h, K));
      for (int i = 0; i < K; i++)
        CHECK(grads[i][1023 + i] == (float)(size * (size + 1) / 2), "grad/%d: %g", i, grads[i][1023 + i]);
    }
    int32_t mine[16], all[16 * 64];
    for (int i = 0; i < 16; i++) mine[i] = rank;
    CHECK_RC(hv_allgather(comm, "ag", mine, all, 16, HV_INT32));
    CHECK(all[16 * (size - 1)] == size - 1, "ag: %d", all[16 * (size - 1)]);
    double b[8] = {rank == 0 ? 7.0 : 0.0};
    CHECK_RC(hv_broadcast(comm, "bc", b, 8, HV_FLOAT64, 0));
    CHECK(b[0] == 7.0, "bc: %g", b[0]);
    /* A name with a quote, a backslash, a control character, UTF-8 and a byte that
     * is not UTF-8: the documents must stay valid JSON. */
    int32_t w = 1;
    CHECK_RC(hv_allreduce(comm, "we\"ird\\name\x01 \xc3\xa9 \xff", &w, &w, 1, HV_INT32, HV_SUM, NULL));
    CHECK_RC(hv_barrier(comm));
    CHECK_RC(hv_bench_ordered_call(comm, "allreduce", 100, HV_FLOAT32, HV_SUM));
    CHECK_RC(hv_bench_ordered_call(comm, "allgather", 10, HV_INT32, 0));
  }
  CHECK_RC(hv_shutdown(comm));
  int failures = check_failures;
  fflush(stdout);
  return failures ? 1 : 0;
}
