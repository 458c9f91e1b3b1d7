/* doctor_server.c: the per-process status server of the flight recorder
 * (tools/hvrun/FLIGHT_RECORDER.md, "Files"): one thread, started with the first live
 * communicator that has a recorder and stopped with the last, serving
 * $HV_STATUS_DIR/<job>/rank<W>.sock: each connection of a peer of our uid
 * (SO_PEERCRED) gets one document (reason "status"), then EOF. The same thread writes
 * the SIGUSR1 dump: the handler (installed only where the program has none, and not
 * with HV_FLIGHT_RECORDER_SIGNAL=0) writes one byte to a pipe, nothing else.
 * Simulated builds (threadless, ranks inside the simulator) have no server. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "flight_recorder.h"

#if HV_SIMULATED
void hv__doctor_sync(int sigusr1) { (void)sigusr1; }
#else

static pthread_mutex_t server_lock = PTHREAD_MUTEX_INITIALIZER;
static int running;
static pthread_t server;
static int listen_fd = -1, stop_pipe[2] = {-1, -1}, sig_pipe[2] = {-1, -1};
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)], pid_path[1100], sock_dir[900];
static atomic_int sig_fd = -1; /* the handler's end of sig_pipe, or -1 */
static int handler_installed;

static void on_sigusr1(int sig) {
  (void)sig;
  int saved = errno, fd = atomic_load(&sig_fd);
  if (fd >= 0) {
    char c = 1;
    ssize_t ignored = write(fd, &c, 1);
    (void)ignored;
  }
  errno = saved;
}

static void warn(const char *what, const char *path, int err) {
  char line[1400];
  snprintf(line, sizeof line, "hv: rank %d: warning: no status socket: %s%s%s%s%s\n", hv__flight_world_rank(), what,
           *what ? " " : "", path, err ? ": " : "", err ? strerror(err) : "");
  ssize_t ignored = write(2, line, strlen(line));
  (void)ignored;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w, n -= (size_t)w;
  }
  return 0;
}

static void answer(int fd) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) return;
  /* A client that stops reading must not hold the thread (and hv_shutdown) long. */
  struct timeval limit = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  size_t n = 0;
  char *doc = hv__flight_document("status", "", &n);
  if (doc) write_all(fd, doc, n);
  free(doc);
}

static void *serve(void *arg) {
  (void)arg;
  prctl(PR_SET_NAME, "hv-status", 0, 0, 0);
  for (;;) {
    struct pollfd p[3] = {{stop_pipe[0], POLLIN, 0}, {listen_fd, POLLIN, 0}, {sig_pipe[0], POLLIN, 0}};
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[0].revents) break;
    if (p[2].revents & POLLIN) {
      char drain[64];
      while (read(sig_pipe[0], drain, sizeof drain) > 0) {
      }
      hv__flight_dump(NULL, "signal", "SIGUSR1");
    }
    if (p[1].revents & POLLIN) {
      int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0) {
        answer(fd);
        close(fd);
      }
    }
  }
  return NULL;
}

/* mkdir -p, 0700 for what it creates. */
static int make_dirs(char *p) {
  for (char *s = p + 1;; s++)
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      int bad = mkdir(p, 0700) != 0 && errno != EEXIST;
      *s = c;
      if (bad) return -1;
      if (!c) return 0;
    }
}

/* The listening socket, or -1 (with a warning: the job runs on without one). */
static int open_socket(void) {
  char *dir = sock_dir;
  const char *v = getenv("HV_STATUS_DIR"), *tmp = getenv("TMPDIR");
  if (v && *v) snprintf(dir, sizeof sock_dir, "%s/%s", v, hv__flight_job());
  else snprintf(dir, sizeof sock_dir, "%s/hv-%u/%s", tmp && *tmp ? tmp : "/tmp", (unsigned)getuid(), hv__flight_job());
  char why[1100];
  if (make_dirs(dir)) {
    warn("cannot create", dir, errno);
    return -1;
  }
  if (hv__flight_own_dir(dir, why, sizeof why)) {
    warn("", why, 0);
    return -1;
  }
  int w = hv__flight_world_rank();
  if (snprintf(sock_path, sizeof sock_path, "%s/rank%d.sock", dir, w) >= (int)sizeof sock_path) {
    warn("the path is too long for a Unix socket (set HV_STATUS_DIR shorter):", dir, 0);
    sock_path[0] = '\0';
    return -1;
  }
  snprintf(pid_path, sizeof pid_path, "%s/rank%d.pid", dir, w);
  struct sockaddr_un addr = {0};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, sock_path, strlen(sock_path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    warn("socket() failed for", sock_path, errno);
    return -1;
  }
  /* A socket left by a process that is gone refuses connections: replace it. */
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0) {
    warn("another live process serves", sock_path, 0);
    close(fd);
    sock_path[0] = '\0';
    return -1;
  }
  unlink(sock_path);
  mode_t old = umask(0177); /* the socket is created 0600 */
  int bad = bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0;
  umask(old);
  if (bad || listen(fd, 16) != 0) {
    warn("cannot listen on", sock_path, errno);
    close(fd);
    sock_path[0] = '\0';
    return -1;
  }
  int pf = open(pid_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (pf >= 0) {
    char text[32];
    int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    ssize_t ignored = write(pf, text, (size_t)n);
    (void)ignored;
    close(pf);
  }
  return fd;
}

static void close_pipe(int p[2]) {
  if (p[0] >= 0) close(p[0]);
  if (p[1] >= 0) close(p[1]);
  p[0] = p[1] = -1;
}

static void start(int sigusr1) {
  if (pipe2(stop_pipe, O_CLOEXEC) != 0) return;
  if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    close_pipe(stop_pipe);
    return;
  }
  listen_fd = open_socket();
  if (pthread_create(&server, NULL, serve, NULL) != 0) {
    if (listen_fd >= 0) close(listen_fd), unlink(sock_path), unlink(pid_path);
    listen_fd = -1;
    close_pipe(stop_pipe);
    close_pipe(sig_pipe);
    return;
  }
  running = 1;
  atomic_store(&sig_fd, sig_pipe[1]);
  /* Never replace a handler the program installed (nor an ignored SIGUSR1). */
  struct sigaction old;
  if (sigusr1 && sigaction(SIGUSR1, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigusr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    handler_installed = sigaction(SIGUSR1, &sa, NULL) == 0;
  }
}

static void stop(void) {
  atomic_store(&sig_fd, -1);
  if (handler_installed) {
    /* Ours still (the program may have installed its own since): the default again. */
    struct sigaction now;
    if (sigaction(SIGUSR1, NULL, &now) == 0 && !(now.sa_flags & SA_SIGINFO) && now.sa_handler == on_sigusr1)
      signal(SIGUSR1, SIG_DFL);
    handler_installed = 0;
  }
  char c = 1;
  ssize_t ignored = write(stop_pipe[1], &c, 1);
  (void)ignored;
  pthread_join(server, NULL);
  running = 0;
  if (listen_fd >= 0) {
    close(listen_fd);
    unlink(sock_path);
    unlink(pid_path);
    rmdir(sock_dir); /* the job's directory, once its last rank has gone */
    listen_fd = -1;
  }
  close_pipe(stop_pipe);
  close_pipe(sig_pipe);
}

void hv__doctor_sync(int sigusr1) {
  pthread_mutex_lock(&server_lock);
  int want = hv__flight_live_count() > 0;
  if (want && !running) start(sigusr1);
  else if (!want && running) stop();
  pthread_mutex_unlock(&server_lock);
}
#endif
