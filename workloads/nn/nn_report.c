/* nn_report.c: CSV, JSON, gnuplot and Markdown outputs of mnist_nn (see
 * nn_report.h). Numbers are printed with fixed formats from values that do not depend
 * on the rank count, so the CSVs are byte-identical for 1 or n ranks (timing.csv,
 * which records ranks and seconds, is the exception by design). */
#include "nn_report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "results_dir.h"

int nn_report_make_dir(const char *dir, char *err, size_t errlen) {
  return results_make_dir(dir, err, errlen);
}

int nn_ensemble_vote(const nn_results_t *r, const float *prob_all, int n_items, int i,
                     int *votes) {
  int v[10] = {0};
  double psum[10] = {0};
  for (int b = 0; b < r->n_bootstrap; ++b) {
    const float *p = prob_all + ((size_t)b * n_items + i) * 10;
    int best = 0;
    for (int c = 1; c < 10; ++c)
      if (p[c] > p[best]) best = c;
    v[best]++;
    /* Summed in bootstrap order: the same on every rank count. */
    for (int c = 0; c < 10; ++c) psum[c] += p[c];
  }
  int win = 0;
  for (int c = 1; c < 10; ++c)
    if (v[c] > v[win] || (v[c] == v[win] && psum[c] > psum[win])) win = c;
  *votes = v[win];
  return win;
}

static double mean_of(const double *x, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += x[i];
  return n ? s / n : 0;
}

static int write_tables(const char *dir, const nn_results_t *r, double *ens_err, char *err,
                        size_t errlen) {
  FILE *f = results_open(dir, "models.csv", err, errlen);
  if (!f) return -1;
  fprintf(f, "bootstrap,n_conv_layer,kernel_size,n_hidden_layer,lr,momentum,cv_error,"
             "epochs,train_error,test_error\n");
  for (int b = 0; b < r->n_bootstrap; ++b) {
    const nn_hparams_t *h = &r->settings[(size_t)b * r->n_tuning + r->best[b]];
    fprintf(f, "%d,%d,%d,%d,%.6e,%.6e,%.6f,%d,%.6f,%.6f\n", b, h->n_conv, h->kernel,
            h->n_hidden, h->lr, h->momentum, r->cv_error[(size_t)b * r->n_tuning + r->best[b]],
            r->epochs[b], r->train_error[b], r->test_error[b]);
  }
  if (results_close(f, dir, "models.csv", err, errlen)) return -1;

  if (!(f = results_open(dir, "search.csv", err, errlen))) return -1;
  fprintf(f, "bootstrap,setting,n_conv_layer,kernel_size,n_hidden_layer,lr,momentum,cv_error,"
             "chosen\n");
  for (int b = 0; b < r->n_bootstrap; ++b)
    for (int s = 0; s < r->n_tuning; ++s) {
      const nn_hparams_t *h = &r->settings[(size_t)b * r->n_tuning + s];
      fprintf(f, "%d,%d,%d,%d,%d,%.6e,%.6e,%.6f,%d\n", b, s, h->n_conv, h->kernel, h->n_hidden,
              h->lr, h->momentum, r->cv_error[(size_t)b * r->n_tuning + s], s == r->best[b]);
    }
  if (results_close(f, dir, "search.csv", err, errlen)) return -1;

  if (!(f = results_open(dir, "timing.csv", err, errlen))) return -1;
  fprintf(f, "bootstrap,rank,seconds\n");
  for (int b = 0; b < r->n_bootstrap; ++b)
    fprintf(f, "%d,%d,%.3f\n", b, r->rank_of[b], r->seconds[b]);
  if (results_close(f, dir, "timing.csv", err, errlen)) return -1;

  if (!(f = results_open(dir, "predictions.csv", err, errlen))) return -1;
  fprintf(f, "test_index,label,ensemble,votes\n");
  int wrong = 0;
  for (int i = 0; i < r->n_test; ++i) {
    int votes;
    const int c = nn_ensemble_vote(r, r->test_prob, r->n_test, i, &votes);
    wrong += c != r->test_labels[i];
    fprintf(f, "%d,%d,%d,%d\n", i, r->test_labels[i], c, votes);
  }
  if (results_close(f, dir, "predictions.csv", err, errlen)) return -1;
  *ens_err = r->n_test ? (double)wrong / r->n_test : 0;

  if (!(f = results_open(dir, "summary.json", err, errlen))) return -1;
  fprintf(f,
          "{\n  \"dataset\": \"%s\",\n  \"n_train\": %d,\n  \"n_test\": %d,\n"
          "  \"n_bootstrap\": %d,\n  \"n_tuning\": %d,\n  \"folds\": %d,\n  \"seed\": %llu,\n"
          "  \"ranks\": %d,\n  \"ensemble_test_error\": %.6f,\n  \"ensemble_test_wrong\": %d,\n"
          "  \"mean_model_test_error\": %.6f,\n  \"seconds\": %.3f\n}\n",
          r->dataset, r->n_train, r->n_test, r->n_bootstrap, r->n_tuning, r->folds,
          (unsigned long long)r->seed, r->nranks, *ens_err, wrong,
          mean_of(r->test_error, r->n_bootstrap), r->total_seconds);
  return results_close(f, dir, "summary.json", err, errlen);
}

