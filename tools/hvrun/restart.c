/* restart.c: `hvrun --restarts N [--min-np M] -np P [-H ...|--hostfile F] prog args`.
 * Instead of exec'ing mpirun, hvrun stays as the job's supervisor: it runs mpirun as a
 * child, and when the job fails because a rank or a node was lost it relaunches it,
 * up to N times, on what remains:
 *   - who was lost comes from the tasks' records (run_record.c: a program killed by a
 *     signal the launcher did not send, a task whose wrapper vanished) and from the
 *     engine's fault records (rank-R.fault: a peer gone, stalled, or timed out);
 *   - a failure with neither (every rank exited with a code of its own) is the
 *     program's, and is not retried: the same input would fail the same way;
 *   - which hosts can still take part is asked of the network itself, when there are
 *     several: one `mpirun -np 1 --host H hvrun --check` per host, bounded in time, so
 *     a node whose links are cut (its daemon cannot reach mpirun) is left out, as is
 *     one that is down (its launch fails);
 *   - the new job has the old number of ranks where the remaining slots allow, else
 *     as many as they hold, never fewer than --min-np.
 * Each relaunch is one line on stderr, and the program finds HV_RESTART (the attempt,
 * 0 first) and HV_RUN_DIR in its environment, so it can resume. mpirun is given a
 * grace period once a rank has failed, and is terminated if it does not end. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hvrun.h"

#define MAX_HOSTS 4096
/* After the first failed rank, how long mpirun may take to tear the job down (mpirun
 * itself needs about a second; a node it cannot reach holds it until killed). */
#define TEARDOWN_GRACE_S 10.0
/* How long one host's probe may take (daemon start over ssh/srun, MPI_Init, 1 rank). */
#define PROBE_TIMEOUT_S 15.0

typedef struct {
  char name[64];
  int slots;
  int failed;
} host_slot_t;

typedef struct {
  host_slot_t hosts[MAX_HOSTS];
  int nhosts;
  int listed; /* the hosts came from -H, --hostfile or Slurm: pass them to mpirun */
} host_list_t;

static volatile sig_atomic_t interrupted;
static volatile sig_atomic_t mpirun_pid;

static void on_interrupt(int sig) {
  interrupted = sig;
  if (mpirun_pid > 0) kill((pid_t)mpirun_pid, sig);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void hosts_add(host_list_t *l, const char *name, size_t len, int slots) {
  if (len == 0) return;
  for (int i = 0; i < l->nhosts; i++)
    if (strlen(l->hosts[i].name) == len && !strncmp(l->hosts[i].name, name, len)) {
      l->hosts[i].slots += slots;
      return;
    }
  if (l->nhosts == MAX_HOSTS) hvrun_die(NULL, 2, "--restarts: more than %d hosts", MAX_HOSTS);
  if (len >= sizeof l->hosts[0].name) hvrun_die(NULL, 2, "--restarts: host name '%.*s' too long", (int)len, name);
  host_slot_t *h = &l->hosts[l->nhosts++];
  memcpy(h->name, name, len);
  h->name[len] = '\0';
  h->slots = slots;
  h->failed = 0;
}

static int parse_slots(const char *s, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || v < 1 || v > 1000000) hvrun_die(NULL, 2, "--restarts: %s: bad slot count '%s'", what, s);
  return (int)v;
}

/* -H h1:2,h2 (a host without :N has one slot, as for mpirun). */
static void hosts_from_option(host_list_t *l, const char *spec) {
  for (const char *p = spec; *p;) {
    size_t len = strcspn(p, ",");
    char item[128];
    snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
    char *colon = strchr(item, ':');
    int slots = colon ? parse_slots(colon + 1, "-H") : 1;
    hosts_add(l, item, colon ? (size_t)(colon - item) : strlen(item), slots);
    p += len;
    if (*p == ',') p++;
  }
}

/* An Open MPI hostfile: "host [slots=N] ..." per line, # comments. */
static void hosts_from_file(host_list_t *l, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) hvrun_die(NULL, 2, "--hostfile %s: %s", path, strerror(errno));
  char line[512];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "#\n")] = '\0';
    char *host = strtok(line, " \t"), *word;
    if (!host) continue;
    int slots = 1;
    while ((word = strtok(NULL, " \t")))
      if (!strncmp(word, "slots=", 6)) slots = parse_slots(word + 6, path);
    hosts_add(l, host, strlen(host), slots);
  }
  fclose(f);
}

