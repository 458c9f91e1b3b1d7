/* autotune.c: HV_AUTOTUNE=1 (autotune.h). Rank 0 runs a coordinate search over the
 * knobs that decide the engine's speed, one knob at a time with the others fixed at
 * their best so far: the fusion threshold, then the cycle time, then (on several
 * nodes, when neither HV_SMALL_ALLREDUCE_BYTES nor the link model set it) the size up
 * to which auto takes recursive doubling. Each candidate runs for a sample of at
 * least HV_AUTOTUNE_SAMPLE_SECONDS (0.5) and SAMPLE_ROUNDS rounds that did work,
 * scored by the bytes those rounds reduced per second of wall time (training compute
 * included, so the score is the job's own throughput); every candidate is tried in
 * three passes, one candidate after the other, and scored by the median of its three
 * samples: one sample on a busy machine can be slowed (or favoured) by anything, and
 * the passes spread a slow spell over all candidates. The first WARMUP samples are not
 * scored (first-step allocations, caches filling). Then the best is applied and kept
 * for the rest of the job.
 *
 * Only rank 0 measures and decides: the fusion threshold and the algorithm threshold
 * must be the same on every rank (fused batches and algorithms must match), so a
 * setting travels as a coordinator response and every rank applies it in the same
 * round. HV_AUTOTUNE_LOG=file.csv: one row per sample, and the choice. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune.h"

#define SAMPLE_ROUNDS 8 /* a training step may make only a few rounds: 2 s a sample at 4 a second */
#define WARMUP 2
#define PASSES 3 /* median3 below */
_Static_assert(PASSES == 3, "the score is the median of three samples");
#define MAX_CANDIDATES 8

enum { PHASE_WARMUP, PHASE_FUSION, PHASE_CYCLE, PHASE_SMALL, PHASE_DONE };
static const char *const phase_names[] = {"warmup", "fusion", "cycle", "small", "done"};

typedef struct setting {
  size_t fusion;   /* HV_FUSION_THRESHOLD, bytes */
  double cycle_ms; /* HV_CYCLE_TIME */
  size_t small;    /* HV_SMALL_ALLREDUCE_BYTES */
} setting_t;

struct hv__autotune {
  int phase, n, idx, pass, warm;
  setting_t cur, best;
  setting_t cand[MAX_CANDIDATES];
  double score[MAX_CANDIDATES][PASSES]; /* bytes/s of each pass */
  int tune_small;
  int pending;  /* cur waits to be sent */
  int awaiting; /* sent, not yet applied: nothing is measured meanwhile */
  double t_start;
  double bytes;
  int rounds, sample;
  FILE *log;
};

/* One tuner in the job: the world's rank 0 tunes the first communicator it is rank 0
 * of while none is tuning (the job's, before any sub-communicator), and alone writes
 * HV_AUTOTUNE_LOG; other communicators keep their settings. Released with it. */
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;
static int owner_taken;

hv_result_t hv__autotune_create(hv_comm_t *comm) {
  const char *on = getenv("HV_AUTOTUNE");
  if (!on || !*on || strcmp(on, "0") == 0) return HV_SUCCESS;
  if (strcmp(on, "1") != 0)
    return hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "HV_AUTOTUNE='%s' is not valid: expected 0 or 1", on);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (comm->rank != 0 || world_rank != 0) return HV_SUCCESS; /* one writer of HV_AUTOTUNE_LOG in the job */
  pthread_mutex_lock(&owner_lock);
  const int taken = owner_taken;
  owner_taken = 1;
  pthread_mutex_unlock(&owner_lock);
  if (taken) return HV_SUCCESS;
  struct hv__autotune *t = calloc(1, sizeof *t);
  if (!t) {
    pthread_mutex_lock(&owner_lock);
    owner_taken = 0;
    pthread_mutex_unlock(&owner_lock);
    return hv__set_error(NULL, HV_ERR_NO_MEMORY, "autotune state");
  }
  const char *path = getenv("HV_AUTOTUNE_LOG");
  if (path && *path) {
    t->log = fopen(path, "w");
    if (!t->log) {
      hv_result_t rc = hv__set_error(NULL, HV_ERR_INVALID_ARGUMENT, "HV_AUTOTUNE_LOG='%s': cannot open it: %s", path,
                                     strerror(errno));
      free(t);
      pthread_mutex_lock(&owner_lock);
      owner_taken = 0;
      pthread_mutex_unlock(&owner_lock);
      return rc;
    }
    fprintf(t->log, "sample,phase,fusion_threshold_bytes,cycle_time_ms,small_allreduce_bytes,rounds,bytes,seconds,"
                    "score_bytes_per_s\n");
    fflush(t->log);
  }
  t->cur.fusion = comm->config.fusion_threshold;
  t->cur.cycle_ms = comm->config.cycle_time_ms;
  t->cur.small = comm->host.small_allreduce_bytes;
  t->best = t->cur;
  t->tune_small = comm->local_size < comm->size && !comm->config.small_allreduce_given && !(comm->config.link_gbits > 0);
  t->phase = PHASE_WARMUP;
  comm->autotune = t;
  return HV_SUCCESS;
}

void hv__autotune_free(hv_comm_t *comm) {
  struct hv__autotune *t = comm->autotune;
  if (!t) return;
  if (t->log) fclose(t->log);
  free(t);
  comm->autotune = NULL;
  pthread_mutex_lock(&owner_lock);
  owner_taken = 0;
  pthread_mutex_unlock(&owner_lock);
}

