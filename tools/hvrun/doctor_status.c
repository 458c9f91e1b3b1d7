/* doctor_status.c: `hvrun --status [--job ID] [--raw]` and `hvrun --status --slurm-job
 * ID[.STEP]`: asks a running job's ranks where they are (FLIGHT_RECORDER.md).
 *
 * Locally: the job's directory $HV_STATUS_DIR/<job>/ (default ${TMPDIR:-/tmp}/hv-<uid>)
 * holds rank<W>.sock and rank<W>.pid. Every socket is asked at once (non-blocking
 * connects, one poll loop), so stopped ranks cost one timeout, not one each. A rank
 * that does not answer within STATUS_TIMEOUT_S is looked up in /proc through its pid
 * file: stopped (state T/t), gone, or alive but busy. Directories and sockets that are
 * not the caller's are refused, and so is a server of another uid (SO_PEERCRED): a
 * status document is only ever exchanged between processes of one user.
 *
 * A Slurm step: after checking with scontrol that the job exists, runs and belongs to
 * the caller, one `hvrun --status --local --job slurm-ID.STEP --raw` per node of the
 * job through `srun --overlap` prints that node's documents (one per line) and probe
 * lines for ranks that could not answer; they are merged here. No port is opened. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "doctor.h"
#include "hvrun.h"

#define STATUS_TIMEOUT_S 2.0
#define SLURM_TIMEOUT_S 60.0
#define MAX_DOC_BYTES ((size_t)256 << 20)

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* dir/name into out; a path too long for PATH_MAX is an error of the input. */
static char *path_join(char *out, size_t len, const char *dir, const char *name) {
  int w = snprintf(out, len, "%s/%s", dir, name);
  if (w < 0 || (size_t)w >= len) hvrun_die(NULL, 1, "path too long: %s/%s", dir, name);
  return out;
}

static const char *user_name(uid_t uid, char *buf, size_t len) {
  struct passwd *pw = getpwuid(uid);
  if (pw) snprintf(buf, len, "%s (uid %u)", pw->pw_name, (unsigned)uid);
  else snprintf(buf, len, "uid %u", (unsigned)uid);
  return buf;
}

static void status_base(char *out, size_t len) {
  const char *d = getenv("HV_STATUS_DIR");
  if (d && *d) snprintf(out, len, "%s", d);
  else {
    const char *t = getenv("TMPDIR");
    snprintf(out, len, "%s/hv-%u", t && *t ? t : "/tmp", (unsigned)getuid());
  }
}

/* Dies unless path is a directory of the caller's. */
static void check_own_dir(const char *path, const char *what) {
  struct stat st;
  if (lstat(path, &st) != 0) hvrun_die(NULL, 1, "%s %s: %s", what, path, strerror(errno));
  if (!S_ISDIR(st.st_mode)) hvrun_die(NULL, 1, "%s %s is not a directory", what, path);
  if (st.st_uid != getuid()) {
    char a[96], b[96];
    hvrun_die(NULL, 1, "%s %s belongs to %s, not to you (%s): refusing to talk to its sockets", what, path,
              user_name(st.st_uid, a, sizeof a), user_name(getuid(), b, sizeof b));
  }
}

/* rank<W>.sock -> W, else -1 */
static int sock_rank(const char *name) {
  char *end;
  if (strncmp(name, "rank", 4) != 0 || name[4] < '0' || name[4] > '9') return -1;
  long w = strtol(name + 4, &end, 10);
  return strcmp(end, ".sock") == 0 && w >= 0 && w < 1000000 ? (int)w : -1;
}

static int pid_rank(const char *name) {
  char *end;
  if (strncmp(name, "rank", 4) != 0 || name[4] < '0' || name[4] > '9') return -1;
  long w = strtol(name + 4, &end, 10);
  return strcmp(end, ".pid") == 0 && w >= 0 && w < 1000000 ? (int)w : -1;
}

static int connect_nb(const char *path, int *fd_out) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path) return ENAMETOOLONG;
  memcpy(sa.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS && errno != EAGAIN) {
    int e = errno;
    close(fd);
    return e;
  }
  *fd_out = fd;
  return 0;
}