/* Inside a Slurm allocation: its nodes (scontrol expands the compressed list) with
 * SLURM_TASKS_PER_NODE's counts ("4(x2),2"). */
static void hosts_from_slurm(host_list_t *l) {
  const char *nodelist = getenv("SLURM_JOB_NODELIST"), *tasks = getenv("SLURM_TASKS_PER_NODE");
  if (!nodelist || !tasks) hvrun_die(NULL, 2, "--restarts in a Slurm allocation needs SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE");
  int counts[MAX_HOSTS], n = 0;
  for (const char *p = tasks; *p && n < MAX_HOSTS;) {
    char *end;
    long c = strtol(p, &end, 10), rep = 1;
    if (end == p) break;
    if (!strncmp(end, "(x", 2)) rep = strtol(end + 2, &end, 10), end += *end == ')';
    for (long r = 0; r < rep && n < MAX_HOSTS; r++) counts[n++] = (int)c;
    p = end + (*end == ',');
  }
  char cmd[PATH_MAX];
  snprintf(cmd, sizeof cmd, "scontrol show hostnames '%s'", nodelist);
  FILE *f = popen(cmd, "r");
  if (!f) hvrun_die(NULL, 1, "--restarts: cannot run scontrol: %s", strerror(errno));
  char host[256];
  int i = 0;
  while (fgets(host, sizeof host, f)) {
    host[strcspn(host, "\n")] = '\0';
    hosts_add(l, host, strlen(host), i < n ? counts[i] : 1);
    i++;
  }
  if (pclose(f) != 0 || i == 0) hvrun_die(NULL, 1, "--restarts: `%s` failed", cmd);
}

static int hosts_slots(const host_list_t *l) {
  int s = 0;
  for (int i = 0; i < l->nhosts; i++)
    if (!l->hosts[i].failed) s += l->hosts[i].slots;
  return s;
}

static void hosts_spec(const host_list_t *l, char *out, size_t len) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < l->nhosts && used < len; i++)
    if (!l->hosts[i].failed)
      used += (size_t)snprintf(out + used, len - used, "%s%s:%d", used ? "," : "", l->hosts[i].name, l->hosts[i].slots);
}

static int host_index(const host_list_t *l, const char *name) {
  for (int i = 0; i < l->nhosts; i++)
    if (!strcmp(l->hosts[i].name, name)) return i;
  return -1;
}

/* Runs argv, waits at most limit_s (then SIGTERM, SIGKILL after 2 s); returns its
 * wait status, or -1 when it had to be killed. */
static int run_bounded(char *mpirun_path, char **argv, double limit_s, int quiet) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (quiet) {
      FILE *null = freopen("/dev/null", "w", stdout);
      if (null) null = freopen("/dev/null", "w", stderr);
      (void)null;
    }
    execvp(mpirun_path, argv);
    _exit(127);
  }
  double start = now_s();
  int status, killed = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    double t = now_s() - start;
    if (t > limit_s && killed == 0) kill(pid, SIGTERM), killed = 1;
    if (t > limit_s + 2 && killed == 1) kill(pid, SIGKILL), killed = 2;
    usleep(20000);
  }
  return killed ? -1 : status;
}

/* What one attempt left behind. */
typedef struct {
  int lost;         /* ranks lost (killed by a signal of their own, wrapper vanished, named by a fault record) */
  int faults;       /* ranks whose engine recorded a lost, stalled or unreachable peer */
  int unknown_host; /* a host none of whose ranks left a start record (the directory is not shared) */
  int first_code;   /* the first rank's own exit code, for "not restarting" */
  int first_code_rank;
  char what[1024];  /* "rank 3 on host n1 (killed by signal 9)", ... */
} verdict_t;

static int read_record(const char *dir, int rank, const char *suffix, char *out, size_t len) {
  char path[PATH_MAX + 96];
  snprintf(path, sizeof path, "%s/rank-%d.%s", dir, rank, suffix);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int ok = fgets(out, (int)len, f) != NULL;
  fclose(f);
  if (ok) out[strcspn(out, "\n")] = '\0';
  return ok;
}

