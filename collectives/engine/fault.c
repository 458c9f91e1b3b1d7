/* fault.c: what a rank finds out, and tells, when another rank fails, so that every
 * rank ends with one line naming the rank at fault and its own pending tensors,
 * instead of hanging, timing out on whichever peer it happened to wait for, or
 * saying "shut down" without a reason. The first error wins: every rank reports the
 * cause the first rank found, not the consequences that follow (a peer's exit).
 *
 *  - Lost peers on this host. Every rank's pid and process start time are exchanged
 *    at init; a peer on my host whose /proc/<pid>/stat shows that start time is
 *    watched: during any wait on peers longer than WATCH_INTERVAL_US, kill(pid, 0)
 *    failing with ESRCH means its process ended (killed, crashed, exited). Launchers
 *    reap their tasks at once (orted, slurmstepd), so a zombie does not hide it. The
 *    start time keeps out another process that happens to have the pid (ranks in
 *    separate PID namespaces on one host): such peers fall back to HV_TIMEOUT.
 *    Why not wait for MPI to notice: Open MPI's shared-memory transport never does,
 *    and launchers kill the survivors soon after a rank dies: mpirun sends SIGCONT
 *    at once, SIGTERM as soon as another rank exits (else after 1 s), then SIGKILL;
 *    srun --mpi=pmix cancels the step within about a second.
 *  - Stopped peers (SIGSTOP, a debugger): state T in /proc/<pid>/stat. A wait on
 *    peers longer than HV_STALL_CHECK_TIME warns (the stall inspector cannot: its
 *    negotiation round needs every rank), naming a stopped peer of this host and the
 *    tensors held up; past HV_STALL_SHUTDOWN_TIME the wait fails with HV_ERR_STALLED.
 *  - Notices. A rank whose engine stops for one of these (or for HV_TIMEOUT) logs its
 *    line, then sends {kind, subject rank} to every other rank on a communicator of
 *    its own, and fails its requests only once every other survivor has sent one too
 *    (at most 1 s): the first survivor to exit makes the launcher terminate the rest,
 *    so nobody exits before everybody has printed. Every engine keeps a receive
 *    posted there and tests it during long waits, so ranks on other nodes learn the
 *    cause within milliseconds and name it, rather than the live peer they waited on.
 *  - Shutdown reasons. When any rank calls hv_shutdown, every rank stops (the
 *    shutdown flag is an OR); the lowest rank that asked sends its last error, so
 *    the others fail their pending requests with that first error. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flight_recorder.h"
#include "hv_internal.h"

/* How often a long wait looks at its peers: cheap (one kill() per peer of the host,
 * one MPI_Test), and well inside the launchers' grace. */
#define WATCH_INTERVAL_US 10000.0
/* How long a rank that stopped on a fault waits for the other survivors' notices
 * before its requests fail (the program then typically exits). */
#define REPORT_WAIT_US 1000000.0

/* A notice is one constant int (its kind); its tag carries the rank that found the
 * fault (the origin) and the subject (the rank at fault, or none):
 *   tag = (origin + 1) * (size + 1) + (subject + 1)
 * (origin 0 when that would pass MPI_TAG_UB: the sender stands in). So no buffer of
 * ours has to outlive a send that MPI may hold after we give up, and a notice passed
 * on still names the rank that found the fault first. */
enum { NOTICE_NONE = 0, NOTICE_LOST = 1, NOTICE_STALLED = 2, NOTICE_TIMEOUT = 3, NOTICE_KINDS = 4 };
static const int32_t notice_kind[NOTICE_KINDS] = {0, 1, 2, 3};

_Thread_local hv_comm_t *hv__engine_thread_comm;

typedef struct hv__fault {
  int64_t (*ids)[2];  /* every rank's {pid, start time} */
  uint8_t *watched;   /* same host, same process as at init: kill(pid, 0) is meaningful */
  MPI_Comm mpi;       /* notices only */
  MPI_Request recv;   /* posted receive of a notice (engine thread only) */
  int32_t incoming;
  int tag_ub;         /* MPI_TAG_UB */
  uint8_t *heard;     /* ranks whose notice arrived */
  int kind, subject;  /* what this rank stopped for (NOTICE_*), and the rank at fault or -1 */
  int origin;         /* the rank that found it (this one, or a notice's origin) */
  int shutdown_by;    /* the rank whose hv_shutdown stopped the engine, or -1 */
  char shutdown_error[1024]; /* its last error ("" if none) */
} hv__fault_t;