/* The candidates of phase p around the best setting so far. */
static int candidates(struct hv__autotune *t, int p) {
  static const size_t fusions[] = {256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 128u << 20};
  static const double cycles[] = {0.1, 0.5, 1.0, 2.5, 5.0};
  static const size_t smalls[] = {16u << 10, 64u << 10, 256u << 10, 1u << 20};
  int n = 0;
  if (p == PHASE_FUSION)
    for (size_t i = 0; i < sizeof fusions / sizeof *fusions; i++) t->cand[n] = t->best, t->cand[n++].fusion = fusions[i];
  else if (p == PHASE_CYCLE)
    for (size_t i = 0; i < sizeof cycles / sizeof *cycles; i++) t->cand[n] = t->best, t->cand[n++].cycle_ms = cycles[i];
  else if (p == PHASE_SMALL)
    for (size_t i = 0; i < sizeof smalls / sizeof *smalls; i++) t->cand[n] = t->best, t->cand[n++].small = smalls[i];
  memset(t->score, 0, sizeof t->score);
  return n;
}

static void start_phase(struct hv__autotune *t, int p) {
  if (p == PHASE_SMALL && !t->tune_small) p = PHASE_DONE;
  t->phase = p;
  t->idx = t->pass = 0;
  if (p == PHASE_DONE) {
    t->cur = t->best;
    return;
  }
  t->n = candidates(t, p);
  t->cur = t->cand[0];
}

static double median3(const double *v) {
  const double lo = v[0] < v[1] ? v[0] : v[1], hi = v[0] < v[1] ? v[1] : v[0];
  return v[2] < lo ? lo : v[2] > hi ? hi : v[2];
}

/* A sample is over: score it and choose what runs next. */
static void end_sample(hv_comm_t *comm, struct hv__autotune *t, double seconds) {
  const double score = t->bytes / seconds;
  if (t->log) {
    fprintf(t->log, "%d,%s,%zu,%g,%zu,%d,%.0f,%.4f,%.0f\n", t->sample, phase_names[t->phase], t->cur.fusion,
            t->cur.cycle_ms, t->cur.small, t->rounds, t->bytes, seconds, score);
    fflush(t->log);
  }
  t->sample++;
  const setting_t before = t->cur;
  if (t->phase == PHASE_WARMUP) {
    if (++t->warm >= WARMUP) start_phase(t, PHASE_FUSION);
  } else {
    t->score[t->idx][t->pass] = score;
    if (++t->idx == t->n) t->idx = 0, t->pass++;
    if (t->pass < PASSES) {
      t->cur = t->cand[t->idx];
    } else {
      int b = 0;
      for (int i = 1; i < t->n; i++)
        if (median3(t->score[i]) > median3(t->score[b])) b = i;
      t->best = t->cand[b];
      start_phase(t, t->phase + 1);
      if (t->phase == PHASE_DONE) {
        HV_LOG(HV__LOG_INFO, "autotune: chose HV_FUSION_THRESHOLD=%zu HV_CYCLE_TIME=%g HV_SMALL_ALLREDUCE_BYTES=%zu after %d samples",
               t->best.fusion, t->best.cycle_ms, t->best.small, t->sample);
        if (t->log) {
          fprintf(t->log, "chosen,done,%zu,%g,%zu,,,,\n", t->best.fusion, t->best.cycle_ms, t->best.small);
          fflush(t->log);
        }
      }
    }
  }
  if (memcmp(&before, &t->cur, sizeof before) != 0) t->pending = 1;
  t->t_start = 0;
  t->bytes = 0;
  t->rounds = 0;
  (void)comm;
}

void hv__autotune_round(hv_comm_t *comm, size_t bytes) {
  struct hv__autotune *t = comm->autotune;
  if (!t || t->phase == PHASE_DONE || t->pending || t->awaiting) return;
  const double now = hv__coarse_now_us();
  if (t->t_start == 0) {
    /* A sample starts with a round that does work, after the setting is in place. */
    if (!bytes) return;
    t->t_start = now;
  }
  t->bytes += (double)bytes;
  if (bytes) t->rounds++;
  const double seconds = (now - t->t_start) * 1e-6;
  if (seconds >= comm->config.autotune_sample_s && t->rounds >= SAMPLE_ROUNDS) end_sample(comm, t, seconds);
}

int hv__autotune_pending(const hv_comm_t *comm) { return comm->autotune && comm->autotune->pending; }

void hv__autotune_encode(hv_comm_t *comm, hv__meta_t *meta) {
  struct hv__autotune *t = comm->autotune;
  memset(meta, 0, sizeof *meta);
  meta->coll = HV__COLL_BARRIER;
  meta->count = t->cur.fusion;
  meta->layout = t->cur.small;
  meta->ntensors = (uint64_t)(t->cur.cycle_ms * 1e6 + 0.5); /* ns */
  t->pending = 0;
  t->awaiting = 1;
}

void hv__autotune_apply(hv_comm_t *comm, const hv__meta_t *meta) {
  comm->config.fusion_threshold = (size_t)meta->count;
  comm->host.small_allreduce_bytes = (size_t)meta->layout;
  /* The background thread paces itself by the cycle time outside the round lock. */
  pthread_mutex_lock(&comm->mutex);
  comm->config.cycle_time_ms = (double)meta->ntensors * 1e-6;
  pthread_mutex_unlock(&comm->mutex);
  if (comm->autotune) comm->autotune->awaiting = 0;
}
