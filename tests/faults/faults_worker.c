/* faults_worker.c: the program the fault-injection tests (tests/faults/) launch. A
 * training-like loop: every step submits the gradients of six "layers" as named
 * asynchronous allreduces in backward order (sizes from 1 Ki to 256 Ki floats, so
 * recursive doubling, the ring and shared memory all run, and small ones fuse),
 * then waits for them and checks the sums exactly (small integers).
 *
 * After a few steps each rank prints one line the harness reads to know whom to
 * signal:   READY rank=R size=N pid=P host=H
 * and the loop goes on until hv fails it (the harness killed or stopped a rank) or
 * --seconds (50) pass (then it exits 5: the fault never came). On a failure it prints
 *           FAILED rank=R step=S after=T s: <hv_strerror>: <hv_comm_last_error>
 * then calls hv_shutdown (collective on a healthy engine, immediate on one that lost a
 * peer) and exits 3. The hv line every rank must log is checked by faults_run.sh.
 *
 * --mismatch R: at step 3, rank R submits 'grad/layer2' with a different count (a
 * programming error on one rank); every rank must fail with the same first error,
 * naming rank R, and exit 3 after shutting down normally (the job is healthy).
 * --bad-input R: at step 3, rank R submits an AVERAGE of int32 (refused at the
 * call); it prints its error and shuts down, and the others must report that
 * rank R shut down after that error, not a bare "shut down" or a timeout.
 * --steps N: no fault is expected (a link that flaps, tests/faults/netem_faults.sh):
 * every rank runs N steps (the same on all, unlike --seconds, which each rank's
 * clock decides), shuts down and exits 0 with every sum exact.
 * --connect-all: an MPI all-to-all opens every connection first (tests that cut links).
 * --blocking: the layers go through the blocking hv_allreduce one after another
 * instead (rounds run inline on the calling thread, engine_inline.c): the fault
 * must be reported the same way when it hits such a round. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "hv.h"

#define LAYERS 6
static const size_t layer_count[LAYERS] = {1024, 3000, 65536, 262144, 17, 131072};

static int rank, size;
static double t_start;
static float *grad[LAYERS];

static int leave(int code) {
  for (int l = 0; l < LAYERS; l++) free(grad[l]);
  return code;
}

/* Prints the FAILED line, shuts hv down when asked (the caller may still have
 * requests in flight), and gives the exit code. */
static int fail(hv_comm_t *comm, int step, double since, hv_result_t rc, int shut_down) {
  printf("FAILED rank=%d step=%d after=%.1f s: %s: %s\n", rank, step, now_s() - since, hv_strerror(rc),
         hv_comm_last_error(comm));
  fflush(stdout);
  if (shut_down) hv_shutdown(comm);
  return 3;
}

int main(int argc, char **argv) {
  int mismatch_rank = -1, bad_rank = -1, blocking = 0, steps = -1, connect_all = 0;
  double seconds = 50; /* within the harness's outer timeouts */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mismatch") && i + 1 < argc) mismatch_rank = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bad-input") && i + 1 < argc) bad_rank = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--blocking")) blocking = 1;
    else if (!strcmp(argv[i], "--connect-all")) connect_all = 1;
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: faults_worker [--mismatch RANK | --bad-input RANK] [--blocking] [--connect-all] [--seconds S | --steps N]\n");
      return 2;
    }
  }
  hv_comm_t *comm;
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "faults_worker: hv_init: %s\n", hv_comm_last_error(NULL));
    return 1;
  }
  t_start = now_s();
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  for (int l = 0; l < LAYERS; l++)
    if (!(grad[l] = malloc(layer_count[l] * sizeof(float)))) return leave(1);
  /* --connect-all: one all-to-all of 1 MiB per pair first, so that Open MPI's TCP
   * transport opens every connection (both of btl_tcp_links 2) before a test cuts a
   * link: a connection it first tries during an outage fails for good ("connect()
   * failed: Operation now in progress"), which is Open MPI's, not hv's, to survive. */
  if (connect_all) {
    const size_t per = 1 << 20;
    char *out = calloc((size_t)size, per), *in = malloc((size_t)size * per);
    int ok = out && in && MPI_Alltoall(out, (int)per, MPI_CHAR, in, (int)per, MPI_CHAR, MPI_COMM_WORLD) == MPI_SUCCESS;
    free(out);
    free(in);
    if (!ok) return leave(1);
  }

  for (int step = 0;; step++) {
    if (now_s() - t_start > seconds) {
      printf("rank %d: no fault within %.0f s (%d steps)\n", rank, seconds, step);
      hv_shutdown(comm);
      return leave(5);
    }
    if (step == steps) {
      printf("rank %d: %d steps, every sum exact, after %.1f s\n", rank, step, now_s() - t_start);
      return leave(hv_shutdown(comm) == HV_SUCCESS ? 0 : 3);
    }
    double t0 = now_s();
    hv_handle_t h[LAYERS];
    for (int l = LAYERS - 1; l >= 0; l--) {
      char name[32];
      snprintf(name, sizeof name, "grad/layer%d", l);
      size_t count = layer_count[l];
      for (size_t i = 0; i < count; i++) grad[l][i] = (float)(rank + 1 + (int)((i + (size_t)step) % 5));
      hv_result_t rc;
      if (step == 3 && rank == bad_rank && l == 2) {
        int ibuf[4] = {0};
        rc = hv_allreduce_async(comm, name, ibuf, ibuf, 4, HV_INT32, HV_AVERAGE, NULL, &h[l]);
      } else {
        if (step == 3 && rank == mismatch_rank && l == 2) count -= 1;
        if (blocking) {
          rc = hv_allreduce(comm, name, grad[l], grad[l], count, HV_FLOAT32, HV_SUM, NULL);
          if (rc != HV_SUCCESS) return leave(fail(comm, step, t0, rc, 1));
          h[l] = NULL;
        } else {
          rc = hv_allreduce_async(comm, name, grad[l], grad[l], count, HV_FLOAT32, HV_SUM, NULL, &h[l]);
        }
      }
      if (rc != HV_SUCCESS) {
        /* Refused at the call: wait for what was submitted, then leave as a program
         * that cannot go on does, shutting hv down. */
        int code = fail(comm, step, t0, rc, 0);
        for (int k = LAYERS - 1; k > l; k--) hv_wait(h[k]);
        hv_shutdown(comm);
        return leave(code);
      }
    }
    hv_result_t first = HV_SUCCESS;
    for (int l = LAYERS - 1; l >= 0 && !blocking; l--) {
      hv_result_t rc = hv_wait(h[l]);
      if (first == HV_SUCCESS && rc != HV_SUCCESS) first = rc;
    }
    if (first != HV_SUCCESS) {
      /* hv_shutdown: collective on a healthy engine (a mismatch), immediate on one
       * that lost a peer. */
      return leave(fail(comm, step, t0, first, 1));
    }
    /* sum over ranks of (r + 1 + k) with k = (i + step) % 5 */
    for (int l = 0; l < LAYERS; l++)
      for (size_t i = 0; i < layer_count[l]; i++) {
        float want = (float)(size * (size + 1) / 2 + size * (int)((i + (size_t)step) % 5));
        if (grad[l][i] != want) {
          printf("WRONG rank=%d step=%d grad/layer%d[%zu] = %g, expected %g\n", rank, step, l, i, grad[l][i], want);
          hv_shutdown(comm);
          return leave(4);
        }
      }
    if (step == 2) {
      printf("READY rank=%d size=%d pid=%ld host=%s\n", rank, size, (long)getpid(), host);
      fflush(stdout);
    }
  }
}