/* One figure per plotted image: the image on the left, the box plot over models of
 * the probability given to each digit on the right. */
static int write_figure_files(const char *dir, const nn_results_t *r, int k, const char *stem,
                              const char *title, char *err, size_t errlen) {
  char name[128];
  const int n_items = r->n_plot + 1;
  snprintf(name, sizeof name, "%s.dat", stem);
  FILE *f = results_open(dir, name, err, errlen);
  if (!f) return -1;
  fprintf(f, "# one row per model (bootstrap), P(digit 0..9)\n");
  for (int b = 0; b < r->n_bootstrap; ++b) {
    const float *p = r->extra_prob + ((size_t)b * n_items + k) * 10;
    for (int c = 0; c < 10; ++c) fprintf(f, "%s%.6f", c ? " " : "", p[c]);
    fprintf(f, "\n");
  }
  if (results_close(f, dir, name, err, errlen)) return -1;
  snprintf(name, sizeof name, "%s.img", stem);
  if (!(f = results_open(dir, name, err, errlen))) return -1;
  const uint8_t *px = r->extra_pixels + (size_t)k * 784;
  for (int y = 0; y < 28; ++y)
    for (int x = 0; x < 28; ++x) fprintf(f, "%d%c", px[y * 28 + x], x == 27 ? '\n' : ' ');
  if (results_close(f, dir, name, err, errlen)) return -1;
  snprintf(name, sizeof name, "%s.gp", stem);
  if (!(f = results_open(dir, name, err, errlen))) return -1;
  fprintf(f,
          "# The image and the ensemble's certainty (softmax probability of each digit,\n"
          "# one box per digit over the %d models).\n"
          "set terminal pngcairo size 900,380\nset output '%s.png'\n"
          "set multiplot layout 1,2 title '%s'\n"
          "set size ratio -1\nunset key\nunset colorbox\nunset xtics\nunset ytics\n"
          "set palette gray negative\nset yrange [27.5:-0.5]\nset xrange [-0.5:27.5]\n"
          "plot '%s.img' matrix with image\n"
          "set size noratio\nset xtics 0,1,9\nset ytics 0,0.2,1\nset grid ytics\n"
          "set xrange [-0.7:9.7]\nset yrange [-0.02:1.02]\n"
          "set xlabel 'digit'\nset ylabel 'P(digit)'\n"
          "set style fill solid 0.3\nset style boxplot outliers pointtype 7\n"
          "set pointsize 0.4\nset boxwidth 0.6\n"
          "plot for [d=0:9] '%s.dat' using (d):(column(d+1)) with boxplot lc rgb '#3070b0'\n"
          "unset multiplot\n",
          r->n_bootstrap, stem, title, stem, stem);
  return results_close(f, dir, name, err, errlen);
}

static int run_gnuplot(const char *dir, const char *script, char *err, size_t errlen) {
  char cmd[4400];
  if (strchr(dir, '\'')) {
    snprintf(err, errlen, "--results %s: a quote in the path; figures not drawn", dir);
    return -1;
  }
  /* gnuplot runs in the results folder so the scripts use bare file names. */
  snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s' >/dev/null 2>&1", dir, script);
  if (system(cmd) != 0) {
    snprintf(err, errlen, "gnuplot failed on %s/%s", dir, script);
    return -1;
  }
  return 0;
}