static void verdict_add(verdict_t *v, int rank, const char *host, const char *why) {
  size_t used = strlen(v->what);
  if (used + 80 < sizeof v->what)
    snprintf(v->what + used, sizeof v->what - used, "%srank %d on host %s (%s)", used ? ", " : "", rank,
             host[0] ? host : "?", why);
}

static void attempt_verdict(const char *dir, int np, host_list_t *hosts, verdict_t *v) {
  memset(v, 0, sizeof *v);
  v->first_code_rank = -1;
  int *seen = calloc((size_t)(hosts->nhosts + 1), sizeof *seen);
  char *named = calloc((size_t)np + 1, 1); /* ranks already in v->what */
  if (!named || !seen) hvrun_die(NULL, 1, "out of memory");
  /* First what each task says of itself, then whom the engines named. */
  for (int r = 0; r < np; r++) {
    char start[256] = "", end[128] = "", host[64] = "", how[16] = "";
    int code = 0, launcher_sig = 0;
    int have_start = read_record(dir, r, "start", start, sizeof start);
    if (have_start) {
      sscanf(start, "%63s", host);
      int h = host_index(hosts, host);
      if (h >= 0) seen[h] = 1;
    }
    int have_end = read_record(dir, r, "end", end, sizeof end);
    if (have_end) sscanf(end, "%15s %d %d", how, &code, &launcher_sig);
    if (have_start && !have_end) {
      v->lost++;
      named[r] = 1;
      verdict_add(v, r, host, "its task vanished");
    } else if (have_end && !strcmp(how, "signal") && !launcher_sig) {
      char why[64];
      snprintf(why, sizeof why, "killed by signal %d", code);
      v->lost++;
      named[r] = 1;
      verdict_add(v, r, host, why);
    } else if (have_end && !strcmp(how, "exit") && code != 0 && !launcher_sig && v->first_code_rank < 0 &&
               !read_record(dir, r, "fault", start, sizeof start)) { /* not a rank that saw another go */
      v->first_code = code;
      v->first_code_rank = r;
    }
  }
  for (int r = 0; r < np; r++) {
    char fault[256] = "", kind[16] = "", start[256] = "", host[64] = "", why[64], end[128] = "", how[16] = "";
    int subject = -1, code = 0, launcher_sig = 0;
    if (!read_record(dir, r, "fault", fault, sizeof fault)) continue;
    if (sscanf(fault, "%15s %d", kind, &subject) != 2 || subject >= np) subject = -1;
    /* A peer that exited with a code of its own ended by the program's choice (its
     * error): that the others saw it go is a consequence, not a lost rank. */
    if (subject >= 0 && read_record(dir, subject, "end", end, sizeof end) &&
        sscanf(end, "%15s %d %d", how, &code, &launcher_sig) == 3 && !strcmp(how, "exit") && !launcher_sig)
      continue;
    v->faults++;
    if (subject < 0 || named[subject]) continue;
    if (read_record(dir, subject, "start", start, sizeof start)) sscanf(start, "%63s", host);
    snprintf(why, sizeof why, "%s, as rank %d found", kind, r);
    named[subject] = 1;
    verdict_add(v, subject, host, why);
  }
  for (int h = 0; h < hosts->nhosts; h++)
    if (!hosts->hosts[h].failed && !seen[h]) v->unknown_host = 1;
  free(seen);
  free(named);
}

/* Marks the hosts that cannot take part in a job any more; returns how many. */
static int probe_hosts(const hvrun_opts_t *o, host_list_t *hosts, const char *self_host) {
  int failed = 0;
  for (int h = 0; h < hosts->nhosts; h++) {
    host_slot_t *hs = &hosts->hosts[h];
    if (hs->failed || !strcmp(hs->name, self_host)) continue;
    char spec[96], path[PATH_MAX];
    snprintf(spec, sizeof spec, "%s:1", hs->name);
    char **argv = mpirun_cmd_build(o, 1, spec, "--check", path, sizeof path);
    int status = run_bounded(path, argv, PROBE_TIMEOUT_S, !o->verbose);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      hs->failed = 1;
      failed++;
      fprintf(stderr, "hvrun: host %s cannot take part any more (a 1-rank job there %s)\n", hs->name,
              status == -1 ? "did not start within 15 s" : "failed");
    }
  }
  return failed;
}

