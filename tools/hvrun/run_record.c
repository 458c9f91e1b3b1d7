/* run_record.c: the task's side of hvrun --restarts. Each task leaves two small files
 * in its attempt's directory ($HV_RUN_DIR/attempt-$HV_RESTART/), which the
 * supervisor (restart.c) reads once mpirun has ended:
 *   rank-R.start  "HOST PID"             before the program runs
 *   rank-R.end    "exit CODE SIG"        the program exited with CODE
 *                 "signal NUM SIG"       the program died of signal NUM
 *                 "pending 0 SIG"        the launcher signalled this task (SIG) first
 * SIG is the terminating signal the launcher sent this task before the program ended
 * (0 when none): a program killed after mpirun began tearing the job down is a
 * casualty of the failure, not its cause. A task whose end record is missing lost its
 * wrapper too (its node went away, or someone killed the wrapper).
 *
 * Why a child and not exec, as hvrun does without --restarts: an exec'd program that
 * is SIGKILLed leaves no trace but mpirun's summary, which names the first failed
 * process only and is text meant for people. The child gets PR_SET_PDEATHSIG, so it
 * never outlives its wrapper, and every signal a launcher sends is passed on. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hvrun.h"

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t launcher_signal; /* SIGTERM/SIGINT/SIGHUP/SIGQUIT received */

static void forward_signal(int sig) {
  if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) launcher_signal = sig;
  if (child_pid > 0) kill((pid_t)child_pid, sig);
}

int run_record_wanted(void) {
  const char *dir = getenv("HV_RUN_DIR"), *attempt = getenv("HV_RESTART");
  return dir && *dir && attempt && *attempt;
}

/* Writes text to rank-R.SUFFIX through a temporary file and rename, so the
 * supervisor never reads half a record. */
static void record_write(const hvrun_task_t *task, const char *suffix, const char *text) {
  char path[PATH_MAX + 96], tmp[PATH_MAX + 104];
  snprintf(path, sizeof path, "%s/attempt-%s/rank-%d.%s", getenv("HV_RUN_DIR"), getenv("HV_RESTART"), task->rank,
           suffix);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return; /* the directory is not shared with this node: the supervisor probes instead */
  ssize_t len = (ssize_t)strlen(text);
  int ok = write(fd, text, (size_t)len) == len;
  if (close(fd) != 0) ok = 0;
  if (ok) rename(tmp, path);
  else unlink(tmp);
}

void run_record_exec(const hvrun_task_t *task, char **argv) {
  char text[128];
  snprintf(text, sizeof text, "%s %ld\n", task->host, (long)getpid());
  record_write(task, "start", text);
  static const int passed_on[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof passed_on / sizeof passed_on[0]; i++) sigaction(passed_on[i], &sa, NULL);
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) hvrun_die(task, 1, "cannot start '%s': fork: %s", argv[0], strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1); /* the wrapper died before prctl took effect */
    for (size_t i = 0; i < sizeof passed_on / sizeof passed_on[0]; i++) signal(passed_on[i], SIG_DFL);
    execvp(argv[0], argv);
    int e = errno;
    hvrun_die(task, e == ENOENT ? 127 : 126, "cannot exec '%s': %s", argv[0], strerror(e));
  }
  child_pid = pid;
  int status = 0, said_pending = 0;
  for (;;) {
    if (waitpid(pid, &status, 0) == pid) break;
    if (errno != EINTR) hvrun_die(task, 1, "waiting for '%s': %s", argv[0], strerror(errno));
    if (launcher_signal && !said_pending) { /* the wrapper may be SIGKILLed next: say so now */
      snprintf(text, sizeof text, "pending 0 %d\n", (int)launcher_signal);
      record_write(task, "end", text);
      said_pending = 1;
    }
  }
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0, code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  snprintf(text, sizeof text, "%s %d %d\n", sig ? "signal" : "exit", sig ? sig : code, (int)launcher_signal);
  record_write(task, "end", text);
  if (!sig) exit(code);
  /* Die of the same signal, so that mpirun reports what really happened. */
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  raise(sig);
  exit(128 + sig);
}
