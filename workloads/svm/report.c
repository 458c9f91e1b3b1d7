/* report.c: CSV, JSON and gnuplot outputs of mnist_svm (see report.h). Percentages
 * are printed with %.4f from integer error counts, so the text is the same wherever
 * the numbers were computed. */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "results_dir.h"

static double unit_pct(const svm_results_t *r, int p, int f) {
  int nv = r->fold_size[f];
  return nv > 0 ? 100.0 * r->errors[p * r->folds + f] / nv : 0.0;
}

double report_mean_error(const svm_results_t *r, int p) {
  double s = 0.0;
  for (int f = 0; f < r->folds; ++f) s += unit_pct(r, p, f);
  return s / r->folds;
}

int report_best_point(const svm_results_t *r) {
  int np = r->g->n_c * r->g->n_gamma, best = 0;
  double best_e = INFINITY;
  /* Points are ordered gamma-major then C, so the first minimum is the simplest. */
  for (int p = 0; p < np; ++p) {
    double e = report_mean_error(r, p);
    if (e < best_e - 1e-12) {
      best_e = e;
      best = p;
    }
  }
  return best;
}

int report_make_dir(const char *dir, char *err, size_t errlen) {
  return results_make_dir(dir, err, errlen);
}

static void point_stats(const svm_results_t *r, int p, double *mean, double *sd, double *mn,
                        double *mx) {
  double m = report_mean_error(r, p), v = 0.0, lo = INFINITY, hi = -INFINITY;
  for (int f = 0; f < r->folds; ++f) {
    double e = unit_pct(r, p, f);
    v += (e - m) * (e - m);
    lo = fmin(lo, e);
    hi = fmax(hi, e);
  }
  *mean = m;
  *sd = r->folds > 1 ? sqrt(v / (r->folds - 1)) : 0.0;
  *mn = lo;
  *mx = hi;
}

