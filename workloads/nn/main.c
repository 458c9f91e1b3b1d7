/* main.c: mnist_nn, distributed bagging + random search of the study's small CNN on
 * MNIST, on hv.
 *
 * Every rank loads the data and computes the same k-fold split. Bootstraps are handed
 * out dynamically (nn_sched: hv allgather "ticks"), each computed start to end by one
 * rank from its own derived seed (nn_boot). Results go into per-bootstrap tables that
 * are zero except where this rank worked, so one hv allreduce (sum) per table gathers
 * them exactly; rank 0 then votes, writes the CSVs, figures and report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "data_cifar.h"
#include "data_dirs.h"
#include "data_mnist.h"
#include "error_report.h"
#include "hv.h"
#include "nn_args.h"
#include "nn_boot.h"
#include "nn_journal.h"
#include "nn_ood.h"
#include "nn_plan.h"
#include "nn_report.h"
#include "nn_sched.h"
#include "restart_mark.h"
#include "settings.h"
#include "straggler_note.h"

static int g_rank = 0;

/* Leaves the job after a failure every rank agreed on: hv shut down, exit code 1.
 * exit, not a return from main: what main still holds stays reachable, so the
 * LeakSanitizer build reports no leak on these ends. */
static void leave_job(hv_comm_t *comm) __attribute__((noreturn));
static void leave_job(hv_comm_t *comm) {
  hv_shutdown(comm);
  exit(1);
}

static void hv_check(hv_comm_t *comm, hv_result_t r, const char *what) {
  if (r == HV_SUCCESS) return;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s: %s (%s)", what, hv_strerror(r), hv_comm_last_error(comm));
  report_fatal(msg);
}

/* All ranks agree whether every rank succeeded, so a rank with bad input does not
 * leave the others waiting in a collective. */
static int all_ok(hv_comm_t *comm, const char *name, int failed) {
  int32_t mine = failed ? 1 : 0, any = 0;
  if (hv_allreduce(comm, name, &mine, &any, 1, HV_INT32, HV_MAX, NULL) != HV_SUCCESS) return 0;
  return any == 0;
}

/* Sum-gather of a table each entry of which one rank wrote (others hold zeros). */
static void gather_sum(hv_comm_t *comm, const char *name, void *buf, size_t count,
                       hv_dtype_t dtype) {
  /* No compression whatever HV_COMPRESSION says: x + 0 must stay exactly x. */
  hv_allreduce_opts_t o = HV_ALLREDUCE_OPTS_INIT;
  o.compression = HV_COMPRESSION_NONE;
  char what[128];
  snprintf(what, sizeof what, "gathering %s", name);
  hv_check(comm, hv_allreduce(comm, name, buf, buf, count, dtype, HV_SUM, &o), what);
}

/* Normalised float images ((x/255 - mean) / std, as ToTensor + Normalize). */
static int images_make(const dataset_t *ds, int n, nn_images_t *out) {
  out->n = n;
  out->pixels = ds->c * ds->h * ds->w;
  out->x = malloc(sizeof(float) * (size_t)n * (size_t)out->pixels);
  out->y = malloc((size_t)(n > 0 ? n : 1));
  if (!out->x || !out->y) return -1;
  for (size_t i = 0; i < (size_t)n * (size_t)out->pixels; ++i)
    out->x[i] = (float)((ds->pixels[i] / 255.0 - mnist_mean[0]) / mnist_std[0]);
  memcpy(out->y, ds->labels, (size_t)n);
  return 0;
}

