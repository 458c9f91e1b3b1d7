/* doctor.h: the in-memory model of a job's flight-recorder documents (dumps or live
 * status answers, FLIGHT_RECORDER.md), shared by the pieces of `hvrun --analyze` and
 * `hvrun --status`:
 *
 *   doctor_load.c     reads and validates documents (jansson) into the model
 *   doctor_verdict.c  the verdicts (one family per doctor_verdict_*.c, doctor_verdict.h)
 *   doctor_evidence.c the evidence printed after them, and --status's lines
 *   doctor_status.c   --status: asks the ranks' status sockets (locally or through
 *                     srun on a Slurm step's nodes) and fills the model
 *
 * Times are CLOCK_REALTIME seconds as in the documents; NAN where a document has null.
 * Ranks in the model are world ranks; communicator ranks appear only inside comms. */
#ifndef HVRUN_DOCTOR_H
#define HVRUN_DOCTOR_H

#include <stddef.h>

#define DOCTOR_FORMAT "hv-flight-recorder"
#define DOCTOR_VERSION 1
/* What a rank that cannot answer for itself looks like from outside (--status). */
#define DOCTOR_PROBE_FORMAT "hv-status-probe"

typedef struct doctor_event {
  long long seq, count, bytes;
  char *name, *coll, *dtype, *algo, *state, *error;
  int ordered, device;
  double t_submit, t_negotiated, t_started, t_finished;
} doctor_event_t;

typedef struct doctor_pending {
  char *name, *coll;
  double t_submit;
} doctor_pending_t;

/* One entry of rank 0's coordinator.waiting (communicator ranks). */
typedef struct doctor_cwait {
  char *name, *coll;
  int *submitted_by, nsubmitted;
  int *missing, nmissing;
  double first_seen;
} doctor_cwait_t;

typedef struct doctor_comm {
  int index, rank, size;
  char *phase, *waiting, *error;
  double since;
  int waiting_peer;
  long long submitted, completed;
  doctor_pending_t *pending;
  int npending;
  doctor_event_t *last_completed; /* NULL when the document has null */
  int has_coordinator;
  doctor_cwait_t *cwait;
  int ncwait;
  doctor_event_t *events; /* oldest first */
  int nevents;
} doctor_comm_t;

/* What --status found out about a rank's process when its socket did not answer. */
typedef enum {
  DOCTOR_PROC_ANSWERED = 0, /* a document came back (or a dump was read) */
  DOCTOR_PROC_NONE,         /* nothing known: no dump, no socket */
  DOCTOR_PROC_GONE,         /* stale socket or pid file: the process no longer exists */
  DOCTOR_PROC_STOPPED,      /* /proc says T or t: SIGSTOP or a debugger */
  DOCTOR_PROC_BUSY,         /* alive, running, but no answer within the timeout */
  DOCTOR_PROC_NO_SOCKET,    /* process alive (pid file) but its socket is gone: hv_shutdown */
} doctor_proc_t;

typedef struct doctor_rank {
  int present;        /* 1 when a document of this rank was read */
  char source[1024];  /* where it came from (a path, or "the status socket of ...") */
  char *job, *host, *hv_version, *reason, *reason_detail;
  long long pid;
  double time;
  doctor_comm_t *comms;
  int ncomms;
  /* --status only */
  doctor_proc_t proc;
  char proc_detail[256]; /* e.g. "process state T", "pid 4242 no longer exists" */
  char probe_host[64];   /* the host that probed it (Slurm: the node) */
  long long probe_pid;
} doctor_rank_t;

typedef struct doctor_model {
  char *job;            /* of the first document read; all must agree */
  int version;          /* likewise */
  char first_source[1024];
  int doc_world_size;   /* world_size of the documents (0 before the first) */
  int world_size;       /* from the documents (or the sockets found, when none answered) */
  doctor_rank_t *ranks; /* world_size entries, by world rank */
  int ndocs;
  int live;             /* 1 for --status (process states known), 0 for --analyze */
} doctor_model_t;

/* doctor_load.c. An empty model; then each function below returns 0, or -1 with one
 * line naming the cause in err. */
void doctor_model_init(doctor_model_t *m);
/* Adds one document (text of len bytes) read from source. */
int doctor_load_doc(doctor_model_t *m, const char *text, size_t len, const char *source, char *err, size_t errlen);
/* Reads every DIR/hv-flight.*.json (only those of job when not NULL); DIR may also be
 * one dump file. An empty DIR, an unreadable or invalid dump, mixed jobs or versions,
 * duplicate ranks are errors. */
int doctor_load_dir(doctor_model_t *m, const char *dir, const char *job, char *err, size_t errlen);
/* Makes room for world rank w (sockets found without documents). */
int doctor_model_reserve(doctor_model_t *m, int world_size, char *err, size_t errlen);
void doctor_model_free(doctor_model_t *m);
/* "hv-flight-recorder" document or a probe line (DOCTOR_PROBE_FORMAT) from --raw
 * output of another node: fills the model either way. */
int doctor_load_raw_line(doctor_model_t *m, const char *line, size_t len, const char *source, char *err,
                         size_t errlen);

/* doctor_verdict.c, doctor_verdict_common.c (doctor_ranks_text), doctor_evidence.c
 * (doctor_status_lines_print) */
/* Writes ranks as compact ranges ("0-3", "0,2-3") of the sorted, distinct ranks. */
void doctor_ranks_text(const int *ranks, int n, char *out, size_t len);
/* Prints the verdict lines ("verdict: ...") and after them, with evidence 1, each
 * rank's state and the cross-rank picture (names submitted by some ranks only), with
 * evidence 2 the picture only. Returns the number of verdict lines. */
int doctor_verdicts_print(const doctor_model_t *m, int evidence);
/* --status: one line per rank (state, since, pending, wait, last completed). */
void doctor_status_lines_print(const doctor_model_t *m);

#endif /* HVRUN_DOCTOR_H */