int report_write(const char *dir, const svm_results_t *r, char *err, size_t errlen) {
  if (report_make_dir(dir, err, errlen)) return -1;
  const grid_t *g = r->g;
  const int np = g->n_c * g->n_gamma;
  FILE *f = results_open(dir, "cv_errors.csv", err, errlen);
  if (!f) return -1;
  fprintf(f, "log10_gamma,log10_C,gamma,C,fold,n_val,errors,error_pct\n");
  for (int p = 0; p < np; ++p) {
    double lg = g->log_gamma[p / g->n_c], lc = g->log_c[p % g->n_c];
    for (int k = 0; k < r->folds; ++k)
      fprintf(f, "%.4f,%.4f,%.6g,%.6g,%d,%d,%d,%.4f\n", lg, lc, pow(10.0, lg), pow(10.0, lc), k,
              r->fold_size[k], r->errors[p * r->folds + k], unit_pct(r, p, k));
  }
  if (results_close(f, dir, "cv_errors.csv", err, errlen)) return -1;

  if (!(f = results_open(dir, "grid.csv", err, errlen))) return -1;
  fprintf(f, "log10_gamma,log10_C,gamma,C,mean_error_pct,std_error_pct,min_error_pct,"
             "max_error_pct\n");
  for (int p = 0; p < np; ++p) {
    double lg = g->log_gamma[p / g->n_c], lc = g->log_c[p % g->n_c], m, sd, lo, hi;
    point_stats(r, p, &m, &sd, &lo, &hi);
    fprintf(f, "%.4f,%.4f,%.6g,%.6g,%.4f,%.4f,%.4f,%.4f\n", lg, lc, pow(10.0, lg), pow(10.0, lc),
            m, sd, lo, hi);
  }
  if (results_close(f, dir, "grid.csv", err, errlen)) return -1;

  if (!(f = results_open(dir, "folds.csv", err, errlen))) return -1;
  fprintf(f, "index,fold\n");
  for (int i = 0; i < r->n_train; ++i) fprintf(f, "%d,%d\n", i, r->fold_of[i]);
  if (results_close(f, dir, "folds.csv", err, errlen)) return -1;

  if (!(f = results_open(dir, "results.json", err, errlen))) return -1;
  const int b = r->best_p;
  fprintf(f, "{\n  \"program\": \"mnist_svm\",\n  \"dataset\": \"%s\",\n", r->dataset);
  fprintf(f, "  \"n_train\": %d,\n  \"n_test\": %d,\n  \"folds\": %d,\n  \"classes\": %d,\n",
          r->n_train, r->n_test, r->folds, r->ncls);
  fprintf(f, "  \"multiclass\": \"%s\",\n  \"smo_eps\": %g,\n  \"seed\": %llu,\n",
          r->multiclass ? r->multiclass : "one-vs-rest", r->eps, (unsigned long long)r->seed);
  fprintf(f, "  \"ranks\": %d,\n  \"cv_seconds\": %.3f,\n  \"rank_seconds\": [", r->nranks,
          r->cv_seconds);
  for (int k = 0; k < r->nranks; ++k)
    fprintf(f, "%s%.3f", k ? ", " : "", r->rank_seconds[k]);
  fprintf(f, "],\n  \"rank_cpu_seconds\": [");
  for (int k = 0; k < r->nranks; ++k)
    fprintf(f, "%s%.3f", k ? ", " : "", r->rank_cpu_seconds ? r->rank_cpu_seconds[k] : 0.0);
  fprintf(f, "],\n  \"rank_expected_cost\": [");
  for (int k = 0; k < r->nranks; ++k) fprintf(f, "%s%.3f", k ? ", " : "", r->rank_load[k]);
  fprintf(f, "],\n  \"best\": {\"log10_C\": %.4f, \"log10_gamma\": %.4f, \"C\": %.6g, "
             "\"gamma\": %.6g, \"mean_val_error_pct\": %.4f},\n",
          g->log_c[b % g->n_c], g->log_gamma[b / g->n_c], pow(10.0, g->log_c[b % g->n_c]),
          pow(10.0, g->log_gamma[b / g->n_c]), report_mean_error(r, b));
  if (r->refit_done)
    fprintf(f, "  \"test_errors\": %d,\n  \"test_error_pct\": %.4f,\n  \"refit_seconds\": %.3f,\n",
            r->test_errors, r->n_test > 0 ? 100.0 * r->test_errors / r->n_test : 0.0,
            r->refit_seconds);
  fprintf(f, "  \"points\": [\n");
  for (int p = 0; p < np; ++p) {
    double m, sd, lo, hi;
    point_stats(r, p, &m, &sd, &lo, &hi);
    double cpu = 0.0;
    for (int k = 0; k < r->folds && r->unit_cpu_seconds; ++k)
      cpu += r->unit_cpu_seconds[p * r->folds + k];
    fprintf(f, "    {\"log10_gamma\": %.4f, \"log10_C\": %.4f, \"mean_error_pct\": %.4f, "
               "\"std_error_pct\": %.4f, \"cpu_seconds\": %.3f, \"fold_error_pct\": [",
            g->log_gamma[p / g->n_c], g->log_c[p % g->n_c], m, sd, cpu);
    for (int k = 0; k < r->folds; ++k) fprintf(f, "%s%.4f", k ? ", " : "", unit_pct(r, p, k));
    fprintf(f, "]}%s\n", p + 1 < np ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  return results_close(f, dir, "results.json", err, errlen);
}

static int gnuplot_available(void) {
  return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

int report_plot(const char *dir, const svm_results_t *r, char *err, size_t errlen) {
  const grid_t *g = r->g;
  char name[64];
  /* Box plots: one data file per gamma, one block (gnuplot index) per C. */
  for (int gi = 0; gi < g->n_gamma; ++gi) {
    snprintf(name, sizeof name, "boxplot_gamma_%d.dat", gi);
    FILE *f = results_open(dir, name, err, errlen);
    if (!f) return -1;
    for (int ci = 0; ci < g->n_c; ++ci) {
      fprintf(f, "# log10(C) = %.4f\n", g->log_c[ci]);
      for (int k = 0; k < r->folds; ++k)
        fprintf(f, "%.4f %.4f\n", g->log_c[ci], unit_pct(r, gi * g->n_c + ci, k));
      fprintf(f, "\n\n");
    }
    if (results_close(f, dir, name, err, errlen)) return -1;
    snprintf(name, sizeof name, "boxplot_gamma_%d.gp", gi);
    if (!(f = results_open(dir, name, err, errlen))) return -1;
    double step = g->n_c > 1 ? (g->log_c[g->n_c - 1] - g->log_c[0]) / (g->n_c - 1) : 1.0;
    fprintf(f,
            "# Box plot of the %d fold validation errors against log10(C), gamma = 1e%.2f.\n"
            "set terminal pngcairo size 800,600\nset output 'boxplot_gamma_%d.png'\n"
            "set title 'RBF SVM, %d-fold CV, gamma = %.3g'\n"
            "set xlabel 'log10(C)'\nset ylabel 'validation error (%%)'\n"
            "set style fill solid 0.3\nset style boxplot nooutliers\nset boxwidth %.4f\n"
            "set xrange [%.4f:%.4f]\nset offsets 0, 0, graph 0.08, graph 0.08\nset grid ytics\nunset key\n"
            "plot for [i=0:%d] 'boxplot_gamma_%d.dat' index i using 1:2 with boxplot lc rgb "
            "'#3070b0'\n",
            r->folds, g->log_gamma[gi], gi, r->folds, pow(10.0, g->log_gamma[gi]), step * 0.5,
            g->log_c[0] - step * 0.6, g->log_c[g->n_c - 1] + step * 0.6, g->n_c - 1, gi);
    if (results_close(f, dir, name, err, errlen)) return -1;
  }
  FILE *f = results_open(dir, "heatmap.dat", err, errlen);
  if (!f) return -1;
  for (int gi = 0; gi < g->n_gamma; ++gi) {
    for (int ci = 0; ci < g->n_c; ++ci)
      fprintf(f, "%.4f %.4f %.4f\n", g->log_c[ci], g->log_gamma[gi],
              report_mean_error(r, gi * g->n_c + ci));
    fprintf(f, "\n");
  }
  if (results_close(f, dir, "heatmap.dat", err, errlen)) return -1;
  if (!(f = results_open(dir, "heatmap.gp", err, errlen))) return -1;
  fprintf(f,
          "# Heat map of the mean %d-fold validation error over the (C, gamma) grid.\n"
          "set terminal pngcairo size 800,700\nset output 'heatmap.png'\n"
          "set title 'mean validation error (%%), %d-fold CV'\n"
          "set xlabel 'log10(C)'\nset ylabel 'log10(gamma)'\nset cblabel 'error (%%)'\n"
          "set palette rgbformulae 33,13,10\nset view map\nunset key\n"
          "plot 'heatmap.dat' using 1:2:3 with image, "
          "'' using 1:2:(sprintf('%%.2f', $3)) with labels\n",
          r->folds, r->folds);
  if (results_close(f, dir, "heatmap.gp", err, errlen)) return -1;

  if (!gnuplot_available()) return 1;
  for (int gi = 0; gi <= g->n_gamma; ++gi) {
    char cmd[4400];
    if (gi < g->n_gamma) snprintf(name, sizeof name, "boxplot_gamma_%d.gp", gi);
    else snprintf(name, sizeof name, "heatmap.gp");
    /* gnuplot runs in the results folder so the scripts use bare file names. */
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s' 2>&1", dir, name);
    if (strchr(dir, '\'')) {
      snprintf(err, errlen, "--results %s: a quote in the path; figures not drawn", dir);
      return -1;
    }
    if (system(cmd) != 0) {
      snprintf(err, errlen, "gnuplot failed on %s/%s", dir, name);
      return -1;
    }
  }
  return 0;
}
