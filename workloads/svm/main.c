/* main.c: mnist_svm, a distributed grid search over (C, gamma) of a one-vs-rest RBF
 * SVM with k-fold cross-validation, on hv.
 *
 * Every rank loads the data, computes the same fold assignment and the same split of
 * the (grid point, fold) units (grid_partition, balanced by expected cost), runs its
 * units (cv_run), and the error counts are summed across ranks with one hv allreduce
 * (each unit is owned by exactly one rank, so the sum is a gather). Rank 0 then picks
 * the best pair, refits on the whole training set, reports the test error and writes
 * the CSV / JSON / figures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cv.h"
#include "data_mnist.h"
#include "grid.h"
#include "ovr.h"
#include "rbf_kernel.h"
#if HV_SVM_CUDA
#include "rbf_gpu.h"
#endif
#include "clock.h"
#include "data_dirs.h"
#include "error_report.h"
#include "hv.h"
#include "report.h"
#include "restart_mark.h"
#include "straggler_note.h"
#include "svm_args.h"
#include "svm_data.h"
#include "svm_journal.h"

static int g_rank = 0;

/* Leaves the job after a failure every rank agreed on: hv shut down, exit code 1.
 * exit, not a return from main: what main still holds stays reachable, so the
 * LeakSanitizer build reports no leak on these ends. */
static void leave_job(hv_comm_t *comm) __attribute__((noreturn));
static void leave_job(hv_comm_t *comm) {
  hv_shutdown(comm);
  exit(1);
}

/* CPU seconds of this process, every thread (OpenBLAS, hv's background thread): on a
 * machine shared with other jobs this is the figure that compares across runs. */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* All ranks agree whether every rank succeeded (max of the failure flags), so a rank
 * with bad input does not leave the others waiting in a collective. */
static int all_ok(hv_comm_t *comm, const char *name, int failed) {
  int32_t mine = failed ? 1 : 0, any = 0;
  if (hv_allreduce(comm, name, &mine, &any, 1, HV_INT32, HV_MAX, NULL) != HV_SUCCESS) return 0;
  return any == 0;
}

static void hv_check(hv_comm_t *comm, hv_result_t r, const char *what) {
  if (r == HV_SUCCESS) return;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s: %s (%s)", what, hv_strerror(r), hv_comm_last_error(comm));
  report_fatal(msg);
}