/* Removes this node's peer checkpoints of the run (/dev/shm/hv-peer-<run>/, written by
 * programs such as cifar_ddp for the relaunches: workloads/cifar/cifar_peer.h), which a
 * job that did not finish leaves behind. */
static void remove_peer_copies(const char *dir) {
  const char *base = strrchr(dir, '/');
  base = base && base[1] ? base + 1 : dir;
  char peer[PATH_MAX + 32], path[PATH_MAX + 300];
  snprintf(peer, sizeof peer, "/dev/shm/hv-peer-%s", base);
  DIR *d = opendir(peer);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(path, sizeof path, "%s/%s", peer, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(peer);
}

/* Removes what a self-made run directory holds (files of one level of attempts). */
static void remove_run_dir(const char *dir, int attempts, int np_max) {
  char path[PATH_MAX + 96];
  static const char *suffixes[] = {"start", "end", "fault", "start.tmp", "end.tmp", "fault.tmp"};
  for (int a = 0; a < attempts; a++) {
    for (int r = 0; r < np_max; r++)
      for (size_t s = 0; s < sizeof suffixes / sizeof suffixes[0]; s++) {
        snprintf(path, sizeof path, "%s/attempt-%d/rank-%d.%s", dir, a, r, suffixes[s]);
        unlink(path);
      }
    snprintf(path, sizeof path, "%s/attempt-%d", dir, a);
    rmdir(path);
  }
  snprintf(path, sizeof path, "%s/resumable", dir);
  unlink(path);
  rmdir(dir);
}

int restart_supervise(const hvrun_opts_t *o) {
  static host_list_t hosts;
  if (o->hosts) hosts_from_option(&hosts, o->hosts), hosts.listed = 1;
  else if (o->hostfile) hosts_from_file(&hosts, o->hostfile), hosts.listed = 1;
  else if (getenv("SLURM_JOB_ID") && getenv("SLURM_JOB_NODELIST")) hosts_from_slurm(&hosts), hosts.listed = 1;
  char self_host[64] = "?";
  if (gethostname(self_host, sizeof self_host - 1) != 0) snprintf(self_host, sizeof self_host, "?");
  if (!hosts.listed) hosts_add(&hosts, self_host, strlen(self_host), o->np);
  if (o->min_np > o->np) hvrun_die(NULL, 2, "--min-np %d is more than -np %d", o->min_np, o->np);

  char dir[PATH_MAX];
  int own_dir = 0;
  const char *given = getenv("HV_RUN_DIR");
  if (given && *given) {
    snprintf(dir, sizeof dir, "%s", given);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) hvrun_die(NULL, 1, "HV_RUN_DIR=%s: %s", dir, strerror(errno));
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/hvrun.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) hvrun_die(NULL, 1, "cannot make a run directory (%s): %s", dir, strerror(errno));
    own_dir = 1;
  }
  setenv("HV_RUN_DIR", dir, 1);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  int np = o->np, code = 1, attempt;
  for (attempt = 0;; attempt++) {
    char attempt_dir[PATH_MAX + 32], num[16], spec[8192];
    snprintf(attempt_dir, sizeof attempt_dir, "%s/attempt-%d", dir, attempt);
    if (mkdir(attempt_dir, 0700) != 0 && errno != EEXIST)
      hvrun_die(NULL, 1, "cannot make %s: %s", attempt_dir, strerror(errno));
    snprintf(num, sizeof num, "%d", attempt);
    setenv("HV_RESTART", num, 1);
    hosts_spec(&hosts, spec, sizeof spec);
    char path[PATH_MAX];
    char **argv = mpirun_cmd_build(o, np, hosts.listed ? spec : NULL, NULL, path, sizeof path);
    if (o->verbose) mpirun_cmd_print(argv);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) hvrun_die(NULL, 1, "cannot start mpirun: fork: %s", strerror(errno));
    if (pid == 0) {
      execvp(path, argv);
      hvrun_die(NULL, 126, "cannot exec %s: %s", path, strerror(errno));
    }
    mpirun_pid = pid;
    /* Wait for mpirun; once any rank has ended badly, give it TEARDOWN_GRACE_S. */
    int status = 0, killed = 0;
    double failed_at = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (!failed_at) {
        for (int r = 0; r < np && !failed_at; r++) {
          char end[128] = "";
          if (read_record(attempt_dir, r, "end", end, sizeof end) && strncmp(end, "exit 0 ", 7) != 0)
            failed_at = now_s();
        }
      } else if (now_s() - failed_at > TEARDOWN_GRACE_S + (killed ? 3 : 0) && killed < 2) {
        if (!killed) fprintf(stderr, "hvrun: mpirun did not end %.0f s after a rank failed: terminating it\n", TEARDOWN_GRACE_S);
        kill(pid, killed ? SIGKILL : SIGTERM);
        killed++;
      }
      usleep(50000);
    }
    mpirun_pid = 0;
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == 0 && !killed) {
      if (attempt > 0) fprintf(stderr, "hvrun: the job finished after %d restart%s\n", attempt, attempt > 1 ? "s" : "");
      break;
    }
    if (code == 0 || killed) code = 1; /* not mpirun's own crash under our SIGTERM */
    if (interrupted) {
      fprintf(stderr, "hvrun: interrupted (signal %d): not restarting\n", (int)interrupted);
      break;
    }
    verdict_t v;
    attempt_verdict(attempt_dir, np, &hosts, &v);
    if (!v.lost && !v.faults && !killed && !v.unknown_host) {
      if (v.first_code_rank >= 0)
        fprintf(stderr, "hvrun: not restarting: rank %d exited with code %d, and no rank or node was lost "
                        "(a failure of the program itself would happen again)\n", v.first_code_rank, v.first_code);
      else
        fprintf(stderr, "hvrun: not restarting: mpirun failed (exit %d) and no rank or node was lost\n", code);
      break;
    }
    /* Which hosts can still take part: asked before the verdict is said, so that a
     * node whose ranks only timed out is named as the one lost. */
    int lost_hosts = attempt < o->restarts && hosts.listed && hosts.nhosts > 1 ? probe_hosts(o, &hosts, self_host) : 0;
    for (int h = 0; lost_hosts && h < hosts.nhosts; h++) {
      size_t used = strlen(v.what);
      if (hosts.hosts[h].failed && used + 96 < sizeof v.what)
        snprintf(v.what + used, sizeof v.what - used, "%shost %s (unreachable)", used ? ", " : "", hosts.hosts[h].name);
    }
    if (!v.what[0]) snprintf(v.what, sizeof v.what, "%s", v.faults ? "a peer that stopped answering (the ranks' lines above name it)"
                                                                    : "a rank, as mpirun ended the job");
    if (attempt >= o->restarts) {
      fprintf(stderr, "hvrun: restarts exhausted (%d of %d): %s\n", attempt, o->restarts, v.what);
      break;
    }
    int slots = hosts_slots(&hosts);
    int next_np = o->oversubscribe || !hosts.listed ? np : (slots < o->np ? slots : o->np);
    if (slots == 0 || next_np < (o->min_np > 0 ? o->min_np : 1)) {
      fprintf(stderr, "hvrun: not restarting: %d rank%s left on the hosts that remain, fewer than --min-np %d (%s)\n",
              next_np, next_np == 1 ? "" : "s", o->min_np > 0 ? o->min_np : 1, v.what);
      break;
    }
    hosts_spec(&hosts, spec, sizeof spec);
    char mark[PATH_MAX + 16];
    snprintf(mark, sizeof mark, "%s/resumable", dir);
    if (access(mark, F_OK) != 0)
      fprintf(stderr, "hvrun: warning: %s did not say that it resumes (workloads/common/restart_mark.h): "
                      "relaunched, it starts over and the work so far is lost\n", o->prog_argv[0]);
    fprintf(stderr, "hvrun: restart %d of %d: lost %s; relaunching %d rank%s on %s (HV_RESTART=%d)\n", attempt + 1,
            o->restarts, v.what, next_np, next_np == 1 ? "" : "s", hosts.listed ? spec : self_host, attempt + 1);
    np = next_np;
  }
  remove_peer_copies(dir);
  if (own_dir) remove_run_dir(dir, attempt + 1, o->np);
  return code;
}
