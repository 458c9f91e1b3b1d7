/* main.c: cifar_ddp, data-parallel WideResNet training over hv, the C counterpart of
 * the classic PyTorch DDP CIFAR example (same flags, same output lines).
 *
 * Flow: parse flags (before MPI, so a typo costs no job start), hv_init, load data on
 * every rank, build the model and, with --resume, load rank 0's newest checkpoint;
 * DDP broadcasts rank 0's state; then per epoch: train, validate over the whole test
 * set, print, checkpoint (rank 0), and stop early once the target accuracy held for
 * --patience epochs. Only rank 0 prints, except errors, which name their rank. Every
 * failure that one rank may see alone (a file, memory) goes through an agreement
 * allreduce, so all ranks leave together instead of hanging in the next collective. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cifar_args.h"
#include "cifar_ckpt.h"
#include "cifar_data.h"
#include "cifar_hook_state.h"
#include "cifar_peer.h"
#include "cifar_report.h"
#include "cifar_target.h"
#include "cifar_train.h"
#include "clock.h"
#include "error_report.h"
#include "hv.h"
#include "model_gpu.h"
#include "restart_mark.h"
#include "settings.h"
#include "straggler_note.h"

enum { MAX_EPOCH_RECORDS = 10001 }; /* --epochs is at most 10000 */

static int g_rank = 0;

/* The rank the launcher gave us, before MPI is up (flag errors print once). */
static int launcher_rank(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                     "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return atoi(v);
  }
  return 0;
}

/* The HV_* settings this program reads, strictly, before any data is loaded: the
 * trainer's (settings.h), HV_PROGRESS, HV_STRAGGLER_REPORT, and the tests' HV_CIFAR_CRASH_AT_STEP and
 * HV_CIFAR_CRASH_RANK. 0, or -1
 * with one line naming the variable, the value and what is accepted. */
static int check_env(char *err, size_t errlen) {
  trainer_settings_t set;
  if (trainer_settings_read(&set, err, errlen)) return -1;
  int straggler;
  if (straggler_setting(&straggler, err, errlen)) return -1;
  const char *progress = getenv("HV_PROGRESS");
  if (progress && *progress && strcmp(progress, "bar") && strcmp(progress, "lines") &&
      strcmp(progress, "auto")) {
    snprintf(err, errlen, "HV_PROGRESS='%s' is not valid: expected auto, bar or lines", progress);
    return -1;
  }
  const char *crash = getenv("HV_CIFAR_CRASH_AT_STEP");
  long long step;
  if (crash && *crash &&
      parse_int("HV_CIFAR_CRASH_AT_STEP", crash, 0, (long long)1 << 40, &step, err, errlen))
    return -1;
  const char *victim = getenv("HV_CIFAR_CRASH_RANK");
  if (victim && *victim && parse_int("HV_CIFAR_CRASH_RANK", victim, 0, 1 << 24, &step, err, errlen)) return -1;
  return 0;
}

/* Leaves the job: the failing rank(s) already printed; all ranks exit with code. */
static int leave(hv_comm_t *comm, int code) {
  hv_shutdown(comm);
  return code;
}

/* Agreement on ok across ranks; the lowest failing rank prints msg. 1 if all ok. */
static int all_ok(hv_comm_t *comm, int ok, const char *msg) {
  int bad = -1;
  const int r = cifar_train_agree(comm, ok, &bad);
  if (r < 0) {
    report_error(hv_comm_last_error(comm));
    return 0;
  }
  if (!r && bad == g_rank) report_error(msg);
  return r;
}

/* The peer checkpoints' hook, called by cifar_train_epoch after every step. */
typedef struct peer_hook {
  cifar_peer_t *peer;
  const cifar_epoch_t *hist;
  const int *n_hist;
} peer_hook_t;

static int after_step(void *ctx, cifar_train_t *t, int epoch, const double partial[4], char *err,
                      size_t errlen) {
  peer_hook_t *h = ctx;
  return cifar_peer_after_step(h->peer, t, epoch, h->hist, *h->n_hist, partial, err, errlen);
}

/* --eval-every: a validation inside an epoch, fed to the early-stopping streak and
 * the time to accuracy; the last result stands in for the epoch's validation when
 * it stops the run. */
typedef struct mid_eval_ctx {
  int verbose;
  cifar_target_t *target;
  cifar_progress_t *prog; /* the epoch's progress display */
  double val_loss, val_acc;
} mid_eval_ctx_t;