int main(int argc, char **argv) {
  char err[1024];
  svm_args_t a;
  report_set_program("mnist_svm");
  if (svm_args_parse(argc, argv, &a, err, sizeof err) != 0) {
    report_error(err);
    return 2;
  }
  if (a.help) {
    fputs(svm_args_usage(), stdout);
    return 0;
  }
  if (!strcmp(a.device, "cuda")) {
#if HV_SVM_CUDA
    /* The kernel rows' SGEMMs on the GPU (rbf_gpu.h); the solver stays on the CPU. */
    rbf_gpu_t *gpu = rbf_gpu_create(err, sizeof err);
    if (!gpu) {
      fprintf(stderr, "mnist_svm: error: --device cuda: no GPU path: %s; use --device cpu\n", err);
      return 2;
    }
    rbf_use_gpu(gpu); /* kept until the process ends */
#else
    fprintf(stderr, "mnist_svm: error: --device cuda: no GPU path: this build of mnist_svm has none "
                    "(configure with the CUDA toolkit); use --device cpu\n");
    return 2;
#endif
  }

  hv_comm_t *comm = NULL;
  hv_result_t hr = hv_init(&argc, &argv, &comm);
  if (hr != HV_SUCCESS) {
    fprintf(stderr, "mnist_svm: error: hv_init: %s (%s)\n", hv_strerror(hr),
            hv_comm_last_error(NULL));
    return 1;
  }
  int nranks = 1;
  hv_check(comm, hv_comm_rank(comm, &g_rank), "hv_comm_rank");
  report_set_rank(g_rank);
  hv_check(comm, hv_comm_size(comm, &nranks), "hv_comm_size");

  /* ---- data ---- */
  const char *dir = mnist_data_dir(a.dataset, a.data_dir, dataset_default_mnist_dir());
  svm_set_t tr, te;
  memset(&tr, 0, sizeof tr);
  memset(&te, 0, sizeof te);
  int straggler_on = 0; /* HV_STRAGGLER_REPORT */
  int failed = straggler_setting(&straggler_on, err, sizeof err) != 0 ||
               (a.refit ? svm_data_load_pair(dir, a.train_size, a.test_size, &tr, &te, err, sizeof err)
                        : svm_data_load(dir, "train", a.train_size, &tr, err, sizeof err)) != 0;
  if (!failed && a.train_size > tr.n) {
    snprintf(err, sizeof err, "--train-size %d: %s has only %d training images", a.train_size,
             dir, tr.n);
    failed = 1;
  }
  if (!failed && tr.n < 2 * a.folds) {
    snprintf(err, sizeof err,
             "%d training images cannot support %d folds (need at least 2 per fold); lower "
             "--folds or raise --train-size",
             tr.n, a.folds);
    failed = 1;
  }
  if (!failed && svm_data_centre(&tr, a.refit ? &te : NULL) != 0) {
    snprintf(err, sizeof err, "out of memory centring %d images", tr.n);
    failed = 1;
  }
  /* A results folder that cannot be made fails now, not after the whole search. */
  if (!failed && g_rank == 0) failed = report_make_dir(a.results, err, sizeof err) != 0;
  if (failed) report_error(err);
  if (!all_ok(comm, "svm/data_ok", failed)) {
    svm_data_free(&tr);
    svm_data_free(&te);
    leave_job(comm);
  }

  /* ---- folds, grid, split ---- */
  grid_t g;
  int *fold_of = malloc(sizeof(int) * (size_t)tr.n);
  if (!fold_of || grid_make(&g, a.n_tuning, a.log_c_min, a.log_c_max, a.log_gamma_min,
                            a.log_gamma_max) != 0)
    report_fatal("out of memory for the grid");
  cv_assign_folds(tr.n, a.folds, a.seed, fold_of);
  int *fold_size = calloc((size_t)a.folds, sizeof(int));
  const int np = g.n_c * g.n_gamma, nu = np * a.folds;
  int *owner = malloc(sizeof(int) * (size_t)nu);
  double *load = malloc(sizeof(double) * (size_t)nranks);
  int32_t *errs = calloc((size_t)nu, sizeof(int32_t)), *errs_all = calloc((size_t)nu, sizeof(int32_t));
  double *rank_s = calloc((size_t)nranks, sizeof(double));
  double *rank_cpu = calloc((size_t)nranks, sizeof(double));
  double *unit_cpu = calloc((size_t)nu, sizeof(double));
  if (!fold_size || !owner || !load || !errs || !errs_all || !rank_s || !rank_cpu || !unit_cpu)
    report_fatal("out of memory for the grid");
  for (int i = 0; i < tr.n; ++i) fold_size[fold_of[i]]++;
  for (int f = 0; f < a.folds; ++f) {
    /* A training fold with one class cannot train a classifier: the data cannot
     * support this many folds. */
    int seen[256] = {0}, k = 0;
    for (int i = 0; i < tr.n; ++i)
      if (fold_of[i] != f && !seen[tr.y[i]]++) k++;
    if (k < 2) {
      snprintf(err, sizeof err, "training fold %d holds a single class: more images needed",
               f);
      report_fatal(err);
    }
  }

  if (g_rank == 0)
    printf("mnist_svm: %d training / %d test images (%s, %s), %d-fold CV, %d x %d grid "
           "(log10 C %g..%g, log10 gamma %g..%g), %s, %d rank(s)\n",
           tr.n, te.n, a.dataset, dir, a.folds, a.n_tuning, a.n_tuning, a.log_c_min,
           a.log_c_max, a.log_gamma_min, a.log_gamma_max,
           strcmp(a.multiclass, "ovo") ? "one-vs-rest" : "one-vs-one", nranks);

  /* ---- the journal: a relaunched job (HV_RESTART > 0) or --resume keeps the units
   * finished before (svm_journal.h) and splits only the rest over this world size ---- */
  svm_journal_t sj;
  if (g_rank == 0) restart_mark_resumable(); /* for hvrun --restarts */
  char *kept = calloc((size_t)nu + 1, 1);
  if (!kept) report_fatal("out of memory for the journal");
  failed = svm_journal_load(&sj, &a, &tr, g_rank, nu, errs, unit_cpu, err, sizeof err) != 0;
  if (failed) report_error(err);
  if (!all_ok(comm, "svm/journal_ok", failed)) {
    leave_job(comm);
  }
  if (svm_journal_combine(&sj, comm, a.results, kept, err, sizeof err) < 0) report_fatal(err);
  if (grid_partition_todo(&g, a.folds, tr.n, nranks, kept, owner, load) != 0)
    report_fatal("out of memory for the split");

  /* ---- cross-validation ---- */
  cv_opts_t o = {a.eps, 1, (size_t)(a.mem_mb * 1048576.0), a.verbose, g_rank,
                 !strcmp(a.multiclass, "ovo"), svm_journal_unit, &sj};
  cv_stats_t st;
  hv_check(comm, hv_barrier(comm), "hv_barrier"); /* time the CV from a common start */
  double t0 = now_s(), c0 = cpu_s();
  failed = cv_run(&tr, fold_of, a.folds, &g, owner, &o, errs, unit_cpu, &st, err, sizeof err) != 0;
  double my_s = now_s() - t0, my_cpu = cpu_s() - c0;
  if (failed) report_error(err);
  /* The cross-validation is the one step all ranks share: the straggler report says
   * which rank the others waited for at its end, and how long. */
  hv_straggler_step(comm);
  if (!all_ok(comm, "svm/cv_ok", failed)) {
    leave_job(comm);
  }
  hv_check(comm, hv_allreduce(comm, "svm/errors", errs, errs_all, (size_t)nu, HV_INT32, HV_SUM, NULL),
           "gathering the validation errors");
  hv_check(comm, hv_allreduce(comm, "svm/unit_cpu_seconds", unit_cpu, unit_cpu, (size_t)nu,
                              HV_FLOAT64, HV_SUM, NULL), "gathering the timings");
  hv_check(comm, hv_allgather(comm, "svm/rank_seconds", &my_s, rank_s, 1, HV_FLOAT64),
           "gathering the timings");
  hv_check(comm, hv_allgather(comm, "svm/rank_cpu_seconds", &my_cpu, rank_cpu, 1, HV_FLOAT64),
           "gathering the timings");
  double cv_s = now_s() - t0;
  char straggler[96] = "";
  if (straggler_on) {
    hv_straggler_t sr;
    hv_check(comm, hv_straggler_report(comm, &sr), "hv_straggler_report");
    straggler_format(straggler, sizeof straggler, sr.rank, sr.lag_ms, (unsigned long long)sr.steps);
  }
  if (a.verbose)
    fprintf(stderr, "rank %d: %d units in %.2f s (kernel %.2f, solve %.2f, predict %.2f, %ld SMO "
            "iterations, %s kernel)\n", g_rank, st.units, my_s, st.kernel_s, st.solve_s,
            st.predict_s, st.smo_iter, st.full_mode ? "full" : "LRU-cached");

  /* ---- best pair (every rank computes the same), refit, outputs ---- */
  svm_results_t r;
  memset(&r, 0, sizeof r);
  r.dataset = a.dataset;
  r.n_train = tr.n;
  r.n_test = te.n;
  r.folds = a.folds;
  r.ncls = tr.ncls;
  r.g = &g;
  r.errors = errs_all;
  r.fold_size = fold_size;
  r.fold_of = fold_of;
  r.nranks = nranks;
  r.rank_seconds = rank_s;
  r.rank_cpu_seconds = rank_cpu;
  r.unit_cpu_seconds = unit_cpu;
  r.rank_load = load;
  r.cv_seconds = cv_s;
  r.eps = a.eps;
  r.seed = a.seed;
  r.multiclass = o.ovo ? "one-vs-one" : "one-vs-rest";
  r.best_p = report_best_point(&r);
  const double best_lc = g.log_c[r.best_p % g.n_c], best_lg = g.log_gamma[r.best_p / g.n_c];
  const double best_c = pow(10.0, best_lc), best_gamma = pow(10.0, best_lg);
  if (g_rank == 0) {
    printf("cross-validation took %.2f s (", cv_s);
    for (int k = 0; k < nranks; ++k) printf("%srank %d: %.2f s", k ? ", " : "", k, rank_s[k]);
    printf(")%s\n\nmean validation error (%%), rows log10(gamma), columns log10(C):\n%8s", straggler, "");
    for (int ci = 0; ci < g.n_c; ++ci) printf(" %8.2f", g.log_c[ci]);
    printf("\n");
    for (int gi = 0; gi < g.n_gamma; ++gi) {
      printf("%8.2f", g.log_gamma[gi]);
      for (int ci = 0; ci < g.n_c; ++ci) printf(" %8.2f", report_mean_error(&r, gi * g.n_c + ci));
      printf("\n");
    }
    printf("\nbest: C = %.6g, gamma = %.6g (log10 %.2f, %.2f), mean validation error %.2f%%\n",
           best_c, best_gamma, best_lc, best_lg, report_mean_error(&r, r.best_p));
    fflush(stdout);
  }
  if (a.refit) {
    /* The one-vs-rest classes of the refit are split across ranks; each rank's model
     * holds zeros for the classes it did not fit, so a sum assembles the whole one. */
    ovr_model_t m;
    double tr0 = now_s();
    failed = cv_refit(&tr, best_c, best_gamma, &o, g_rank, nranks, &m, err, sizeof err) != 0;
    if (failed) report_error(err);
    if (!all_ok(comm, "svm/refit_ok", failed)) {
      leave_job(comm);
    }
    hv_check(comm, hv_allreduce(comm, "svm/refit_coef", m.coef, m.coef, (size_t)m.nfun * m.n,
                                HV_FLOAT64, HV_SUM, NULL), "gathering the refit model");
    hv_check(comm, hv_allreduce(comm, "svm/refit_rho", m.rho, m.rho, (size_t)m.nfun, HV_FLOAT64,
                                HV_SUM, NULL), "gathering the refit model");
    if (g_rank == 0) {
      if (cv_test_errors(&m, &tr, &te, best_gamma, &r.test_errors) != 0)
        report_fatal("out of memory predicting the test set");
      r.refit_done = 1;
      r.refit_seconds = now_s() - tr0;
      printf("refit on %d images in %.2f s: test error %.2f%% (%d of %d)\n", tr.n,
             r.refit_seconds, 100.0 * r.test_errors / (te.n > 0 ? te.n : 1), r.test_errors, te.n);
    }
    ovr_free(&m);
  }
  failed = 0;
  if (g_rank == 0) {
    failed = report_write(a.results, &r, err, sizeof err) != 0;
    int prc = failed || !a.plots ? 0 : report_plot(a.results, &r, err, sizeof err);
    failed |= prc < 0;
    if (failed) {
      report_error(err);
    } else {
      if (prc > 0)
        fprintf(stderr, "mnist_svm: warning: gnuplot not found; figure scripts written to %s\n",
                a.results);
      printf("results in %s/ (cv_errors.csv, grid.csv, folds.csv, results.json%s)\n", a.results,
             a.plots ? ", boxplot_gamma_*.png, heatmap.png" : "");
    }
    fflush(stdout);
  }
  int rc = all_ok(comm, "svm/report_ok", failed) ? 0 : 1;
  hv_check(comm, hv_shutdown(comm), "hv_shutdown");
  free(fold_of); free(fold_size); free(owner); free(load); free(errs);
  free(errs_all); free(rank_s); free(rank_cpu); free(unit_cpu);
  svm_journal_close(&sj);
  free(kept);
  grid_free(&g);
  svm_data_free(&tr);
  svm_data_free(&te);
  return rc;
}
