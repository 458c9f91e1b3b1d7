/* faults_threads.c: the program of the multi-threaded fault tests (faults_threads.sh,
 * issue 27). Several user threads (--threads, 3) each submit, per pass, --per-pass
 * (60) named asynchronous requests mixing small allreduces (fused), allgathers and
 * broadcasts, so that hundreds of tensors are queued, pending or on the execution
 * list of a round when the harness stops or kills a rank, and requests complete and
 * are released by their threads while the rest of their batch still runs. Every
 * result is checked exactly (small integers).
 *
 * Names are "t<thread>/p<pass>/<kind><index>" with kind ar, ag or bc: the harness
 * checks that every name a rank prints in its stall and error lines has that form,
 * with thread < threads and index < per-pass (a name read from a released request
 * shows up as '', raw bytes or a crash).
 *
 * After pass 2 every rank prints   READY rank=R size=N pid=P host=H
 * and goes on until --passes passes are done, or with --until S until the ranks agree
 * (an allreduce 't<thread>/p<pass>/go' ending each pass) that S seconds have passed
 * since their READY line (not since the start: a loaded machine may take seconds to
 * get there, and the harness's fault comes after READY)
 * (then it prints DONE rank=R and exits 0), or until hv fails a request (the
 * harness stopped or killed a rank): then the
 * thread prints FAILED rank=R thread=T: <hv_strerror>: <last error>, the program
 * shuts hv down and exits 3. --seconds (60) bounds a run whose fault never came
 * (exit 5). A crash prints   CRASH rank=R signal=S addr=A   before the process dies
 * of it: once the launcher has reported the killed rank it reports no other, and a
 * survivor that crashes then would otherwise only be missing its line. */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "hv.h"

#define MAX_THREADS 16
#define MAX_PER_PASS 512
#define AR_COUNT 17 /* small: many fuse into one batch */
#define AG_COUNT 5
#define BC_COUNT 33

static hv_comm_t *comm;
static int rank, size, nthreads = 3, per_pass = 60, passes = 1000000;
static double seconds = 60, until = 0, t_start;
static atomic_int failed;      /* some thread saw hv fail a request */
static atomic_int wrong;       /* some thread saw a wrong result */
static atomic_int ready_count; /* threads past pass 2 */
static _Atomic double t_ready;  /* when this rank printed READY, or 0 */

typedef struct {
  int id;
  float *ar;      /* per_pass * AR_COUNT */
  int32_t *ag_in, *ag_out; /* per_pass * AG_COUNT, per_pass * AG_COUNT * size */
  double *bc;     /* per_pass * BC_COUNT */
  hv_handle_t *h;
} worker_t;