/* Is there a job directory with a socket that accepts a connection? */
static int job_dir_live(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int live = 0;
  for (struct dirent *e; !live && (e = readdir(d));) {
    if (sock_rank(e->d_name) < 0) continue;
    char p[PATH_MAX];
    path_join(p, sizeof p, dir, e->d_name);
    int fd;
    if (connect_nb(p, &fd) == 0) live = 1, close(fd);
  }
  closedir(d);
  return live;
}

/* The job's directory: --job ID, or the one job with live sockets. */
static void find_job_dir(const char *job, char *out, size_t len, int raw) {
  char base[PATH_MAX];
  status_base(base, sizeof base);
  struct stat st;
  if (stat(base, &st) != 0) {
    if (raw) exit(0); /* a node of a Slurm step without ranks of it: nothing to say */
    hvrun_die(NULL, 1, "no hv job is running as you on this machine: %s does not exist (HV_STATUS_DIR; jobs create "
                       "it when hv_init runs with the flight recorder on)", base);
  }
  check_own_dir(base, "the status directory");
  if (job) {
    if (strchr(job, '/') || !strcmp(job, ".") || !strcmp(job, "..")) hvrun_die(NULL, 2, "--job '%s': not a job id", job);
    path_join(out, len, base, job);
    if (lstat(out, &st) != 0) {
      if (raw) exit(0);
      char list[1024] = "";
      DIR *d = opendir(base);
      size_t used = 0;
      for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.' && used < sizeof list - 80) {
          int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", e->d_name);
          if (w > 0) used += (size_t)w;
        }
      if (d) closedir(d);
      hvrun_die(NULL, 1, "no job '%s' in %s (jobs there: %s)", job, base, used ? list : "none");
    }
    check_own_dir(out, "the job directory");
    return;
  }
  DIR *d = opendir(base);
  if (!d) hvrun_die(NULL, 1, "cannot read %s: %s", base, strerror(errno));
  char live[16][256];
  int nlive = 0, ndirs = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char p[PATH_MAX];
    path_join(p, sizeof p, base, e->d_name);
    if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) continue;
    ndirs++;
    if (job_dir_live(p)) {
      if (nlive < 16) snprintf(live[nlive], sizeof live[0], "%s", e->d_name);
      nlive++;
    }
  }
  closedir(d);
  if (nlive == 0)
    hvrun_die(NULL, 1, "no running hv job found in %s (%d job director%s, none with a status socket that answers)", base,
              ndirs, ndirs == 1 ? "y" : "ies");
  if (nlive > 1) {
    fprintf(stderr, "hvrun: error: %d running hv jobs in %s; pick one with --job ID:\n", nlive, base);
    for (int i = 0; i < nlive && i < 16; i++) fprintf(stderr, "  hvrun --status --job %s\n", live[i]);
    exit(1);
  }
  path_join(out, len, base, live[0]);
}

typedef struct {
  int w, fd, done, connect_err, peer_bad;
  long long pid; /* from rank<W>.pid, 0 when none */
  int has_sock, has_pid;
  char *buf;
  size_t len, cap;
} probe_t;

static void read_pid_file(const char *dir, probe_t *p) {
  char path[PATH_MAX], text[64] = "", name[32];
  snprintf(name, sizeof name, "rank%d.pid", p->w);
  path_join(path, sizeof path, dir, name);
  FILE *f = fopen(path, "r");
  if (!f) return;
  p->has_pid = fgets(text, sizeof text, f) != NULL;
  fclose(f);
  p->pid = p->has_pid ? strtoll(text, NULL, 10) : 0;
}

/* 'R', 'S', 'T', ... from /proc/<pid>/status; 0 when the process is gone. */
static char proc_state(long long pid) {
  if (pid <= 0) return 0;
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%lld/status", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char st = 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "State:", 6)) {
      const char *s = line + 6;
      while (*s == ' ' || *s == '\t') s++;
      st = *s;
      break;
    }
  fclose(f);
  return st == 'Z' || st == 'X' ? 0 : st;
}

static void json_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(out, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(out, "\\u%04x", (unsigned char)*s);
    else fputc(*s, out);
  }
  fputc('"', out);
}