/* State (field 3) and start time in clock ticks since boot (field 22) of a process;
 * 0 on success. The command name (field 2) may hold spaces and ')': skip to the last ')'. */
static int proc_stat(int64_t pid, char *state, int64_t *start) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ') return -1;
  p += 2;
  *state = *p;
  for (int field = 3; field < 22; field++) {
    p = strchr(p, ' ');
    if (!p) return -1;
    p++;
  }
  *start = strtoll(p, NULL, 10);
  return 0;
}

static int peer_gone(const hv__fault_t *f, int q) {
  return f->watched[q] && kill((pid_t)f->ids[q][0], 0) != 0 && errno == ESRCH;
}

/* The first stopped peer of this host, or -1. */
static int stopped_peer(hv_comm_t *comm) {
  hv__fault_t *f = comm->fault;
  for (int q = 0; f && q < comm->size; q++) {
    char state = 0;
    int64_t start;
    if (f->watched[q] && proc_stat(f->ids[q][0], &state, &start) == 0 && (state == 'T' || state == 't')) return q;
  }
  return -1;
}

static void stopped_text(hv_comm_t *comm, int q, char *out, size_t len) {
  if (q >= 0)
    snprintf(out, len, "rank %d on host %s (pid %lld) is stopped (SIGSTOP or a debugger)", q, comm->hosts[q],
             (long long)comm->fault->ids[q][0]);
  else
    snprintf(out, len, "a peer is stopped, hung or overloaded");
}