static int load_data(const nn_args_t *a, const char *dir, dataset_t *tr, dataset_t *te,
                     char *err, size_t errlen) {
  char tr_images[4096], te_images[4096], labels[4096];
  if (dataset_mnist_paths(dir, "train", tr_images, labels, sizeof labels, err, errlen) ||
      dataset_mnist_paths(dir, "test", te_images, labels, sizeof labels, err, errlen))
    return -1;
  if (dataset_load_mnist(dir, "train", tr, err, errlen) != 0) return -1;
  if (dataset_load_mnist(dir, "test", te, err, errlen) != 0) return -1;
  /* The two sets agree first, so that a test set of another shape is named as such. */
  if (dataset_check_pair(tr, tr_images, te, te_images, err, errlen)) return -1;
  if (tr->c != 1 || tr->h != 28 || tr->w != 28) {
    snprintf(err, errlen, "%.900s: images are %dx%dx%d, the network needs 1x28x28", tr_images,
             tr->c, tr->h, tr->w);
    return -1;
  }
  if (a->train_size > tr->n || a->test_size > te->n) {
    snprintf(err, errlen, "--%s-size %d: %s has only %d %s images",
             a->train_size > tr->n ? "train" : "test",
             a->train_size > tr->n ? a->train_size : a->test_size, dir,
             a->train_size > tr->n ? tr->n : te->n, a->train_size > tr->n ? "training" : "test");
    return -1;
  }
  if (a->train_size) tr->n = a->train_size;
  if (a->test_size) te->n = a->test_size;
  if (tr->n < 2 * a->folds) {
    snprintf(err, errlen, "%d training images cannot support %d folds (need at least 2 per "
             "fold); lower --folds or raise --train-size", tr->n, a->folds);
    return -1;
  }
  if (a->plot_first > te->n) {
    snprintf(err, errlen, "--plot-first %d: only %d test images", a->plot_first, te->n);
    return -1;
  }
  return 0;
}

/* The sample of each bootstrap as image,fold lines (for the PyTorch port). */
static void write_plan(const char *dir, int n, int folds, const int *fold_of, uint64_t seed,
                       int n_bootstrap) {
  char path[4200];
  snprintf(path, sizeof path, "%s/plan", dir);
  char err[512];
  if (nn_report_make_dir(path, err, sizeof err)) report_fatal(err);
  int *sample = malloc(sizeof(int) * (size_t)n), *sf = malloc(sizeof(int) * (size_t)n);
  if (!sample || !sf) report_fatal("out of memory writing the plan");
  for (int b = 0; b < n_bootstrap; ++b) {
    if (nn_bootstrap_draw(n, folds, fold_of, nn_boot_seed(seed, b), sample, sf)) report_fatal("out of memory");
    snprintf(path, sizeof path, "%s/plan/bootstrap_%d.csv", dir, b);
    FILE *f = fopen(path, "w");
    if (!f) report_fatal("cannot write the plan");
    fprintf(f, "image,fold\n");
    for (int j = 0; j < n; ++j) fprintf(f, "%d,%d\n", sample[j], sf[j]);
    if (fclose(f)) report_fatal("cannot write the plan");
  }
  free(sample);
  free(sf);
}