/* What a rank that gave no document is, from its files and /proc. */
static doctor_proc_t classify(const probe_t *p, char *detail, size_t len) {
  if (!p->has_sock) {
    /* the socket is removed at hv_shutdown */
    snprintf(detail, len, "its status socket is gone (hv_shutdown)%s",
             p->has_pid && proc_state(p->pid) ? "; its process still runs" : "");
    return DOCTOR_PROC_NO_SOCKET;
  }
  char st = p->has_pid ? proc_state(p->pid) : 0;
  if (p->connect_err) {
    if (!st) {
      snprintf(detail, len, "its process is gone (%s; stale socket: %s)", p->has_pid ? "pid no longer exists" : "no pid file",
               strerror(p->connect_err));
      return DOCTOR_PROC_GONE;
    }
    snprintf(detail, len, "its socket refuses connections (%s) but pid %lld is alive (state %c)",
             strerror(p->connect_err), p->pid, st);
    return DOCTOR_PROC_BUSY;
  }
  if (st == 'T' || st == 't') {
    snprintf(detail, len, "process state %c (pid %lld): SIGSTOP or a debugger; no answer in %.0f s", st, p->pid,
             STATUS_TIMEOUT_S);
    return DOCTOR_PROC_STOPPED;
  }
  if (!st && p->has_pid) {
    snprintf(detail, len, "its process (pid %lld) is gone", p->pid);
    return DOCTOR_PROC_GONE;
  }
  if (st) snprintf(detail, len, "alive (process state %c, pid %lld), but no answer in %.0f s", st, p->pid, STATUS_TIMEOUT_S);
  else snprintf(detail, len, "no pid file, and no answer in %.0f s", STATUS_TIMEOUT_S);
  return DOCTOR_PROC_BUSY;
}

