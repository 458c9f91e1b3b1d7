/* doctor_worker.c: the program of the doctor scenarios (issue 22, tests/doctor/): a
 * training-like loop on real ranks that produces, on demand, each hang `hvrun --status`
 * and `hvrun --analyze` must explain. Every step marks itself for the straggler report
 * (hv_straggler_step), pauses --step-ms (the step's "compute"), submits eight named
 * gradients in backward order, 'grad/layer7' first and 'grad/layer0' last, waits for
 * them and checks every sum exactly (small integers). With them goes 'ctl/go', whether
 * to go on (rank 0 says stop once --seconds passed, --steps were done, or --stop-file
 * exists), so that every rank leaves after the same step and exits 0.
 *
 * After step 2 each rank prints the line the harness reads to know whom to signal:
 *   READY rank=R size=N pid=P host=H
 * A failed request prints FAILED rank=R step=S: <hv_strerror>: <hv_comm_last_error>,
 * stays --linger seconds in user code (its status socket still answers `hvrun
 * --status`), shuts hv down and exits 3.
 *
 * The fault, by MODE, at step --step (4) on rank --victim (1), at --layer L (3):
 *   run       none from inside: the harness stops, kills or cuts off a rank
 *   stuck     the victim prints STUCK rank=R step=S before 'grad/layerL' and sleeps for
 *             ever in user code (it did submit the layers above it)
 *   skip      from step S on the victim never submits 'grad/layerL' and goes on with the
 *             other layers and the next step (a layer frozen on one rank); it prints
 *             SKIP rank=R step=S 'grad/layerL' once
 *   shape     the upper half of the ranks submits 'grad/layerL' with twice the count
 *   shutdown  the victim calls hv_shutdown instead of submitting 'grad/layerL', prints
 *             SHUTDOWN rank=R and exits 0
 *   ordered   GPU-style ordered calls (no names: matched by order) on the host, through
 *             the engine's ordered path (hv_bench_ordered_call, hv_internal_bench.h: the
 *             argument agreement of hv_cuda.h, no data); at ordered call number
 *             --step x 2 the victim calls allgather where the others call allreduce
 * --delay-ms D: the victim pauses D ms more before each step's first submission (a slow
 * rank). --report-every K: every K steps all ranks call hv_straggler_report and rank 0
 * prints  STRAGGLER step=S rank=R lag_ms=L wait_ms=W steps=N
 * At the end each rank prints DONE rank=R steps=S checksum=X (X: a hash of every result,
 * the same on every rank). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hv.h"
#include "hv_internal_bench.h"

#define LAYERS 8
static const size_t layer_count[LAYERS] = {1024, 4096, 256, 16384, 2048, 65536, 512, 8192};

static int rank, size, victim = 1, fault_step = 4, fault_layer = 3, linger_s = 0;
static float *grad[LAYERS];

static void sleep_ms(double ms) {
  if (ms <= 0) return;
  struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* A request failed: say so, stay in user code --linger seconds, shut down, exit 3. */
static int failed(hv_comm_t *comm, int step, hv_result_t rc) {
  printf("FAILED rank=%d step=%d: %s: %s\n", rank, step, hv_strerror(rc), hv_comm_last_error(comm));
  fflush(stdout);
  sleep_ms(linger_s * 1000.0);
  hv_shutdown(comm);
  return 3;
}

/* FNV-1a over the bytes of the results. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

#ifdef HV_DOCTOR_HAVE_ORDERED
/* The ordered mode: GPU-style ordered allreduces of layer 0's size (their argument
 * agreement, as hv_cuda.h makes it, on the host: hv_bench_ordered_call moves no data),
 * one after another; at call number fault_step * 2 the victim calls allgather instead. */
static int ordered_loop(hv_comm_t *comm, int steps, const char *host) {
  for (int call = 0; steps < 0 || call < steps; call++) {
    const int wrong = call == fault_step * 2 && rank == victim;
    hv_result_t rc = hv_bench_ordered_call(comm, wrong ? "allgather" : "allreduce", layer_count[0], HV_FLOAT32, HV_SUM);
    if (rc != HV_SUCCESS) return failed(comm, call, rc);
    if (call == 2) {
      printf("READY rank=%d size=%d pid=%ld host=%s\n", rank, size, (long)getpid(), host);
      fflush(stdout);
    }
    sleep_ms(10);
  }
  printf("DONE rank=%d steps=%d checksum=0\n", rank, steps);
  return hv_shutdown(comm) == HV_SUCCESS ? 0 : 3;
}
#endif