static int mid_eval(void *ctx, cifar_train_t *t, int epoch, int *stop, char *err, size_t errlen) {
  mid_eval_ctx_t *m = ctx;
  cifar_epoch_t e = {0};
  if (cifar_train_evaluate(t, &e, err, errlen)) return -1;
  const double now = now_s();
  *stop = cifar_target_feed(m->target, e.val_acc, t->step, now, t->validation_s);
  m->val_loss = e.val_loss;
  m->val_acc = e.val_acc;
  if (m->verbose) {
    if (m->prog->enabled && m->prog->tty) putchar('\n'); /* below the progress bar */
    printf("Step %lld (epoch %d): Validation Loss: %.4f, Validation Accuracy: %.4f, %.2f seconds "
           "since training started\n", t->step, epoch + 1, e.val_loss, e.val_acc, now - m->target->t_start);
    if (*stop)
      printf("Target accuracy %.4f reached for %d validation%s in a row: early stopping at step %lld\n",
             m->target->target, m->target->streak, m->target->streak > 1 ? "s" : "", t->step);
    fflush(stdout);
  }
  return 0;
}

static void print_start(const cifar_args_t *a, const cifar_run_info_t *info,
                        const cifar_data_t *d, const cifar_train_t *t) {
  printf("World size: %d\nNumber of nodes: %d\nRanks per node: %d\nDevice: %s\n", info->world,
         info->nodes, info->ranks_per_node, info->device);
  printf("Model: %s (WideResNet-%d-%d, %lld parameters)\n", a->model, a->depth, a->widen,
         info->n_params);
  printf("Dataset: %s from %s (%d training, %d test images of %dx%dx%d)\n", a->dataset,
         d->dir, d->train.n, d->test.n, d->train.c, d->train.h, d->train.w);
  printf("Global batch: %d (%d per rank%s), %d steps per epoch, lr %.6g (base %.6g, %s "
         "scaling, %.3g warm-up epochs, %s schedule)%s\n",
         info->global_batch, info->local_batch,
         a->micro_batches > 1 ? ", in micro-batches" : "", t->steps_per_epoch, info->lr_peak,
         a->base_lr, a->lr_linear_scaling ? "linear" : "no", a->warmup_epochs, a->lr_schedule,
         a->sync_bn ? ", SyncBatchNorm" : "");
  if (d->note[0]) printf("Note: %s\n", d->note);
  fflush(stdout);
}

