/* elastic_worker.c: the program the restart tests (tests/elastic/) run under
 * `hvrun --restarts`. A training-like loop of --steps steps; each step is one named
 * allreduce of integers whose sum is known exactly, checked on every rank, and rank 0
 * appends "STEP SIZE" to --state FILE after it (the checkpoint). At start the worker
 * reads FILE, resumes after the last step written, and says so:
 *   RESUMED step=S restart=K size=N
 * so a relaunched job repeats no finished step and loses at most the step in flight.
 * Faults it makes itself, on the attempts listed by --on-attempts (default "0"):
 *   --kill-rank R --kill-step S   rank R raises SIGKILL at step S (a crashed rank)
 *   --exit-rank R --exit-step S   rank R exits with code 4 at step S (a program error)
 *   --recovery-kill-rank R        on attempt 1, rank R raises SIGKILL as soon as it has
 *                                 resumed (a second failure during the recovery)
 *   --no-mark                     does not tell hvrun that it resumes (restart_mark.h)
 * At the end rank 0 checks the state file holds every step exactly once, prints
 *   DONE steps=S restart=K size=N
 * and every rank exits 0. Any wrong sum or a bad state file exits 3. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hv.h"
#include "restart_mark.h"

static int arg_int(int argc, char **argv, const char *name, int dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], name)) return atoi(argv[i + 1]);
  return dflt;
}

static const char *arg_str(int argc, char **argv, const char *name, const char *dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], name)) return argv[i + 1];
  return dflt;
}

/* The steps already in the state file (-1: none); 0 when the file is valid. */
static int read_state(const char *path, int steps, int *last, int *count) {
  *last = -1, *count = 0;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int step, size, bad = 0;
  while (fscanf(f, "%d %d", &step, &size) == 2) {
    if (step != *last + 1 || step >= steps) bad = 1;
    *last = step;
    (*count)++;
  }
  fclose(f);
  return bad ? -1 : 0;
}

int main(int argc, char **argv) {
  const int steps = arg_int(argc, argv, "--steps", 20);
  const char *state = arg_str(argc, argv, "--state", NULL);
  const int kill_rank = arg_int(argc, argv, "--kill-rank", -1), kill_step = arg_int(argc, argv, "--kill-step", -1);
  const int exit_rank = arg_int(argc, argv, "--exit-rank", -1), exit_step = arg_int(argc, argv, "--exit-step", -1);
  const int recovery_kill_rank = arg_int(argc, argv, "--recovery-kill-rank", -1);
  const char *on_attempts = arg_str(argc, argv, "--on-attempts", "0");
  const char *restart_env = getenv("HV_RESTART");
  const int restart = restart_env ? atoi(restart_env) : 0;
  char attempt_word[16];
  snprintf(attempt_word, sizeof attempt_word, "%d", restart);
  int faulty_attempt = 0;
  for (const char *p = on_attempts; *p;) { /* a comma-separated list */
    size_t len = strcspn(p, ",");
    if (len == strlen(attempt_word) && !strncmp(p, attempt_word, len)) faulty_attempt = 1;
    p += len + (p[len] == ',');
  }
  if (!state) {
    fprintf(stderr, "elastic_worker: --state FILE is required\n");
    return 2;
  }
  hv_comm_t *comm;
  hv_result_t rc = hv_init(&argc, &argv, &comm);
  if (rc != HV_SUCCESS) {
    fprintf(stderr, "elastic_worker: hv_init: %s: %s\n", hv_strerror(rc), hv_comm_last_error(NULL));
    return 3;
  }
  int rank, size, mark = 1;
  for (int i = 1; i < argc; i++) mark &= strcmp(argv[i], "--no-mark") != 0;
  hv_comm_rank(comm, &rank);
  if (rank == 0 && mark) restart_mark_resumable();
  hv_comm_size(comm, &size);
  /* Every rank resumes from rank 0's view of the state file. */
  int64_t resume[2] = {-1, 0};
  if (rank == 0) {
    int last, count;
    if (read_state(state, steps, &last, &count) != 0) {
      fprintf(stderr, "elastic_worker: %s: steps out of order\n", state);
      resume[1] = 1;
    }
    resume[0] = last;
  }
  if ((rc = hv_broadcast(comm, "elastic.resume", resume, 2, HV_INT64, 0)) != HV_SUCCESS || resume[1]) {
    fprintf(stderr, "elastic_worker: rank %d: resume: %s: %s\n", rank, hv_strerror(rc), hv_comm_last_error(comm));
    hv_shutdown(comm);
    return 3;
  }
  int first = (int)resume[0] + 1;
  if (rank == 0 && (restart > 0 || first > 0)) {
    printf("RESUMED step=%d restart=%d size=%d\n", first, restart, size);
    fflush(stdout);
  }
  if (restart == 1 && rank == recovery_kill_rank) raise(SIGKILL);
  enum { N = 4096 };
  static int32_t v[N];
  for (int step = first; step < steps; step++) {
    if (faulty_attempt && rank == kill_rank && step == kill_step) raise(SIGKILL);
    if (faulty_attempt && rank == exit_rank && step == exit_step) {
      fprintf(stderr, "elastic_worker: rank %d: a program error at step %d\n", rank, step);
      fflush(NULL);
      _exit(4);
    }
    for (int i = 0; i < N; i++) v[i] = (step + 1) * (rank + 1) + i % 7;
    char name[32];
    snprintf(name, sizeof name, "elastic.grad.%d", step % 3);
    if ((rc = hv_allreduce(comm, name, v, v, N, HV_INT32, HV_SUM, NULL)) != HV_SUCCESS) {
      fprintf(stderr, "elastic_worker: rank %d step %d: %s: %s\n", rank, step, hv_strerror(rc),
              hv_comm_last_error(comm));
      hv_shutdown(comm);
      return 3;
    }
    const int32_t ranks_sum = size * (size + 1) / 2;
    for (int i = 0; i < N; i++)
      if (v[i] != (step + 1) * ranks_sum + size * (i % 7)) {
        fprintf(stderr, "elastic_worker: rank %d step %d: element %d is %d\n", rank, step, i, v[i]);
        hv_shutdown(comm);
        return 3;
      }
    if (rank == 0) {
      FILE *f = fopen(state, "a");
      if (!f || fprintf(f, "%d %d\n", step, size) < 0 || fclose(f) != 0) {
        fprintf(stderr, "elastic_worker: cannot append to %s\n", state);
        return 3;
      }
    }
    usleep(20000); /* a step takes a while, so a kill lands mid-job */
  }
  int code = 0;
  if (rank == 0) {
    int last, count;
    if (read_state(state, steps, &last, &count) != 0 || last != steps - 1 || count != steps) {
      fprintf(stderr, "elastic_worker: %s holds %d steps (last %d), not each of 0..%d once\n", state, count, last,
              steps - 1);
      code = 3;
    } else {
      printf("DONE steps=%d restart=%d size=%d\n", steps, restart, size);
    }
  }
  hv_shutdown(comm);
  return code;
}