hv_result_t hv__fault_init(hv_comm_t *comm) {
  hv__fault_t *f = calloc(1, sizeof *f);
  comm->fault = f;
  if (f) {
    f->mpi = MPI_COMM_NULL;
    f->recv = MPI_REQUEST_NULL;
    f->shutdown_by = f->subject = f->origin = -1;
    f->ids = calloc((size_t)comm->size, sizeof *f->ids);
    f->watched = calloc((size_t)comm->size, 1);
    f->heard = calloc((size_t)comm->size, 1);
  }
  /* Out of memory here is this rank's alone: agree before the collectives below. */
  hv_result_t rc = f && f->ids && f->watched && f->heard
                       ? HV_SUCCESS
                       : hv__set_error(NULL, HV_ERR_NO_MEMORY, "out of memory creating a communicator");
  if ((rc = hv__init_agree(comm, rc)) != HV_SUCCESS) return rc;
  /* A killed peer leaves broken TCP connections behind, and Open MPI's next write on
   * one raises SIGPIPE, whose default action ends this rank at once and silently (seen
   * under srun, which, unlike mpirun, leaves the default in place): the write's EPIPE
   * is the better outcome, since the wait then names the lost peer. A handler the
   * program installed itself is left alone. */
  struct sigaction pipe_action;
  if (sigaction(SIGPIPE, NULL, &pipe_action) == 0 && pipe_action.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  int64_t me[2] = {(int64_t)getpid(), 0};
  char state;
  if (proc_stat(me[0], &state, &me[1])) me[1] = 0; /* no /proc: nobody watches me */
  if (MPI_Allgather(me, 2, MPI_INT64_T, f->ids, 2, MPI_INT64_T, comm->mpi) != MPI_SUCCESS)
    return hv__set_error(NULL, HV_ERR_MPI, "cannot exchange process ids at init");
  for (int q = 0; q < comm->size; q++) {
    int64_t start = 0;
    f->watched[q] = q != comm->rank && f->ids[q][1] != 0 && strcmp(comm->hosts[q], comm->hosts[comm->rank]) == 0 &&
                    proc_stat(f->ids[q][0], &state, &start) == 0 && start == f->ids[q][1];
  }
  if (MPI_Comm_dup(comm->mpi, &f->mpi) != MPI_SUCCESS) return hv__set_error(NULL, HV_ERR_MPI, "MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(f->mpi, MPI_ERRORS_RETURN);
  int *ub = NULL, found = 0;
  MPI_Comm_get_attr(f->mpi, MPI_TAG_UB, &ub, &found);
  f->tag_ub = found && ub ? *ub : 32767;
  if (MPI_Irecv(&f->incoming, 1, MPI_INT32_T, MPI_ANY_SOURCE, MPI_ANY_TAG, f->mpi, &f->recv) != MPI_SUCCESS)
    return hv__set_error(NULL, HV_ERR_MPI, "cannot post the receive of fault notices");
  return HV_SUCCESS;
}

void hv__fault_free(hv_comm_t *comm) {
  hv__fault_t *f = comm->fault;
  if (!f) return;
  /* The posted receive points into f: take it back from MPI first (cancelling an
   * unmatched receive is local). Should MPI not let go, f stays allocated rather
   * than freed under MPI's feet. */
  if (f->recv != MPI_REQUEST_NULL) {
    MPI_Cancel(&f->recv);
    int done = 0;
    double start = hv__now_us();
    while (!done && hv__now_us() - start < 100000.0)
      if (MPI_Test(&f->recv, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
    if (!done) return;
  }
  /* After a fatal error MPI may still hold notices on their way to dead ranks: leave
   * the communicator to the process's end, as comm.c does with its own. */
  if (comm->async_error == HV_SUCCESS && f->mpi != MPI_COMM_NULL) MPI_Comm_free(&f->mpi);
  free(f->heard);
  free(f->ids);
  free(f->watched);
  free(f);
  comm->fault = NULL;
}

/* Appends 'name' to a comma-separated list, or ", ..." once the list is full. */
static void list_name(char *out, size_t len, size_t *used, int *full, const char *name) {
  if (*full) return;
  if (*used + strlen(name) + 10 < len) {
    *used += (size_t)snprintf(out + *used, len - *used, "%s'%s'", *used ? ", " : "", name);
  } else {
    snprintf(out + *used, len - *used, ", ...");
    *full = 1;
  }
}

size_t hv__fault_pending_names(hv_comm_t *comm, char *out, size_t len, int with_exec, const struct hv_handle *queued) {
  size_t used = 0, count = 0;
  int full = 0;
  out[0] = '\0';
  for (size_t i = 0; with_exec && i < comm->exec_count; i++) {
    if (!comm->exec[i].handle) continue; /* completed earlier in the list: its caller's now */
    list_name(out, len, &used, &full, comm->exec[i].handle->name);
    count++;
  }
  for (size_t i = 0; i < comm->pending_len; i++) {
    if (!comm->pending_list[i]) continue; /* a hole (hv__pending_compact) */
    list_name(out, len, &used, &full, comm->pending_list[i]->name);
    count++;
  }
  for (const struct hv_handle *h = queued; h; h = h->next, count++) list_name(out, len, &used, &full, h->name);
  return count;
}

void hv__fault_stopped_note(hv_comm_t *comm, char *out, size_t len) {
  int q = stopped_peer(comm);
  out[0] = '\0';
  if (q >= 0) {
    out[0] = ';', out[1] = ' ';
    stopped_text(comm, q, out + 2, len - 2);
  }
}

/* The error of a fault this rank found, or learnt from rank `from`'s notice; the
 * engine thread records it for its own notices (hv__fault_report). */
static hv_result_t fault_error(hv_comm_t *comm, int engine, int kind, int subject, int from, const char *what) {
  hv__fault_t *f = comm->fault;
  if (engine) f->kind = kind, f->subject = subject, f->origin = from;
  char by[160] = "", stopped[200];
  if (from != comm->rank) snprintf(by, sizeof by, ", as rank %d on host %s found,", from, comm->hosts[from]);
  if (kind == NOTICE_LOST)
    return hv__set_error(comm, HV_ERR_ABORTED,
                         "rank %d on host %s (pid %lld) is gone: its process ended (killed, crashed or exited)%s "
                         "while rank %d waited for %s",
                         subject, comm->hosts[subject], (long long)f->ids[subject][0], by, comm->rank, what);
  stopped_text(comm, subject, stopped, sizeof stopped);
  if (kind == NOTICE_STALLED)
    return hv__set_error(comm, HV_ERR_STALLED,
                         "rank %d on host %s waited longer than HV_STALL_SHUTDOWN_TIME=%g s for its peers: %s "
                         "(rank %d was waiting for %s)",
                         from, comm->hosts[from], comm->config.stall_shutdown_s, stopped, comm->rank, what);
  return hv__set_error(comm, HV_ERR_TIMEOUT,
                       "rank %d on host %s waited longer than HV_TIMEOUT=%g s: a peer rank stopped answering: %s "
                       "(rank %d was waiting for %s)",
                       from, comm->hosts[from], comm->config.timeout_s, stopped, comm->rank, what);
}

/* Tests the posted receive; on a notice records its sender, and gives its kind,
 * subject and origin; re-posts, and returns 1. */
static int notice_arrived(hv_comm_t *comm, int *kind, int *subject, int *origin) {
  hv__fault_t *f = comm->fault;
  int got = 0, n = comm->size;
  MPI_Status st;
  if (f->recv == MPI_REQUEST_NULL || MPI_Test(&f->recv, &got, &st) != MPI_SUCCESS || !got) return 0;
  int k = f->incoming, s = st.MPI_TAG % (n + 1) - 1, o = st.MPI_TAG / (n + 1) - 1;
  if (MPI_Irecv(&f->incoming, 1, MPI_INT32_T, MPI_ANY_SOURCE, MPI_ANY_TAG, f->mpi, &f->recv) != MPI_SUCCESS)
    f->recv = MPI_REQUEST_NULL;
  if (st.MPI_SOURCE < 0 || st.MPI_SOURCE >= n || o >= n || k <= NOTICE_NONE || k >= NOTICE_KINDS ||
      (k == NOTICE_LOST && s < 0))
    return 0; /* not ours to understand: ignore */
  f->heard[st.MPI_SOURCE] = 1;
  *kind = k, *subject = s, *origin = o >= 0 ? o : st.MPI_SOURCE;
  return 1;
}

/* The error of a fault that explains a wait, or HV_SUCCESS: another rank's notice
 * (the first error wins; the engine thread only), or a watched peer whose process is
 * gone. */
static hv_result_t fault_found(hv_comm_t *comm, int engine, const char *what) {
  int kind, subject, origin;
  if (engine && notice_arrived(comm, &kind, &subject, &origin))
    return fault_error(comm, engine, kind, subject, origin, what);
  for (int q = 0; q < comm->size; q++)
    if (peer_gone(comm->fault, q)) {
      /* A peer that stopped on a fault exits only after its notice went out: that
       * notice, the first error, may still be on its way through MPI (a rank resumed
       * from SIGSTOP has not progressed for a while). Give it a few polls. */
      for (int i = 0; engine && i < 20; i++, usleep(500))
        if (notice_arrived(comm, &kind, &subject, &origin)) return fault_error(comm, engine, kind, subject, origin, what);
      return fault_error(comm, engine, NOTICE_LOST, q, comm->rank, what);
    }
  return HV_SUCCESS;
}

/* How long a rank whose MPI call failed listens for the notice that explains it. */
#define EXPLAIN_WAIT_US 500000.0

hv_result_t hv__fault_explain(hv_comm_t *comm, hv_result_t failure) {
  hv__fault_t *f = comm->fault;
  if (!f || failure != HV_ERR_MPI || f->kind != NOTICE_NONE) return failure;
  /* An MPI call that failed outright (not a wait that ran out of time) is most often
   * a connection broken by a peer that died on another host: no pid here to watch,
   * but the survivors on its host send their notice within milliseconds. Listening
   * that long lets this rank name the lost peer too, rather than report MPI's
   * "internal error" from a writev that got EPIPE. */
  char what[600];
  snprintf(what, sizeof what, "an MPI call, which failed (%s)", hv_comm_last_error(comm));
  for (double start = hv__now_us(); hv__now_us() - start < EXPLAIN_WAIT_US; usleep(1000)) {
    hv_result_t found = fault_found(comm, 1, what);
    if (found != HV_SUCCESS) return found;
  }
  return failure;
}

void hv__fault_report(hv_comm_t *comm, hv_result_t failure) {
  hv__fault_t *f = comm->fault;
  if (!f) return;
  if (f->kind == NOTICE_NONE && failure == HV_ERR_TIMEOUT) f->kind = NOTICE_TIMEOUT, f->subject = stopped_peer(comm);
  if (f->kind == NOTICE_NONE) return; /* a local error (memory, MPI): nothing others can use */
  if (f->kind == NOTICE_TIMEOUT && f->origin < 0) f->origin = comm->rank;
  static const char *const kind_names[NOTICE_KINDS] = {"none", "lost", "stalled", "timeout"};
  hv__fault_record(comm, kind_names[f->kind], f->subject);
  int n = comm->size, nsends = 0, subject = f->subject;
  long long tag = (long long)(f->origin + 1) * (n + 1) + (subject + 1);
  if (tag > f->tag_ub) tag = subject + 1;
  MPI_Request *sends = calloc((size_t)n, sizeof *sends), to_subject;
  if (!sends) return;
  for (int q = 0; q < n; q++)
    if (q != comm->rank && q != subject &&
        MPI_Isend(&notice_kind[f->kind], 1, MPI_INT32_T, q, (int)tag, f->mpi, &sends[nsends]) == MPI_SUCCESS)
      nsends++;
  /* A stopped subject gets it too, but is not waited for: should it be continued, it
   * learns why the others gave up on it (a lost one never will). */
  if (subject >= 0 && f->kind != NOTICE_LOST &&
      MPI_Isend(&notice_kind[f->kind], 1, MPI_INT32_T, subject, (int)tag, f->mpi, &to_subject) == MPI_SUCCESS)
    MPI_Request_free(&to_subject);
  double start = hv__now_us(), limit = REPORT_WAIT_US;
  if (comm->config.timeout_s > 0 && comm->config.timeout_s * 1e6 < limit) limit = comm->config.timeout_s * 1e6;
  int sent = 0, missing = n;
  while (hv__now_us() - start < limit) {
    int kind, s, origin;
    while (notice_arrived(comm, &kind, &s, &origin)) {
    }
    if (!sent && MPI_Testall(nsends, sends, &sent, MPI_STATUSES_IGNORE) != MPI_SUCCESS) sent = 1; /* give up on them */
    /* Every survivor has said it; a peer of this host that died meanwhile never will. */
    missing = 0;
    for (int q = 0; q < n; q++)
      if (q != comm->rank && q != subject && !f->heard[q] && !peer_gone(f, q)) missing++;
    if (sent && !missing) break;
    usleep(200);
  }
  if (missing || !sent)
    HV_LOG(HV__LOG_DEBUG, "fault notices: %d ranks not heard from, own notices %s after %.0f ms", missing,
           sent ? "sent" : "still in flight", (hv__now_us() - start) / 1000);
  free(sends); /* the handles only: unfinished requests stay with MPI, like the communicator */
}

hv_result_t hv__fault_poll(hv_comm_t *comm, hv__wait_watch_t *ww, double waited_us, const char *what) {
  hv__fault_t *f = comm->fault;
  /* A status request (flight_dump.c): the thread running rounds says what it waits on. */
  if (comm->flight && atomic_load_explicit(&comm->flight->snap_request, memory_order_relaxed) &&
      hv__engine_thread_comm == comm)
    hv__fr_answer(comm, what);
  /* The first look after WATCH_INTERVAL_US too: short waits (every small collective)
   * pay nothing, a dead or stopped peer makes the wait long anyway. */
  if (ww->next_us == 0) ww->next_us = WATCH_INTERVAL_US;
  if (!f || waited_us < ww->next_us) return HV_SUCCESS;
  ww->next_us = waited_us + WATCH_INTERVAL_US;
  /* Only the engine thread tests the notice request and reads the pending tables; a
   * user thread (hvbench's direct algorithm calls) still sees lost peers. */
  int engine = hv__engine_thread_comm == comm;
  HV_CHECK(fault_found(comm, engine, what));

  double check = comm->config.stall_check_s * 1e6, shut = comm->config.stall_shutdown_s * 1e6;
  if (!engine || (check <= 0 && shut <= 0)) return HV_SUCCESS;
  int warn = check > 0 && waited_us >= (ww->next_stall_us > 0 ? ww->next_stall_us : check);
  int fail = shut > 0 && waited_us >= shut;
  if (!warn && !fail) return HV_SUCCESS;
  if (warn) ww->next_stall_us = waited_us + check;
  int q = stopped_peer(comm);
  char stopped[200], names[512];
  stopped_text(comm, q, stopped, sizeof stopped);
  if (fail) {
    f->kind = NOTICE_STALLED;
    f->subject = q;
    f->origin = comm->rank;
    return hv__set_error(comm, HV_ERR_STALLED, "rank %d waited %.0f s for %s: %s; HV_STALL_SHUTDOWN_TIME=%g s passed",
                         comm->rank, waited_us * 1e-6, what, stopped, comm->config.stall_shutdown_s);
  }
  pthread_mutex_lock(&comm->mutex);
  size_t count = hv__fault_pending_names(comm, names, sizeof names, 1, comm->queue_head);
  pthread_mutex_unlock(&comm->mutex);
  char line[1400];
  snprintf(line, sizeof line, "stall: rank %d has waited %.0f s for %s: %s; tensors held up here (%zu): %s", comm->rank,
           waited_us * 1e-6, what, stopped, count, names);
  HV_LOG(HV__LOG_WARNING, "%s", line);
  hv__flight_stall(comm, line, what);
  return HV_SUCCESS;
}

hv_result_t hv__fault_shutdown_reason(hv_comm_t *comm, int want_shutdown) {
  hv__fault_t *f = comm->fault;
  int mine = want_shutdown ? comm->rank : comm->size, lowest = comm->size;
  MPI_Request req;
  HV_MPI_CHECK(&comm->host.errors, MPI_Iallreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm->mpi, &req));
  HV_CHECK(hv__wait_mpi(&comm->host, 1, &req, "negotiation (shutdown)", 1));
  if (lowest < 0 || lowest >= comm->size) return hv__set_error(comm, HV_ERR_INTERNAL, "shutdown by rank %d", lowest);
  if (lowest == comm->rank) snprintf(f->shutdown_error, sizeof f->shutdown_error, "%s", hv_comm_last_error(comm));
  HV_MPI_CHECK(&comm->host.errors, MPI_Ibcast(f->shutdown_error, (int)sizeof f->shutdown_error, MPI_CHAR, lowest, comm->mpi, &req));
  HV_CHECK(hv__wait_mpi(&comm->host, 1, &req, "negotiation (shutdown)", 1));
  f->shutdown_error[sizeof f->shutdown_error - 1] = '\0';
  f->shutdown_by = want_shutdown ? comm->rank : lowest;
  /* A rank that did not ask says here what the shutdown leaves unfinished (pending and
   * queued; the execution list still runs in this round), before the barrier: the
   * rank that asked returns from hv_shutdown past it and may exit, and under mpirun
   * the first rank to exit gets the others terminated at once. */
  if (!want_shutdown) {
    char why[1200], names[512];
    hv__fault_shutdown_why(comm, why, sizeof why);
    pthread_mutex_lock(&comm->mutex);
    size_t count = hv__fault_pending_names(comm, names, sizeof names, 0, comm->queue_head);
    pthread_mutex_unlock(&comm->mutex);
    if (count) HV_LOG(HV__LOG_ERROR, "%s; pending tensors (%zu): %s", why, count, names);
  }
  HV_MPI_CHECK(&comm->host.errors, MPI_Ibarrier(comm->mpi, &req));
  return hv__wait_mpi(&comm->host, 1, &req, "negotiation (shutdown)", 1);
}

int hv__fault_shutdown_why(hv_comm_t *comm, char *out, size_t len) {
  hv__fault_t *f = comm->fault;
  if (!f || f->shutdown_by < 0 || f->shutdown_by == comm->rank) { /* this rank asked too */
    snprintf(out, len, "hv_shutdown was called on this rank before it ran");
    return 0;
  }
  if (f->shutdown_error[0])
    snprintf(out, len, "rank %d on host %s shut down the communicator after its error: %s", f->shutdown_by,
             comm->hosts[f->shutdown_by], f->shutdown_error);
  else
    snprintf(out, len, "rank %d on host %s called hv_shutdown before it ran", f->shutdown_by,
             comm->hosts[f->shutdown_by]);
  return 1;
}

const char *hv__fault_dump_reason(hv_comm_t *comm, hv_result_t failure) {
  hv__fault_t *f = comm->fault;
  int kind = f ? f->kind : NOTICE_NONE;
  if (kind == NOTICE_LOST) return "peer_lost";
  if (kind == NOTICE_STALLED || failure == HV_ERR_STALLED) return "stall";
  if (kind == NOTICE_TIMEOUT || failure == HV_ERR_TIMEOUT) return "timeout";
  return "error";
}