int main(int argc, char **argv) {
  char err[1024];
  nn_args_t a;
  report_set_program("mnist_nn");
  if (nn_args_parse(argc, argv, &a, err, sizeof err) != 0) {
    report_error(err);
    return 2;
  }
  if (a.help) {
    fputs(nn_args_usage(), stdout);
    return 0;
  }
  if (!strcmp(a.device, "cuda")) {
    fprintf(stderr, "mnist_nn: error: --device cuda: this build has no GPU path for the "
                    "trainer yet; use --device cpu\n");
    return 2;
  }
  hv_comm_t *comm = NULL;
  hv_result_t hr = hv_init(&argc, &argv, &comm);
  if (hr != HV_SUCCESS) {
    fprintf(stderr, "mnist_nn: error: hv_init: %s (%s)\n", hv_strerror(hr),
            hv_comm_last_error(NULL));
    return 1;
  }
  int nranks = 1;
  hv_check(comm, hv_comm_rank(comm, &g_rank), "hv_comm_rank");
  report_set_rank(g_rank);
  hv_check(comm, hv_comm_size(comm, &nranks), "hv_comm_size");
  const double t_start = now_s();

  /* ---- data, OOD image, results folder: every rank checks, all agree ---- */
  const char *dir = mnist_data_dir(a.dataset, a.data_dir, dataset_default_mnist_dir());
  dataset_t trd, ted;
  memset(&trd, 0, sizeof trd);
  memset(&ted, 0, sizeof ted);
  uint8_t ood[784];
  /* The trainer's HV_* settings first: a typo is named before any data is read, not
   * at the first bootstrap's model. */
  trainer_settings_t set;
  int straggler_on = 0; /* HV_STRAGGLER_REPORT */
  int failed = trainer_settings_read(&set, err, sizeof err) != 0 ||
               straggler_setting(&straggler_on, err, sizeof err) != 0 ||
               load_data(&a, dir, &trd, &ted, err, sizeof err) != 0;
  if (!failed) {
    if (a.ood_image)
      failed = nn_ood_load_pgm(a.ood_image, ood, err, sizeof err) != 0;
    else
      nn_ood_default(ood);
  }
  if (!failed && g_rank == 0) failed = nn_report_make_dir(a.results, err, sizeof err) != 0;
  if (failed) report_error(err);
  if (!all_ok(comm, "nn/data_ok", failed)) {
    dataset_free(&trd);
    dataset_free(&ted);
    leave_job(comm);
  }
  nn_images_t tr, te;
  if (images_make(&trd, trd.n, &tr) || images_make(&ted, ted.n, &te)) report_fatal("out of memory for the images");

  /* The plotted images: the first plot_first test digits, then the OOD image. */
  const int n_plot = a.plot_first, n_extra = n_plot + 1;
  float *extra_x = malloc(sizeof(float) * 784 * (size_t)n_extra);
  uint8_t *extra_px = malloc(784 * (size_t)n_extra);
  if (!extra_x || !extra_px) report_fatal("out of memory");
  memcpy(extra_x, te.x, sizeof(float) * 784 * (size_t)n_plot);
  memcpy(extra_px, ted.pixels, 784 * (size_t)n_plot);
  memcpy(extra_px + 784 * (size_t)n_plot, ood, 784);
  for (int i = 0; i < 784; ++i)
    extra_x[784 * (size_t)n_plot + i] = (float)((ood[i] / 255.0 - mnist_mean[0]) / mnist_std[0]);

  int *fold_of = malloc(sizeof(int) * (size_t)tr.n);
  if (!fold_of) report_fatal("out of memory");
  nn_folds_assign(tr.n, a.folds, a.seed, fold_of);

  /* ---- per-bootstrap tables (zeros where another rank worked) ---- */
  const int nb = a.n_bootstrap, nt = a.n_tuning;
  const size_t nbt = (size_t)nb * nt;
  nn_hparams_t *settings = calloc(nbt, sizeof *settings);
  double *hp_tab = calloc(nbt * 5, sizeof(double)), *cv_err = calloc(nbt, sizeof(double));
  int32_t *itab = calloc((size_t)nb * 4, sizeof(int32_t)); /* best, epochs, rank, failed */
  double *dtab = calloc((size_t)nb * 3, sizeof(double));   /* train, test error, seconds */
  float *test_prob = calloc((size_t)nb * te.n * 10, sizeof(float));
  float *extra_prob = calloc((size_t)nb * n_extra * 10, sizeof(float));
  if (!settings || !hp_tab || !cv_err || !itab || !dtab || !test_prob || !extra_prob)
    report_fatal("out of memory for the result tables (lower n_bootstrap or --test-size)");

  if (g_rank == 0) {
    printf("mnist_nn: %d training / %d test images (%s, %s), %d bootstrap(s) x %d setting(s), "
           "%d-fold CV, max %d epochs, tolerance %g, batch %d, seed %llu, %d rank(s)\n",
           tr.n, te.n, a.dataset, dir, nb, nt, a.folds, a.max_epochs, a.tolerance, a.batch,
           (unsigned long long)a.seed, nranks);
    fflush(stdout);
  }

  /* ---- the journal: a relaunched job (HV_RESTART > 0) or --resume keeps the
   * bootstraps finished before (nn_journal.h); only the rest are handed out ---- */
  if (g_rank == 0) restart_mark_resumable(); /* for hvrun --restarts */
  nn_journal_t nj;
  nn_journal_tabs_t tabs = {settings, cv_err, itab, dtab, test_prob, extra_prob};
  int *todo = malloc(sizeof(int) * (size_t)nb);
  if (!todo) report_fatal("out of memory for the journal");
  failed = nn_journal_load(&nj, &a, &tr, &te, ood, n_extra, g_rank, &tabs, err, sizeof err) != 0;
  if (failed) report_error(err);
  if (!all_ok(comm, "nn/journal_ok", failed)) {
    leave_job(comm);
  }
  const int n_todo = nn_journal_combine(&nj, comm, a.results, todo, err, sizeof err);
  if (n_todo < 0) report_fatal(err);

  /* ---- the search: bootstraps handed out dynamically ---- */
  nn_sched_t sched;
  if (nn_sched_init(&sched, comm, n_todo, a.poll_ms / 1000.0)) report_fatal("out of memory for the scheduler");
  nn_boot_cfg_t cfg = {&tr, &te, fold_of, a.folds, nt, a.space, a.seed,
                       {a.max_epochs, a.tolerance, a.batch, nn_sched_poll, &sched},
                       extra_x, n_extra, a.verbose};
  int my_failed = 0;
  char my_err[1024] = "";
  for (int job; (job = nn_sched_next(&sched, my_failed)) >= 0;) {
    const int b = todo[job];
    nn_boot_out_t o = {settings + (size_t)b * nt, cv_err + (size_t)b * nt, 0, 0, 0, 0,
                       test_prob + (size_t)b * te.n * 10, extra_prob + (size_t)b * n_extra * 10,
                       0};
    if (nn_boot_run(&cfg, b, &o, err, sizeof err) != 0) {
      /* Keep taking part in the ticks so nobody waits on this rank; fail at the end. */
      if (!my_failed) snprintf(my_err, sizeof my_err, "%s", err);
      my_failed = 1;
      itab[b * 4 + 3] = 1;
      continue;
    }
    itab[b * 4 + 0] = o.best;
    itab[b * 4 + 1] = o.epochs;
    itab[b * 4 + 2] = g_rank;
    dtab[b * 3 + 0] = o.train_error;
    dtab[b * 3 + 1] = o.test_error;
    dtab[b * 3 + 2] = o.seconds;
    nn_journal_add(&nj, b);
    {
      /* Each rank reports its own bootstraps as they finish. */
      const nn_hparams_t *h = &o.settings[o.best];
      printf("bootstrap %d (rank %d, %.1f s): conv %d kernel %d hidden %d lr %.3g momentum %.3g"
             " CV error %.2f%% -> train error %.2f%%, test error %.2f%%\n", b, g_rank, o.seconds,
             h->n_conv, h->kernel, h->n_hidden, h->lr, h->momentum, 100 * o.cv_error[o.best],
             100 * o.train_error, 100 * o.test_error);
      fflush(stdout);
    }
  }
  if (sched.error != HV_SUCCESS) report_fatal(sched.err);
  nn_sched_free(&sched);
  if (my_failed) report_error(my_err);
  /* The search's end is the one step all ranks share: the report says which rank the
   * others waited for there (the one with the last bootstrap), and how long. */
  hv_straggler_step(comm);
  if (!all_ok(comm, "nn/run_ok", my_failed)) {
    leave_job(comm);
  }
  char straggler[96] = "";
  if (straggler_on) {
    hv_straggler_t sr;
    hv_check(comm, hv_straggler_report(comm, &sr), "hv_straggler_report");
    straggler_format(straggler, sizeof straggler, sr.rank, sr.lag_ms, (unsigned long long)sr.steps);
  }

  /* ---- gather the tables ---- */
  for (size_t i = 0; i < nbt; ++i) {
    hp_tab[i * 5 + 0] = settings[i].n_conv;
    hp_tab[i * 5 + 1] = settings[i].kernel;
    hp_tab[i * 5 + 2] = settings[i].n_hidden;
    hp_tab[i * 5 + 3] = settings[i].lr;
    hp_tab[i * 5 + 4] = settings[i].momentum;
  }
  gather_sum(comm, "nn/settings", hp_tab, nbt * 5, HV_FLOAT64);
  gather_sum(comm, "nn/cv_error", cv_err, nbt, HV_FLOAT64);
  gather_sum(comm, "nn/itab", itab, (size_t)nb * 4, HV_INT32);
  gather_sum(comm, "nn/dtab", dtab, (size_t)nb * 3, HV_FLOAT64);
  gather_sum(comm, "nn/test_prob", test_prob, (size_t)nb * te.n * 10, HV_FLOAT32);
  gather_sum(comm, "nn/extra_prob", extra_prob, (size_t)nb * n_extra * 10, HV_FLOAT32);
  for (size_t i = 0; i < nbt; ++i) {
    settings[i].n_conv = (int)hp_tab[i * 5 + 0];
    settings[i].kernel = (int)hp_tab[i * 5 + 1];
    settings[i].n_hidden = (int)hp_tab[i * 5 + 2];
    settings[i].lr = hp_tab[i * 5 + 3];
    settings[i].momentum = hp_tab[i * 5 + 4];
  }

  int rc = 0;
  if (g_rank == 0) {
    int *best = malloc(sizeof(int) * (size_t)nb), *epochs = malloc(sizeof(int) * (size_t)nb);
    int *rank_of = malloc(sizeof(int) * (size_t)nb);
    double *tre = malloc(sizeof(double) * (size_t)nb), *tee = malloc(sizeof(double) * (size_t)nb);
    double *secs = malloc(sizeof(double) * (size_t)nb);
    if (!best || !epochs || !rank_of || !tre || !tee || !secs) report_fatal("out of memory");
    for (int b = 0; b < nb; ++b) {
      best[b] = itab[b * 4 + 0];
      epochs[b] = itab[b * 4 + 1];
      rank_of[b] = itab[b * 4 + 2];
      tre[b] = dtab[b * 3 + 0];
      tee[b] = dtab[b * 3 + 1];
      secs[b] = dtab[b * 3 + 2];
    }
    if (a.write_plan) write_plan(a.results, tr.n, a.folds, fold_of, a.seed, nb);
    nn_results_t r = {nb, nt, a.folds, nranks, tr.n, te.n, a.dataset, dir,
                      a.ood_image ? a.ood_image : "the shipped letter A", a.seed, a.max_epochs,
                      a.batch, a.tolerance, a.space, settings, cv_err, best, epochs, rank_of,
                      tre, tee, secs, test_prob, te.y, n_plot, extra_prob, extra_px,
                      now_s() - t_start};
    double ens = 0;
    int w = nn_report_write(a.results, &r, a.plots, &ens, err, sizeof err);
    if (w < 0) {
      report_error(err);
      rc = 1;
    } else {
      double mean = 0;
      for (int b = 0; b < nb; ++b) mean += tee[b] / nb;
      printf("ensemble of %d: majority-vote test error %.2f%% (mean single model %.2f%%)\n"
             "time taken: %.2f s on %d rank(s)%s; outputs in %s (report.md)%s\n",
             nb, 100 * ens, 100 * mean, now_s() - t_start, nranks, straggler, a.results,
             w == 1 ? "; gnuplot not found, figures not drawn" : "");
    }
    free(best), free(epochs), free(rank_of), free(tre), free(tee), free(secs);
  }
  free(settings), free(hp_tab), free(cv_err), free(itab), free(dtab), free(test_prob);
  free(extra_prob), free(extra_x), free(extra_px), free(fold_of), free(todo);
  nn_journal_close(&nj);
  free(tr.x), free(tr.y), free(te.x), free(te.y);
  dataset_free(&trd);
  dataset_free(&ted);
  hv_shutdown(comm);
  return rc;
}