int main(int argc, char **argv) {
  cifar_args_t a;
  char err[2048], warn[1024];
  const int pr = cifar_args_parse(argc, argv, &a, err, sizeof err);
  g_rank = launcher_rank();
  report_set_program("cifar_ddp");
  report_set_rank(g_rank);
  if (pr == 1) {
    if (g_rank == 0) fputs(cifar_args_usage(), stdout);
    return 0;
  }
  if (pr < 0) {
    if (g_rank == 0) report_error(err);
    return 2;
  }
  /* ddp.h has no compression knob: the engine reads HV_COMPRESSION at hv_init. An
   * explicit flag wins over the environment. */
  int compression_flag = 0;
  for (int i = 1; i < argc; i++) compression_flag |= !strcmp(argv[i], "--compression");
  if (compression_flag) setenv("HV_COMPRESSION", a.compression, 1);

  hv_comm_t *comm = NULL;
  hv_result_t hr = hv_init(&argc, &argv, &comm);
  if (hr != HV_SUCCESS) {
    /* hv_strerror says what failed (out of memory...), the last error names what. */
    snprintf(err, sizeof err, "hv_init failed: %s (%s)", hv_strerror(hr), hv_comm_last_error(NULL));
    report_error(err);
    return 1;
  }
  cifar_run_info_t info = {.device = "cpu"};
  hv_comm_rank(comm, &g_rank);
  report_set_rank(g_rank);
  hv_comm_size(comm, &info.world);
  hv_comm_local_size(comm, &info.ranks_per_node);
  hv_comm_cross_size(comm, &info.nodes);
  const int rank0 = g_rank == 0, verbose = rank0 && !a.quiet;

  if (a.batch_size < info.world) {
    if (rank0) {
      snprintf(err, sizeof err,
               "--batch-size %d is smaller than the %d ranks: the global batch is split "
               "across the ranks and each needs at least one image per step (use "
               "--batch-size %d or more)",
               a.batch_size, info.world, info.world);
      report_error(err);
    }
    return leave(comm, 2);
  }
  if (rank0 && a.amp && strcmp(a.device, "cuda")) {
    fprintf(stderr, "cifar_ddp: warning: --amp (FP16 mixed precision) runs on GPUs (--device cuda); "
            "on the CPU training stays in FP32\n");
  }
  if (!strcmp(a.device, "cuda")) {
    /* Before anything touches CUDA: each rank takes the GPU of its local rank. */
    int local = 0;
    hv_comm_local_rank(comm, &local);
    int ok = model_gpu_select(local, err, sizeof err) >= 0;
    if (!all_ok(comm, ok, err)) return leave(comm, 1);
    info.device = "cuda";
  }
  if (rank0 && a.batch_size % info.world) {
    fprintf(stderr, "cifar_ddp: warning: --batch-size %d does not split evenly over %d ranks: "
            "the global batch is %d\n", a.batch_size, info.world,
            a.batch_size / info.world * info.world);
  }

  cifar_data_t data;
  memset(&data, 0, sizeof data);
  int ok = check_env(err, sizeof err) == 0 &&
           cifar_data_load(a.dataset, a.data_dir, &data, err, sizeof err) == 0 &&
           cifar_data_limit(&data, a.train_size, a.test_size, err, sizeof err) == 0;
  if (!all_ok(comm, ok, err)) {
    cifar_data_free(&data);
    return leave(comm, 1);
  }
  int straggler_on = 0; /* HV_STRAGGLER_REPORT, checked above on every rank */
  straggler_setting(&straggler_on, err, sizeof err);
  cifar_train_t t;
  ok = cifar_train_init(&t, &a, comm, &data.train, &data.test, data.mean, data.std, err,
                        sizeof err) == 0;
  if (!all_ok(comm, ok, err)) {
    cifar_train_free(&t);
    cifar_data_free(&data);
    return leave(comm, 1);
  }

  /* Resume: rank 0 reads the checkpoint; DDP's broadcast hands it to the others. A job
   * that hvrun --restarts relaunched (HV_RESTART > 0) resumes by itself: from the
   * newest peer checkpoint a node holds in memory, else from --checkpoint-dir. */
  const int restart = restart_attempt();
  if (rank0) restart_mark_resumable();
  cifar_peer_t peer;
  cifar_epoch_t *hist = calloc(MAX_EPOCH_RECORDS, sizeof *hist);
  int n_hist = 0, start_epoch = 0, first_step = 0, resumed = 0;
  checkpoint_meta_t meta = {0};
  ok = hist != NULL && cifar_peer_init(&peer, a.peer_every, comm, err, sizeof err) == 0;
  if (!hist) snprintf(err, sizeof err, "out of memory");
  if (!all_ok(comm, ok, err)) goto fail_agreed;
  double *peer_sums = NULL; /* every rank's sums of the resumed epoch (4 per rank) */
  if (restart > 0 && peer.active) {
    int64_t disk_step = rank0 && a.checkpoint_dir ? cifar_ckpt_newest(a.checkpoint_dir) : -1;
    if (hv_broadcast(comm, "cifar.resume.disk", &disk_step, 1, HV_INT64, 0) != HV_SUCCESS) {
      report_error(hv_comm_last_error(comm));
      goto fail;
    }
    const long long peer_step = cifar_peer_gather(&peer, comm, disk_step, err, sizeof err);
    if (peer_step == -2) {
      report_error(err);
      goto fail;
    }
    if (peer_step >= 0 && rank0) {
      char path[4200];
      ok = (peer_sums = calloc((size_t)info.world * 4, sizeof *peer_sums)) != NULL;
      const int f = ok ? cifar_ckpt_resume(peer.dir, t.model, &t.opt, &meta, hist, MAX_EPOCH_RECORDS, &n_hist,
                                           path, sizeof path, err, sizeof err) : -1;
      if (f == 0) {
        resumed = 1;
        t.step = meta.step;
        const int have = cifar_peer_partial(&peer, meta.step, info.world, peer_sums);
        char disk[48] = "none";
        if (disk_step >= 0) snprintf(disk, sizeof disk, "step %lld", (long long)disk_step);
        printf("Restart %d: resuming from the peer checkpoint of step %lld in memory (%s; disk: %s)%s\n", restart,
               (long long)meta.step, path, disk, have ? "" : "; the epoch's sums restart (another world size)");
        fflush(stdout);
      } else {
        fprintf(stderr, "cifar_ddp: restart %d: the peer checkpoint of step %lld is not usable (%s): %s\n", restart,
                peer_step, ok ? err : "out of memory",
                a.checkpoint_dir ? "resuming from --checkpoint-dir" : "no --checkpoint-dir: starting from scratch");
        ok = 1;
      }
    }
  }
  if (ok && rank0 && !resumed && (a.resume || restart > 0) && a.checkpoint_dir) {
    char path[4200];
    const int f = cifar_ckpt_resume(a.checkpoint_dir, t.model, &t.opt, &meta, hist,
                                    MAX_EPOCH_RECORDS, &n_hist, path, sizeof path, err,
                                    sizeof err);
    if (f < 0) ok = 0;
    else if (f == 1) {
      fprintf(stderr, "cifar_ddp: %s: no checkpoint in %s yet, starting from scratch\n",
              a.resume ? "--resume" : "restart", a.checkpoint_dir);
    } else {
      t.step = meta.step;
      if (verbose) {
        printf("Resuming from %s: %lld epochs and %lld steps done\n", path,
               (long long)meta.epoch, (long long)meta.step);
      }
    }
  } else if (ok && rank0 && !resumed && restart > 0) {
    fprintf(stderr, "cifar_ddp: restart %d: no peer checkpoint and no --checkpoint-dir: starting from scratch\n",
            restart);
  }
  /* Each rank's sums of the interrupted epoch (zeros unless rank 0 has them). */
  int64_t have_sums = peer_sums != NULL;
  if (hv_broadcast(comm, "cifar.resume.has_partial", &have_sums, 1, HV_INT64, 0) != HV_SUCCESS) {
    report_error(hv_comm_last_error(comm));
    goto fail;
  }
  if (have_sums) {
    double *table = rank0 ? peer_sums : calloc((size_t)info.world * 4, sizeof *table);
    if (!table || hv_broadcast(comm, "cifar.resume.partial", table, (size_t)info.world * 4, HV_FLOAT64, 0) != HV_SUCCESS) {
      report_error(table ? hv_comm_last_error(comm) : "out of memory");
      goto fail;
    }
    memcpy(t.resume_partial, table + 4 * g_rank, sizeof t.resume_partial);
    t.has_resume_partial = table[4 * g_rank + 2] > 0;
    if (!rank0) free(table);
  }
  free(peer_sums);
  peer_hook_t hook = {&peer, hist, &n_hist};
  if (peer.active) t.after_step = after_step, t.after_step_ctx = &hook;
  /* Unwritable output folders fail now, not after the first epoch. */
  if (ok && rank0 && a.checkpoint_dir)
    ok = cifar_report_mkdirs(a.checkpoint_dir, err, sizeof err) == 0;
  if (ok && rank0 && a.results) ok = cifar_report_mkdirs(a.results, err, sizeof err) == 0;
  if (!all_ok(comm, ok, err)) goto fail_agreed;
  ok = cifar_train_start_ddp(&t, err, sizeof err) == 0;
  if (!all_ok(comm, ok, err)) goto fail_agreed;
  /* A resumed run's comm-hook state (each rank its own), where the checkpoint folder
   * has it for this step; else the hook starts afresh, which changes the results. */
  if (t.step > 0 && a.comm_hook && ddp_hook_state_count(t.ddp) > 0) {
    char why[1024] = "no --checkpoint-dir (a peer checkpoint in memory does not hold it)";
    if (!a.checkpoint_dir ||
        cifar_hook_state_load(a.checkpoint_dir, t.ddp, a.comm_hook, g_rank, info.world, t.step, why, sizeof why))
      fprintf(stderr, "cifar_ddp: warning: rank %d: --comm-hook %s starts with empty state (error feedback, Q) "
              "after the resume: %s\n", g_rank, a.comm_hook, why);
  }

  /* Where the checkpoint left off (rank 0 read it): the epoch, the step inside it
   * (a --max-steps checkpoint), and the early-stopping streak of the epoch records. */
  int streak = 0;
  for (int i = 0; i < n_hist; i++) streak = hist[i].val_acc >= a.target_accuracy ? streak + 1 : 0;
  const long long done = n_hist > 0 ? hist[n_hist - 1].steps : 0;
  int64_t sv[3] = {streak, meta.epoch, t.step > done ? t.step - done : 0};
  if (hv_broadcast(comm, "cifar.resume.position", sv, 3, HV_INT64, 0) != HV_SUCCESS) {
    report_error(hv_comm_last_error(comm));
    goto fail;
  }
  streak = (int)sv[0];
  start_epoch = (int)sv[1];
  /* A different --batch-size after the resume: the partial epoch restarts. */
  first_step = sv[2] < t.steps_per_epoch ? (int)sv[2] : 0;
  info.n_params = (long long)t.model->n_params;
  info.local_batch = t.local_batch;
  info.global_batch = t.local_batch * info.world;
  info.steps_per_epoch = t.steps_per_epoch;
  info.train_images = data.train.n;
  info.test_images = data.test.n;
  info.lr_peak = lr_peak(&t.sched);
  info.data_dir = data.dir;
  info.resumed_from_epoch = start_epoch;
  if (verbose) print_start(&a, &info, &data, &t);

  const double t_start = now_s();
  int stopped_by_steps = 0;
  cifar_target_t target;
  cifar_target_start(&target, a.target_accuracy, a.patience, streak, t_start);
  mid_eval_ctx_t mid = {verbose, &target, NULL, 0, 0};
  if (a.eval_every > 0) t.mid_eval = mid_eval, t.mid_eval_ctx = &mid;
  for (int epoch = start_epoch; epoch < a.epochs && !info.stopped_early; epoch++) {
    cifar_progress_t prog;
    cifar_progress_start(&prog, verbose, epoch + 1, a.epochs, t.steps_per_epoch, now_s());
    mid.prog = &prog;
    cifar_epoch_t e = {0};
    const int first = epoch == start_epoch ? first_step : 0;
    unsigned long long sent0, dense0, sent1, dense1;
    ddp_comm_bytes(t.ddp, &sent0, &dense0);
    const int taken = cifar_train_epoch(&t, epoch, first, a.max_steps, &prog, &e, err, sizeof err);
    ddp_comm_bytes(t.ddp, &sent1, &dense1);
    cifar_progress_end(&prog);
    if (taken < 0) {
      report_error(err);
      goto fail;
    }
    const int partial = first + taken < t.steps_per_epoch;
    if (partial && taken == 0 && !t.stop_requested) {
      stopped_by_steps = 1;
      break;
    }
    if (t.stop_requested) { /* --eval-every's validation at this very step */
      e.val_loss = mid.val_loss;
      e.val_acc = mid.val_acc;
    } else if (cifar_train_evaluate(&t, &e, err, sizeof err)) {
      report_error(err);
      goto fail;
    }
    /* HV_STRAGGLER_REPORT=1: the slowest rank of the epoch's steps (collective). */
    char straggler[96] = "";
    if (straggler_on) {
      hv_straggler_t sr;
      if (hv_straggler_report(comm, &sr) != HV_SUCCESS) {
        report_error(hv_comm_last_error(comm));
        goto fail;
      }
      straggler_format(straggler, sizeof straggler, sr.rank, sr.lag_ms, (unsigned long long)sr.steps);
    }
    if (verbose) {
      printf("Epoch %d/%d completed in %.2f seconds%s%s\n", epoch + 1, a.epochs, e.seconds,
             t.stop_requested ? " (stopped early)" : partial ? " (stopped at --max-steps)" : "", straggler);
      printf("Validation Loss: %.4f, Validation Accuracy: %.4f\n", e.val_loss, e.val_acc);
      printf("Epoch Throughput: %.2f images/second\n", e.images_per_s);
      /* --comm-hook: what each rank contributed to the gradient collectives per step
       * (its messages, not what a ring forwards) against float32 buckets. */
      if (a.comm_hook && taken > 0)
        printf("Comm hook %s: %.0f bytes sent per step, compression ratio %.2fx, %.1f ms per step\n", a.comm_hook,
               (double)(sent1 - sent0) / taken, sent1 > sent0 ? (double)(dense1 - dense0) / (double)(sent1 - sent0) : 0.0,
               1e3 * e.seconds / taken);
      if (t.amp)
        printf("Mixed precision: loss scale %g, %lld step%s skipped for inf/NaN gradients so far\n",
               (double)t.scaler.scale, t.amp_skipped, t.amp_skipped == 1 ? "" : "s");
      fflush(stdout);
    }
    if (n_hist < MAX_EPOCH_RECORDS) hist[n_hist++] = e;
    if (t.stop_requested) {
      info.stopped_early = 1;
    } else if (!partial && cifar_target_feed(&target, e.val_acc, t.step, now_s(), t.validation_s)) {
      info.stopped_early = 1;
      if (verbose) {
        printf("Target accuracy %.4f reached for %d %s in a row: early stopping after "
               "epoch %d\n", a.target_accuracy, target.streak,
               a.eval_every > 0 ? (target.streak > 1 ? "validations" : "validation")
                                : (target.streak > 1 ? "epochs" : "epoch"), epoch + 1);
      }
    }
    if (a.checkpoint_dir) {
      meta.epoch = partial ? epoch : epoch + 1;
      meta.step = t.step;
      meta.lr = t.opt.lr;
      ok = !rank0 ||
           cifar_ckpt_save(a.checkpoint_dir, t.model, &t.opt, &meta, hist, n_hist, err,
                           sizeof err) == 0;
      /* every rank: its comm hook's state (error feedback), for an equivalent resume */
      if (ok && a.comm_hook)
        ok = cifar_hook_state_save(a.checkpoint_dir, t.ddp, a.comm_hook, g_rank, info.world, t.step, err,
                                   sizeof err) == 0;
      if (!all_ok(comm, ok, err)) goto fail_agreed;
    }
    if (!partial && cifar_peer_after_epoch(&peer, &t, epoch + 1, hist, n_hist, err, sizeof err)) {
      report_error(err);
      goto fail;
    }
    if (t.stop_requested) break;
    if (partial) {
      stopped_by_steps = 1;
      break;
    }
  }
  info.total_seconds = now_s() - t_start;
  info.time_to_target_s = target.reached_s;
  info.time_to_target_train_s = target.reached_train_s;
  info.target_step = target.reached_step;
  double img = 0, secs = 0;
  for (int i = 0; i < n_hist; i++) {
    if (hist[i].epoch <= start_epoch && start_epoch > 0) continue; /* before the resume */
    img += (double)hist[i].images;
    secs += hist[i].seconds;
  }
  info.images_per_s = secs > 0 ? img / secs : 0;
  if (rank0) {
    if (stopped_by_steps && verbose) printf("Stopped: --max-steps %lld reached\n", a.max_steps);
    printf("Training completed in %.2f seconds\n", info.total_seconds);
    printf("Average Throughput: %.2f images/second\n", info.images_per_s);
    if (target.reached_s >= 0)
      printf("Time to accuracy %.4f: %.2f seconds (step %lld; %.2f seconds without the validations)\n",
             a.target_accuracy, target.reached_s, target.reached_step, target.reached_train_s);
    if (n_hist > 0) {
      printf("Final Validation Loss: %.4f, Validation Accuracy: %.4f\n",
             hist[n_hist - 1].val_loss, hist[n_hist - 1].val_acc);
    }
    printf("Number of nodes: %d\nRanks per node: %d\nTotal ranks: %d\n", info.nodes,
           info.ranks_per_node, info.world);
    fflush(stdout);
  }
  if (a.results) {
    ok = !rank0 || cifar_report_write_results(a.results, &a, &info, hist, n_hist, warn,
                                              sizeof warn, err, sizeof err) == 0;
    if (rank0 && ok && warn[0]) fprintf(stderr, "cifar_ddp: warning: %s\n", warn);
    if (!all_ok(comm, ok, err)) goto fail_agreed;
    if (verbose) printf("Results: %s/results.json, results.csv%s\n", a.results,
                        a.plots && !warn[0] ? ", loss.png, accuracy.png, throughput.png" : "");
  }
  free(hist);
  cifar_peer_finish(&peer);
  cifar_train_free(&t);
  cifar_data_free(&data);
  return leave(comm, 0);

fail_agreed:
  /* Every rank knows and leaves here together: hv can shut down cleanly. */
  free(hist);
  cifar_train_free(&t);
  cifar_data_free(&data);
  return leave(comm, 1);

fail:
  /* A collective failed or a rank left: shutting hv down cleanly could wait on a dead
   * peer, so leave at once; the launcher ends the other ranks. */
  fflush(stdout);
  exit(1);
}