static int write_markdown(const char *dir, const nn_results_t *r, double ens_err, int drawn,
                          char *err, size_t errlen) {
  FILE *f = results_open(dir, "report.md", err, errlen);
  if (!f) return -1;
  const nn_space_t *s = &r->space;
  fprintf(f, "# mnist_nn: bagging + random search of a small CNN\n\n");
  fprintf(f, "%s (%s): %d training / %d test images; %d bootstrap(s) drawn within %d folds, "
             "%d random-search setting(s) each scored by %d-fold CV, best refit on its "
             "bootstrap sample; seed %llu; %d rank(s); %.1f s.\n\n",
          r->dataset, r->data_dir, r->n_train, r->n_test, r->n_bootstrap, r->folds,
          r->n_tuning, r->folds, (unsigned long long)r->seed, r->nranks, r->total_seconds);
  fprintf(f, "Search space: n_conv_layer [%d, %d), kernel_size [%d, %d), n_hidden_layer "
             "[%d, %d), lr 10^U(%g, %g), momentum 10^U(%g, %g); SGD with momentum, batch %d, "
             "at most %d epochs, stop when an epoch's loss is not below %g x the previous.\n\n",
          s->conv_min, s->conv_max, s->kernel_min, s->kernel_max, s->hidden_min, s->hidden_max,
          s->log_lr_min, s->log_lr_max, s->log_mom_min, s->log_mom_max, r->batch,
          r->max_epochs, r->tolerance);
  fprintf(f, "**Ensemble (majority vote) test error: %.2f%%** (mean single-model test error "
             "%.2f%%).\n\n", 100 * ens_err, 100 * mean_of(r->test_error, r->n_bootstrap));
  fprintf(f, "| bootstrap | n_conv | kernel | n_hidden | lr | momentum | CV error | epochs | "
             "train error | test error |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int b = 0; b < r->n_bootstrap && b < 20; ++b) {
    const nn_hparams_t *h = &r->settings[(size_t)b * r->n_tuning + r->best[b]];
    fprintf(f, "| %d | %d | %d | %d | %.3g | %.3g | %.2f%% | %d | %.2f%% | %.2f%% |\n", b,
            h->n_conv, h->kernel, h->n_hidden, h->lr, h->momentum,
            100 * r->cv_error[(size_t)b * r->n_tuning + r->best[b]], r->epochs[b],
            100 * r->train_error[b], 100 * r->test_error[b]);
  }
  if (r->n_bootstrap > 20) fprintf(f, "\n(first 20 of %d rows)\n", r->n_bootstrap);
  fprintf(f, "\nData: [models.csv](models.csv) (each model's parameters and errors), "
             "[search.csv](search.csv) (every setting tried), "
             "[predictions.csv](predictions.csv) (ensemble vote per test image), "
             "[timing.csv](timing.csv), [summary.json](summary.json).\n\n");
  fprintf(f, "## Certainty of the ensemble\n\nEach figure shows an image and, per digit, the "
             "spread over the %d models of the probability they give it.\n\n",
          r->n_bootstrap);
  const char *fig = drawn ? "" : " (not drawn: gnuplot missing or --no-plots; data and "
                                 "scripts are there)";
  fprintf(f, "Out-of-distribution image (%s)%s:\n\n![out of distribution](certainty/ood.png)\n\n",
          r->ood_name, fig);
  /* A few figures inline keep the page to one screen; the rest are links. */
  const int inline_n = r->n_plot < 4 ? r->n_plot : 4;
  if (r->n_plot > 0) fprintf(f, "The first %d test digits%s:\n\n", r->n_plot, fig);
  for (int k = 0; k < inline_n; ++k)
    fprintf(f, "![test image %d](certainty/test_%d.png)\n", k, k);
  if (r->n_plot > inline_n) {
    fprintf(f, "\nAll of them: ");
    for (int k = 0; k < r->n_plot; ++k)
      fprintf(f, "%s[%d (label %d)](certainty/test_%d.png)", k ? ", " : "", k,
              r->test_labels[k], k);
    fprintf(f, "\n");
  }
  return results_close(f, dir, "report.md", err, errlen);
}

int nn_report_write(const char *dir, const nn_results_t *r, int plots, double *ensemble_error,
                    char *err, size_t errlen) {
  if (write_tables(dir, r, ensemble_error, err, errlen)) return -1;
  char cdir[4200], stem[64], title[160];
  snprintf(cdir, sizeof cdir, "%s/certainty", dir);
  if (nn_report_make_dir(cdir, err, errlen)) return -1;
  FILE *all = results_open(cdir, "all.gp", err, errlen);
  if (!all) return -1;
  for (int k = 0; k <= r->n_plot; ++k) {
    const int ood = k == r->n_plot;
    if (ood) {
      snprintf(stem, sizeof stem, "ood");
      snprintf(title, sizeof title, "out of distribution: %s", r->ood_name);
    } else {
      snprintf(stem, sizeof stem, "test_%d", k);
      int votes;
      const int c = nn_ensemble_vote(r, r->test_prob, r->n_test, k, &votes);
      snprintf(title, sizeof title, "test image %d, label %d, ensemble says %d (%d of %d votes)",
               k, r->test_labels[k], c, votes, r->n_bootstrap);
    }
    if (write_figure_files(cdir, r, k, stem, title, err, errlen)) {
      fclose(all);
      return -1;
    }
    fprintf(all, "load '%s.gp'\nreset\n", stem);
  }
  if (results_close(all, cdir, "all.gp", err, errlen)) return -1;
  int drawn = 0, rc = 0;
  if (plots) {
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
      rc = 1;
    } else {
      /* One gnuplot process for every figure: start-up dominates for small plots. */
      if (run_gnuplot(cdir, "all.gp", err, errlen)) return -1;
      drawn = 1;
    }
  }
  if (write_markdown(dir, r, *ensemble_error, drawn, err, errlen)) return -1;
  return rc;
}