/* Asks every rank of the job directory; fills m (or prints raw lines). */
static void probe_job(const char *dir, doctor_model_t *m, int raw) {
  DIR *d = opendir(dir);
  if (!d) hvrun_die(NULL, 1, "cannot read %s: %s", dir, strerror(errno));
  int cap = 64, n = 0;
  probe_t *ps = calloc((size_t)cap, sizeof *ps);
  for (struct dirent *e; ps && (e = readdir(d));) {
    int w = sock_rank(e->d_name), isp = 0;
    if (w < 0) w = pid_rank(e->d_name), isp = 1;
    if (w < 0) continue;
    probe_t *p = NULL;
    for (int i = 0; i < n; i++)
      if (ps[i].w == w) p = &ps[i];
    if (!p) {
      if (n == cap) {
        probe_t *q = realloc(ps, (size_t)(cap *= 2) * sizeof *ps);
        if (!q) break;
        ps = q;
      }
      p = &ps[n++];
      memset(p, 0, sizeof *p);
      p->w = w, p->fd = -1;
    }
    if (isp) continue;
    char path[PATH_MAX];
    struct stat st;
    path_join(path, sizeof path, dir, e->d_name);
    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (st.st_uid != getuid()) {
      char a[96], b[96];
      hvrun_die(NULL, 1, "%s belongs to %s, not to you (%s): refusing to talk to it", path, user_name(st.st_uid, a, sizeof a),
                user_name(getuid(), b, sizeof b));
    }
    p->has_sock = 1;
  }
  closedir(d);
  if (!ps) hvrun_die(NULL, 1, "out of memory");
  if (n == 0) {
    if (raw) exit(0);
    hvrun_die(NULL, 1, "%s holds no status sockets (rank<W>.sock): the job ended or has not called hv_init", dir);
  }
  for (int i = 0; i < n; i++) {
    read_pid_file(dir, &ps[i]);
    if (!ps[i].has_sock) continue;
    char path[PATH_MAX], name[32];
    snprintf(name, sizeof name, "rank%d.sock", ps[i].w);
    path_join(path, sizeof path, dir, name);
    ps[i].connect_err = connect_nb(path, &ps[i].fd);
  }
  /* read every answer until EOF, all at once, within the timeout */
  struct pollfd *pf = calloc((size_t)n, sizeof *pf);
  if (!pf) hvrun_die(NULL, 1, "out of memory");
  double deadline = mono_s() + STATUS_TIMEOUT_S;
  for (;;) {
    int k = 0;
    for (int i = 0; i < n; i++)
      if (ps[i].fd >= 0 && !ps[i].done) pf[k].fd = ps[i].fd, pf[k].events = POLLIN, pf[k].revents = 0, k++;
    double left = deadline - mono_s();
    if (k == 0 || left <= 0) break;
    int r = poll(pf, (nfds_t)k, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    for (int j = 0; j < k; j++) {
      if (!pf[j].revents) continue;
      probe_t *p = NULL;
      for (int i = 0; i < n; i++)
        if (ps[i].fd == pf[j].fd) p = &ps[i];
      if (!p->buf) {
        /* the first data: make sure the server is ours */
        struct ucred cr;
        socklen_t cl = sizeof cr;
        if (getsockopt(p->fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || cr.uid != getuid()) {
          p->peer_bad = 1, p->done = 1;
          continue;
        }
      }
      if (p->len + 65536 > p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 131072;
        char *b = nc > MAX_DOC_BYTES ? NULL : realloc(p->buf, nc);
        if (!b) {
          p->done = 1; /* too large: treated as no answer */
          continue;
        }
        p->buf = b, p->cap = nc;
      }
      ssize_t got = read(p->fd, p->buf + p->len, p->cap - p->len);
      if (got > 0) p->len += (size_t)got;
      else if (got == 0 || (errno != EAGAIN && errno != EINTR)) p->done = 1;
    }
  }
  free(pf);
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  int maxw = 0;
  for (int i = 0; i < n; i++) maxw = ps[i].w + 1 > maxw ? ps[i].w + 1 : maxw;
  if (!raw) {
    char err[1024];
    if (doctor_model_reserve(m, maxw, err, sizeof err) != 0) hvrun_die(NULL, 1, "%s", err);
  }
  for (int i = 0; i < n; i++) {
    probe_t *p = &ps[i];
    if (p->peer_bad)
      hvrun_die(NULL, 1, "%s/rank%d.sock is served by a process of another user: refusing its answer", dir, p->w);
    int answered = p->done && p->len > 0 && p->fd >= 0;
    char detail[256];
    if (answered) {
      if (raw) {
        for (size_t k = 0; k < p->len; k++)
          if (p->buf[k] == '\n' || p->buf[k] == '\r') p->buf[k] = ' '; /* JSON escapes newlines in strings */
        fwrite(p->buf, 1, p->len, stdout);
        fputc('\n', stdout);
      } else {
        char src[PATH_MAX + 64], err[1024];
        snprintf(src, sizeof src, "the answer of %s/rank%d.sock", dir, p->w);
        if (doctor_load_doc(m, p->buf, p->len, src, err, sizeof err) != 0) hvrun_die(NULL, 1, "%s", err);
      }
    } else {
      doctor_proc_t st = classify(p, detail, sizeof detail);
      if (raw) {
        static const char *names[] = {"answered", "none", "gone", "stopped", "busy", "no_socket"};
        printf("{\"format\":\"" DOCTOR_PROBE_FORMAT "\",\"world_rank\":%d,\"state\":\"%s\",\"detail\":", p->w, names[st]);
        json_str(stdout, detail);
        printf(",\"host\":");
        json_str(stdout, host);
        printf(",\"pid\":%lld}\n", p->pid);
      } else {
        doctor_rank_t *r = &m->ranks[p->w];
        if (!r->present) {
          r->proc = st;
          snprintf(r->proc_detail, sizeof r->proc_detail, "%s", detail);
          snprintf(r->probe_host, sizeof r->probe_host, "%s", host);
          r->probe_pid = p->pid;
        }
      }
    }
    if (p->fd >= 0) close(p->fd);
    free(p->buf);
  }
  free(ps);
  if (raw) fflush(stdout);
}

/* ---- Slurm -------------------------------------------------------------------------- */

/* Runs argv, collects its stdout (and its stderr with merge_err; else it passes
 * through) within timeout_s. Returns the exit status (-1: could not run, 124: timed out). */
static int run_capture(char *const argv[], char **out, size_t *outlen, double timeout_s, int merge_err) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(fds[1], 1);
    if (merge_err) dup2(fds[1], 2);
    close(fds[0]), close(fds[1]);
    execvp(argv[0], argv);
    fprintf(stderr, "hvrun: error: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  size_t cap = 65536, len = 0;
  char *buf = malloc(cap);
  double deadline = mono_s() + timeout_s;
  int timed_out = 0;
  for (;;) {
    struct pollfd pf = {.fd = fds[0], .events = POLLIN};
    double left = deadline - mono_s();
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    int r = poll(&pf, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    if (buf && len + 65536 > cap) {
      char *b = cap * 2 > MAX_DOC_BYTES * 4 ? NULL : realloc(buf, cap * 2);
      if (!b) free(buf);
      buf = b, cap *= 2;
    }
    char sink[65536];
    ssize_t got = buf ? read(fds[0], buf + len, cap - len) : read(fds[0], sink, sizeof sink);
    if (got > 0) len += buf ? (size_t)got : 0;
    else if (got == 0 || errno != EINTR) break;
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!buf) return -1;
  buf[len < cap ? len : cap - 1] = '\0';
  *out = buf, *outlen = len;
  if (timed_out) return 124;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* value of "Key=" in scontrol's output, up to the next space */
static int scontrol_field(const char *text, const char *key, char *out, size_t len) {
  char k[64];
  snprintf(k, sizeof k, "%s=", key);
  for (const char *p = text; (p = strstr(p, k)); p++) {
    if (p > text && p[-1] != ' ' && p[-1] != '\n' && p[-1] != '\t') continue;
    p += strlen(k);
    size_t n = strcspn(p, " \n\t");
    if (n >= len) n = len - 1;
    memcpy(out, p, n);
    out[n] = '\0';
    return 0;
  }
  return -1;
}

static void slurm_status(const char *spec, doctor_model_t *m) {
  char id[64], step[64] = "";
  const char *dot = strchr(spec, '.');
  size_t idl = dot ? (size_t)(dot - spec) : strlen(spec);
  if (idl == 0 || idl >= sizeof id || strspn(spec, "0123456789") != idl)
    hvrun_die(NULL, 2, "--slurm-job '%s': expected a Slurm job id, ID or ID.STEP (e.g. 1234 or 1234.0)", spec);
  memcpy(id, spec, idl);
  id[idl] = '\0';
  if (dot) {
    if (!dot[1] || strlen(dot + 1) >= sizeof step || strspn(dot + 1, "0123456789") != strlen(dot + 1))
      hvrun_die(NULL, 2, "--slurm-job '%s': the step must be a number (ID.STEP, e.g. 1234.0)", spec);
    snprintf(step, sizeof step, "%s", dot + 1);
  }
  char *out = NULL;
  size_t len = 0;
  char *sc[] = {"scontrol", "show", "job", id, NULL};
  int rc = run_capture(sc, &out, &len, 30, 1);
  if (rc == 127 || rc < 0) hvrun_die(NULL, 1, "--slurm-job needs Slurm's scontrol and srun on PATH (could not run scontrol)");
  if (rc != 0 || !strstr(out, "JobId=")) {
    out[strcspn(out, "\n")] = '\0';
    hvrun_die(NULL, 1, "Slurm job %s does not exist (scontrol show job %s: %s)", id, id,
              rc == 124 ? "timed out" : out[0] ? out : "failed");
  }
  char user[128] = "", state[64] = "", nodes[32] = "";
  scontrol_field(out, "UserId", user, sizeof user);
  scontrol_field(out, "JobState", state, sizeof state);
  scontrol_field(out, "NumNodes", nodes, sizeof nodes);
  free(out);
  const char *paren = strchr(user, '(');
  long uid = paren ? strtol(paren + 1, NULL, 10) : -1;
  if (uid != (long)getuid()) {
    char b[96];
    hvrun_die(NULL, 1, "Slurm job %s belongs to %s, not to you (%s): hvrun --status asks only your own jobs", id,
              user[0] ? user : "another user", user_name(getuid(), b, sizeof b));
  }
  if (strcmp(state, "RUNNING") != 0) hvrun_die(NULL, 1, "Slurm job %s is not running (JobState=%s)", id, state);
  int nn = atoi(nodes);
  if (nn < 1) nn = 1;
  /* the job's numeric steps: the one named, or the only one */
  char *sq[] = {"squeue", "-h", "-s", "-j", id, "-o", "%i", NULL};
  out = NULL;
  if (run_capture(sq, &out, &len, 30, 1) != 0 || !out) hvrun_die(NULL, 1, "squeue -s -j %s failed: cannot list the job's steps", id);
  int found = 0, named = 0;
  char list[512] = "", first[64] = "";
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    const char *d = strchr(line, '.');
    if (!d || !d[1] || strspn(d + 1, "0123456789") != strlen(d + 1)) continue;
    if (!found++) snprintf(first, sizeof first, "%s", d + 1);
    named |= step[0] && !strcmp(d + 1, step);
    size_t u = strlen(list);
    snprintf(list + u, sizeof list - u, "%s%s", u ? ", " : "", line);
  }
  free(out);
  if (step[0] && !named)
    hvrun_die(NULL, 1, "Slurm job %s has no running step %s (its steps: %s)", id, step, found ? list : "none");
  if (!found) hvrun_die(NULL, 1, "Slurm job %s runs no step (srun) yet", id);
  if (!step[0] && found > 1) hvrun_die(NULL, 1, "Slurm job %s runs %d steps (%s): name one, --slurm-job %s.STEP", id, found, list, id);
  if (!step[0]) snprintf(step, sizeof step, "%s", first);
  char self[PATH_MAX];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sl <= 0) hvrun_die(NULL, 1, "cannot find hvrun's own path (/proc/self/exe): %s", strerror(errno));
  self[sl] = '\0';
  char jobarg[160], jid[80], nodearg[32];
  snprintf(jobarg, sizeof jobarg, "slurm-%s.%s", id, step);
  snprintf(jid, sizeof jid, "--jobid=%s", id);
  snprintf(nodearg, sizeof nodearg, "%d", nn);
  char *sr[] = {"srun", jid, "--overlap", "--mpi=none", "-N", nodearg, "--ntasks-per-node=1", "-n", nodearg,
                self, "--status", "--local", "--job", jobarg, "--raw", NULL};
  out = NULL;
  rc = run_capture(sr, &out, &len, SLURM_TIMEOUT_S, 0);
  if (rc != 0 || !out)
    hvrun_die(NULL, 1, "srun --jobid=%s --overlap ... hvrun --status --local failed (%s %d)", id,
              rc == 124 ? "timed out after" : "exit status", rc == 124 ? (int)SLURM_TIMEOUT_S : rc);
  m->live = 1;
  int lines = 0;
  for (char *line = out, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    if (line[0] != '{') continue;
    char src[256], err[1024];
    snprintf(src, sizeof src, "line %d of the nodes' answers (job %s)", ++lines, jobarg);
    if (doctor_load_raw_line(m, line, strlen(line), src, err, sizeof err) != 0) hvrun_die(NULL, 1, "%s", err);
  }
  free(out);
  if (!lines) hvrun_die(NULL, 1, "no rank of Slurm step %s.%s answered on its %d node%s (no status socket of job %s: is "
                                 "the flight recorder off, HV_FLIGHT_RECORDER_SIZE=0?)", id, step, nn, nn == 1 ? "" : "s", jobarg);
}

int doctor_status_run(const char *job, const char *slurm_job, int raw) {
  doctor_model_t m;
  doctor_model_init(&m);
  m.live = 1;
  if (slurm_job) slurm_status(slurm_job, &m);
  else {
    char dir[PATH_MAX];
    find_job_dir(job, dir, sizeof dir, raw);
    probe_job(dir, &m, raw);
    if (raw) return 0;
  }
  printf("job %s: %d rank%s\n", m.job ? m.job : (job ? job : "?"), m.world_size, m.world_size == 1 ? "" : "s");
  doctor_status_lines_print(&m);
  doctor_verdicts_print(&m, 2);
  doctor_model_free(&m);
  return 0;
}