static int usage(void) {
  fprintf(stderr, "usage: doctor_worker run|stuck|skip|shape|shutdown|ordered [--victim R] [--step S] [--layer L]\n"
                  "       [--delay-ms D] [--step-ms T] [--report-every K] [--steps N] [--seconds S]\n"
                  "       [--stop-file F] [--linger S] [--connect-all]\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *mode = argv[1];
  if (strcmp(mode, "run") && strcmp(mode, "stuck") && strcmp(mode, "skip") && strcmp(mode, "shape") &&
      strcmp(mode, "shutdown") && strcmp(mode, "ordered"))
    return usage();
  double delay_ms = 0, step_ms = 10, seconds = 60;
  int report_every = 0, steps = -1, connect_all = 0;
  const char *stop_file = NULL;
  for (int i = 2; i < argc; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(f, "--connect-all")) {
      connect_all = 1;
      continue;
    }
    if (!v) return usage();
    i++;
    if (!strcmp(f, "--victim")) victim = atoi(v);
    else if (!strcmp(f, "--step")) fault_step = atoi(v);
    else if (!strcmp(f, "--layer")) fault_layer = atoi(v);
    else if (!strcmp(f, "--delay-ms")) delay_ms = atof(v);
    else if (!strcmp(f, "--step-ms")) step_ms = atof(v);
    else if (!strcmp(f, "--report-every")) report_every = atoi(v);
    else if (!strcmp(f, "--steps")) steps = atoi(v);
    else if (!strcmp(f, "--seconds")) seconds = atof(v);
    else if (!strcmp(f, "--stop-file")) stop_file = v;
    else if (!strcmp(f, "--linger")) linger_s = atoi(v);
    else return usage();
  }
  if (fault_layer < 0 || fault_layer >= LAYERS) return usage();

  hv_comm_t *comm;
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "doctor_worker: hv_init: %s\n", hv_comm_last_error(NULL));
    return 1;
  }
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  for (int l = 0; l < LAYERS; l++)
    if (!(grad[l] = malloc(2 * layer_count[l] * sizeof(float)))) return 1;
  /* As tests/faults/faults_worker.c: open every Open MPI connection before a test cuts
   * a link (one first tried during the outage fails for good in its TCP transport). */
  if (connect_all) {
    const size_t per = 1 << 20;
    char *out = calloc((size_t)size, per), *in = malloc((size_t)size * per);
    int ok = out && in && MPI_Alltoall(out, (int)per, MPI_CHAR, in, (int)per, MPI_CHAR, MPI_COMM_WORLD) == MPI_SUCCESS;
    free(out);
    free(in);
    if (!ok) return 1;
  }
  if (!strcmp(mode, "ordered")) {
#ifdef HV_DOCTOR_HAVE_ORDERED
    return ordered_loop(comm, steps, host);
#else
    fprintf(stderr, "doctor_worker: this build has no ordered-call entry (hv_bench_ordered_call)\n");
    hv_shutdown(comm);
    return 77;
#endif
  }

  const int is_victim = rank == victim;
  const double t0 = now_s();
  uint64_t checksum = 1469598103934665603ull;
  int step;
  for (step = 0;; step++) {
    hv_straggler_step(comm);
    sleep_ms(step_ms + (is_victim ? delay_ms : 0));
    hv_handle_t h[LAYERS];
    size_t count[LAYERS];
    for (int l = LAYERS - 1; l >= 0; l--) {
      char name[32];
      snprintf(name, sizeof name, "grad/layer%d", l);
      count[l] = layer_count[l];
      h[l] = NULL;
      const int at_fault = step >= fault_step && l == fault_layer;
      if (at_fault && step == fault_step && is_victim && !strcmp(mode, "stuck")) {
        printf("STUCK rank=%d step=%d before '%s'\n", rank, step, name);
        fflush(stdout);
        for (;;) sleep(60); /* "in user code" until the harness kills it */
      }
      if (at_fault && is_victim && !strcmp(mode, "skip")) {
        if (step == fault_step) {
          printf("SKIP rank=%d step=%d '%s'\n", rank, step, name);
          fflush(stdout);
        }
        continue;
      }
      if (at_fault && step == fault_step && is_victim && !strcmp(mode, "shutdown")) {
        for (int k = LAYERS - 1; k > l; k--) hv_wait(h[k]);
        printf("SHUTDOWN rank=%d step=%d before '%s'\n", rank, step, name);
        fflush(stdout);
        hv_shutdown(comm);
        return 0;
      }
      if (at_fault && step == fault_step && !strcmp(mode, "shape") && rank >= size / 2) count[l] *= 2;
      for (size_t i = 0; i < count[l]; i++) grad[l][i] = (float)(rank + 1 + (int)((i + (size_t)step) % 5));
      hv_result_t rc = hv_allreduce_async(comm, name, grad[l], grad[l], count[l], HV_FLOAT32, HV_SUM, NULL, &h[l]);
      if (rc != HV_SUCCESS) return failed(comm, step, rc);
    }
    /* Whether to go on, agreed with the gradients in flight (as a loss allreduce
     * would be): rank 0 decides, everyone leaves after the same step. Submitted with
     * nothing else in flight, it would look like the first request of a step of its
     * own to an analyzer that finds steps by that (hvrun --analyze). */
    int32_t stop = rank == 0 && ((steps >= 0 && step + 1 >= steps) || now_s() - t0 > seconds ||
                                 (stop_file && access(stop_file, F_OK) == 0));
    hv_handle_t go;
    hv_result_t rc_go = hv_allreduce_async(comm, "ctl/go", &stop, &stop, 1, HV_INT32, HV_MAX, NULL, &go);
    if (rc_go != HV_SUCCESS) return failed(comm, step, rc_go);
    hv_result_t first = HV_SUCCESS;
    for (int l = LAYERS - 1; l >= 0; l--) {
      if (!h[l]) continue;
      hv_result_t rc = hv_wait(h[l]);
      if (first == HV_SUCCESS) first = rc;
    }
    rc_go = hv_wait(go);
    if (first == HV_SUCCESS) first = rc_go;
    if (first != HV_SUCCESS) return failed(comm, step, first);
    /* sum over ranks of (r + 1 + k), k = (i + step) % 5 */
    for (int l = 0; l < LAYERS; l++) {
      if (!h[l]) continue;
      for (size_t i = 0; i < count[l]; i++) {
        float want = (float)(size * (size + 1) / 2 + size * (int)((i + (size_t)step) % 5));
        if (grad[l][i] != want) {
          printf("WRONG rank=%d step=%d grad/layer%d[%zu] = %g, expected %g\n", rank, step, l, i, grad[l][i], want);
          hv_shutdown(comm);
          return 4;
        }
      }
      checksum = hash_bytes(checksum, grad[l], count[l] * sizeof(float));
    }
    if (step == 2) {
      printf("READY rank=%d size=%d pid=%ld host=%s\n", rank, size, (long)getpid(), host);
      fflush(stdout);
    }
    if (report_every > 0 && (step + 1) % report_every == 0) {
      hv_straggler_t s;
      hv_result_t rc = hv_straggler_report(comm, &s);
      if (rc != HV_SUCCESS) return failed(comm, step, rc);
      if (rank == 0) {
        printf("STRAGGLER step=%d rank=%d lag_ms=%.1f wait_ms=%.1f steps=%llu\n", step, s.rank, s.lag_ms, s.wait_ms,
               (unsigned long long)s.steps);
        fflush(stdout);
      }
    }
    if (stop) break;
  }
  printf("DONE rank=%d steps=%d checksum=%016llx\n", rank, step + 1, (unsigned long long)checksum);
  for (int l = 0; l < LAYERS; l++) free(grad[l]);
  return hv_shutdown(comm) == HV_SUCCESS ? 0 : 3;
}