/* Async-signal-safe: formats with no library call but write(). */
static void on_crash(int sig, siginfo_t *info, void *ctx) {
  (void)ctx;
  char line[96], *p = line;
  const char *head = "CRASH rank=";
  while (*head) *p++ = *head++;
  unsigned long vals[3] = {(unsigned long)rank, (unsigned long)sig, (unsigned long)(uintptr_t)info->si_addr};
  const char *sep[3] = {" signal=", " addr=0x", "\n"};
  for (int i = 0; i < 3; i++) {
    char digits[24];
    int n = 0, base = i == 2 ? 16 : 10;
    unsigned long v = vals[i];
    do digits[n++] = "0123456789abcdef"[v % (unsigned long)base], v /= (unsigned long)base; while (v);
    while (n) *p++ = digits[--n];
    for (const char *s = sep[i]; *s; s++) *p++ = *s;
  }
  if (write(1, line, (size_t)(p - line)) < 0) { /* nothing more to do in a crash */
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

static void report_failure(int thread, int pass, hv_result_t rc) {
  if (atomic_exchange(&failed, 1) == 0) { /* one line per rank is enough for the harness */
    printf("FAILED rank=%d thread=%d pass=%d after=%.1f s: %s: %s\n", rank, thread, pass, now_s() - t_start,
           hv_strerror(rc), hv_comm_last_error(comm));
    fflush(stdout);
  }
}

/* Submits request i of pass p (kind by i % 3), with its input. */
static hv_result_t submit(worker_t *w, int p, int i, hv_handle_t *h) {
  char name[48];
  static const char *kind[3] = {"ar", "ag", "bc"};
  snprintf(name, sizeof name, "t%d/p%d/%s%d", w->id, p, kind[i % 3], i);
  int v = rank + w->id + p + i;
  switch (i % 3) {
    case 0: {
      float *x = w->ar + (size_t)i * AR_COUNT;
      for (int k = 0; k < AR_COUNT; k++) x[k] = (float)((v + k) % 7);
      return hv_allreduce_async(comm, name, x, x, AR_COUNT, HV_FLOAT32, HV_SUM, NULL, h);
    }
    case 1: {
      int32_t *x = w->ag_in + (size_t)i * AG_COUNT;
      for (int k = 0; k < AG_COUNT; k++) x[k] = v * 10 + k;
      return hv_allgather_async(comm, name, x, w->ag_out + (size_t)i * AG_COUNT * size, AG_COUNT, HV_INT32, h);
    }
    default: {
      double *x = w->bc + (size_t)i * BC_COUNT;
      int root = (w->id + i) % size;
      for (int k = 0; k < BC_COUNT; k++) x[k] = rank == root ? (double)(p * 1000 + i * 10 + k % 10) : -1.0;
      return hv_broadcast_async(comm, name, x, BC_COUNT, HV_FLOAT64, root, h);
    }
  }
}

/* Whether the result of request i of pass p is exact. */
static int check(const worker_t *w, int p, int i) {
  switch (i % 3) {
    case 0:
      for (int k = 0; k < AR_COUNT; k++) {
        float want = 0;
        for (int r = 0; r < size; r++) want += (float)((r + w->id + p + i + k) % 7);
        if (w->ar[(size_t)i * AR_COUNT + k] != want) return 0;
      }
      return 1;
    case 1:
      for (int r = 0; r < size; r++)
        for (int k = 0; k < AG_COUNT; k++)
          if (w->ag_out[((size_t)i * size + r) * AG_COUNT + k] != (r + w->id + p + i) * 10 + k) return 0;
      return 1;
    default:
      for (int k = 0; k < BC_COUNT; k++)
        if (w->bc[(size_t)i * BC_COUNT + k] != (double)(p * 1000 + i * 10 + k % 10)) return 0;
      return 1;
  }
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  for (int p = 0; p < passes && !atomic_load(&failed) && !atomic_load(&wrong); p++) {
    int n = 0;
    for (; n < per_pass; n++) {
      hv_result_t rc = submit(w, p, n, &w->h[n]);
      if (rc != HV_SUCCESS) {
        report_failure(w->id, p, rc);
        break;
      }
    }
    /* Waited for (and so released) in submission order, while later requests of the
     * same round may still run: what the engine must not read any more. */
    for (int i = 0; i < n; i++) {
      hv_result_t rc = hv_wait(w->h[i]);
      if (rc != HV_SUCCESS) report_failure(w->id, p, rc);
      else if (!check(w, p, i) && atomic_exchange(&wrong, 1) == 0)
        printf("WRONG rank=%d thread=%d pass=%d request=%d\n", rank, w->id, p, i);
    }
    if (p == 2 && atomic_fetch_add(&ready_count, 1) == nthreads - 1) {
      char host[64] = "";
      gethostname(host, sizeof host - 1);
      atomic_store(&t_ready, now_s());
      printf("READY rank=%d size=%d pid=%ld host=%s\n", rank, size, (long)getpid(), host);
      fflush(stdout);
    }
    if (now_s() - t_start > seconds) break;
    if (until > 0 && !atomic_load(&failed)) {
      /* Every rank must run as many passes: they agree when to stop. */
      char name[48];
      snprintf(name, sizeof name, "t%d/p%d/go", w->id, p);
      double ready = atomic_load(&t_ready);
      int32_t over = ready > 0 && now_s() - ready >= until;
      hv_result_t rc = hv_allreduce(comm, name, &over, &over, 1, HV_INT32, HV_MAX, NULL);
      if (rc != HV_SUCCESS) report_failure(w->id, p, rc);
      else if (over) break;
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--per-pass") && i + 1 < argc) per_pass = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--passes") && i + 1 < argc) passes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--until") && i + 1 < argc) until = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: faults_threads [--threads T] [--per-pass N] [--passes P | --until S] [--seconds S]\n");
      return 2;
    }
  }
  if (nthreads < 1 || nthreads > MAX_THREADS || per_pass < 1 || per_pass > MAX_PER_PASS || passes < 1) {
    fprintf(stderr, "faults_threads: threads 1..%d, per-pass 1..%d, passes >= 1\n", MAX_THREADS, MAX_PER_PASS);
    return 2;
  }
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "faults_threads: hv_init: %s\n", hv_comm_last_error(NULL));
    return 1;
  }
  t_start = now_s();
  hv_comm_rank(comm, &rank);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_crash;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  hv_comm_size(comm, &size);
  worker_t w[MAX_THREADS];
  pthread_t tid[MAX_THREADS];
  int code = 0;
  for (int t = 0; t < nthreads; t++) {
    w[t].id = t;
    w[t].ar = malloc((size_t)per_pass * AR_COUNT * sizeof(float));
    w[t].ag_in = malloc((size_t)per_pass * AG_COUNT * sizeof(int32_t));
    w[t].ag_out = malloc((size_t)per_pass * AG_COUNT * (size_t)size * sizeof(int32_t));
    w[t].bc = malloc((size_t)per_pass * BC_COUNT * sizeof(double));
    w[t].h = malloc((size_t)per_pass * sizeof(hv_handle_t));
    if (!w[t].ar || !w[t].ag_in || !w[t].ag_out || !w[t].bc || !w[t].h) {
      fprintf(stderr, "faults_threads: out of memory\n");
      return 1;
    }
  }
  for (int t = 0; t < nthreads; t++)
    if (pthread_create(&tid[t], NULL, worker_main, &w[t]) != 0) {
      fprintf(stderr, "faults_threads: cannot start thread %d\n", t);
      return 1;
    }
  for (int t = 0; t < nthreads; t++) pthread_join(tid[t], NULL);
  if (atomic_load(&wrong)) code = 4;
  else if (atomic_load(&failed)) code = 3;
  else if (now_s() - t_start > seconds) {
    printf("rank %d: no fault within %.0f s\n", rank, seconds);
    code = 5;
  } else {
    printf("DONE rank=%d\n", rank);
  }
  fflush(stdout);
  hv_shutdown(comm);
  for (int t = 0; t < nthreads; t++) {
    free(w[t].ar);
    free(w[t].ag_in);
    free(w[t].ag_out);
    free(w[t].bc);
    free(w[t].h);
  }
  return code;
}
