/* bench_output.c: machine-readable results (--json, --csv) and the bus-bandwidth plot
 * (--plot, drawn by gnuplot from a data file and script kept beside the image so the
 * figure can be redrawn or restyled). Rank 0 writes; each function returns 0 or prints
 * one line saying which file failed and why, and returns non-zero. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "hvbench.h"

extern char **environ;

static const char *redop_of(const bench_options_t *o, const bench_row_t *r) {
  return coll_is_reducing(o->coll) ? op_short_name(r->op) : "none";
}

static FILE *open_out(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) fprintf(stderr, "hvbench: rank 0: cannot write %s: %s\n", path, strerror(errno));
  return f;
}

static int close_out(FILE *f, const char *path) {
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    fprintf(stderr, "hvbench: rank 0: writing %s failed: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

/* JSON string with the characters JSON forbids escaped. */
static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

static void json_stats(FILE *f, const bench_stats_t *s) {
  if (!s->valid) {
    fprintf(f, "null");
    return;
  }
  fprintf(f,
          "{\"time_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, \"p50_us\": %.3f, "
          "\"p99_us\": %.3f, \"algbw_gbs\": %.9g, \"busbw_gbs\": %.9g, \"wrong\": %lld, "
          "\"oob\": %lld, \"cpu_us\": %.3f}",
          s->avg_us, s->min_us, s->max_us, s->p50_us, s->p99_us, s->algbw, s->busbw, s->wrong,
          s->oob, s->cpu_us);
}

int output_json(const char *path, const bench_options_t *o, const bench_row_t *rows,
                size_t nrows, bench_backend_t *backends, int nbackends, int nranks) {
  FILE *f = open_out(path);
  if (!f) return -1;
  fprintf(f, "{\n  \"tool\": \"hvbench\",\n  \"version\": \"%d.%d.%d\",\n", HV_VERSION_MAJOR,
          HV_VERSION_MINOR, HV_VERSION_PATCH);
  fprintf(f, "  \"collective\": \"%s\",\n  \"ranks\": %d,\n", coll_name(o->coll), nranks);
  fprintf(f,
          "  \"options\": {\"minbytes\": %zu, \"maxbytes\": %zu, \"stepfactor\": %g, "
          "\"stepbytes\": %zu, \"iters\": %d, \"warmup\": %d, \"check\": %d, \"tensors\": %d, "
          "\"engine\": %s, \"grouped\": %s, \"compression\": \"%s\", \"device\": \"%s\", "
          "\"busbw_factor\": %.9g},\n",
          o->min_bytes, o->max_bytes, o->step_bytes ? 0.0 : o->step_factor, o->step_bytes,
          o->iters, o->warmup, o->check, o->tensors, o->engine ? "true" : "false", o->grouped ? "true" : "false",
          compression_name(o->compression), device_name(o->device), coll_busbw_factor(o->coll, nranks));
  fprintf(f, "  \"backends\": [");
  for (int k = 0; k < nbackends; k++) {
    fprintf(f, "%s\n    {\"name\": ", k ? "," : "");
    json_string(f, backends[k].name);
    fprintf(f, ", \"detail\": ");
    json_string(f, backends[k].detail);
    fprintf(f, ", \"peer\": %s}", backends[k].is_peer ? "true" : "false");
  }
  fprintf(f, "\n  ],\n  \"rows\": [");
  for (size_t i = 0; i < nrows; i++) {
    const bench_row_t *r = &rows[i];
    fprintf(f,
            "%s\n    {\"backend\": \"%s\", \"type\": \"%s\", \"redop\": \"%s\", \"root\": %d, "
            "\"size\": %zu, \"count\": %zu, \"out_of_place\": ",
            i ? "," : "", backends[r->backend].name, dtype_short_name(r->dtype), redop_of(o, r),
            r->root, r->bytes, r->count);
    json_stats(f, &r->place[0]);
    fprintf(f, ", \"in_place\": ");
    json_stats(f, &r->place[1]);
    fprintf(f, "}");
  }
  fprintf(f, "\n  ]\n}\n");
  return close_out(f, path);
}

int output_csv(const char *path, const bench_options_t *o, const bench_row_t *rows,
               size_t nrows, bench_backend_t *backends, int nbackends, int nranks) {
  (void)nbackends;
  FILE *f = open_out(path);
  if (!f) return -1;
  fprintf(f, "backend,collective,type,redop,root,size_bytes,count,tensors,ranks,placement,"
             "time_us,min_us,max_us,p50_us,p99_us,algbw_gbs,busbw_gbs,wrong,oob,device,compression,grouped,cpu_us\n");
  for (size_t i = 0; i < nrows; i++) {
    const bench_row_t *r = &rows[i];
    for (int p = 0; p < 2; p++) {
      const bench_stats_t *s = &r->place[p];
      if (!s->valid) continue;
      fprintf(f, "%s,%s,%s,%s,%d,%zu,%zu,%d,%d,%s,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%lld,%lld,%s,%s,%d,%.9g\n",
              backends[r->backend].name, coll_name(o->coll), dtype_short_name(r->dtype),
              redop_of(o, r), r->root, r->bytes, r->count, o->tensors, nranks,
              p ? "in-place" : "out-of-place", s->avg_us, s->min_us, s->max_us, s->p50_us,
              s->p99_us, s->algbw, s->busbw, s->wrong, s->oob, device_name(o->device),
              compression_name(o->compression), o->grouped, s->cpu_us);
    }
  }
  return close_out(f, path);
}

/* One gnuplot data block per (backend, dtype, op) series, in row order. */
static int write_plot_data(const char *dat, const bench_options_t *o, const bench_row_t *rows,
                           size_t nrows, bench_backend_t *backends, char titles[][96],
                           int max_series) {
  FILE *f = open_out(dat);
  if (!f) return -1;
  int series = 0;
  for (size_t i = 0; i < nrows; i++) {
    const bench_row_t *r = &rows[i];
    int starts = i == 0 || rows[i - 1].backend != r->backend || rows[i - 1].dtype != r->dtype ||
                 rows[i - 1].op != r->op;
    if (starts) {
      if (series == max_series) break;
      if (series) fprintf(f, "\n\n");
      snprintf(titles[series], 96, "%s %s%s%s", backends[r->backend].name,
               dtype_short_name(r->dtype), coll_is_reducing(o->coll) ? " " : "",
               coll_is_reducing(o->coll) ? op_short_name(r->op) : "");
      fprintf(f, "# %s\n# size_bytes busbw_gbs\n", titles[series]);
      series++;
    }
    const bench_stats_t *s = r->place[0].valid ? &r->place[0] : &r->place[1];
    if (s->valid) fprintf(f, "%zu %.6f\n", r->bytes, s->busbw);
  }
  return close_out(f, dat) == 0 ? series : -1;
}

int output_plot(const char *path, const bench_options_t *o, const bench_row_t *rows,
                size_t nrows, bench_backend_t *backends, int nbackends, int nranks) {
  (void)nbackends;
  if (strchr(path, '\'')) {
    fprintf(stderr, "hvbench: rank 0: plot path %s may not contain a quote\n", path);
    return -1;
  }
  size_t len = strlen(path);
  char *dat = malloc(len + 8), *gp = malloc(len + 8);
  enum { MAX_SERIES = 64 };
  char(*titles)[96] = calloc(MAX_SERIES, 96);
  int rc = -1;
  if (!dat || !gp || !titles) goto done;
  snprintf(dat, len + 8, "%s.dat", path);
  snprintf(gp, len + 8, "%s.gp", path);
  int series = write_plot_data(dat, o, rows, nrows, backends, titles, MAX_SERIES);
  if (series < 0) goto done;
  FILE *f = open_out(gp);
  if (!f) goto done;
  int svg = strcmp(path + len - 4, ".svg") == 0;
  fprintf(f, "# hvbench plot: bus bandwidth against size; redraw with: gnuplot %s\n", gp);
  fprintf(f, "set terminal %s size 1000,600\n", svg ? "svg dynamic" : "pngcairo");
  fprintf(f, "set output '%s'\n", path);
  fprintf(f, "set title 'hvbench %s, %d ranks%s (busbw factor %.3f)'\n", coll_name(o->coll),
          nranks, o->tensors > 1 ? ", fused tensors" : "", coll_busbw_factor(o->coll, nranks));
  fprintf(f, "set logscale x 2\nset format x '%%.0b%%B'\nset xlabel 'size (bytes)'\n");
  fprintf(f, "set ylabel 'bus bandwidth (GB/s)'\nset grid\nset key left top\n");
  fprintf(f, "plot ");
  for (int k = 0; k < series; k++)
    fprintf(f, "%s'%s' index %d using 1:2 with linespoints title '%s'", k ? ", \\\n     " : "",
            dat, k, titles[k]);
  fprintf(f, "\n");
  if (close_out(f, gp) != 0) goto done;

  pid_t pid;
  char prog[] = "gnuplot";
  char *argv[] = {prog, gp, NULL};
  int err = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
  if (err != 0) {
    fprintf(stderr,
            "hvbench: rank 0: cannot run gnuplot for --plot: %s (install gnuplot-nox, "
            "tools/deps/bench.txt); the data is in %s\n",
            strerror(err), dat);
    goto done;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "hvbench: rank 0: gnuplot %s failed (status %d)\n", gp, status);
    goto done;
  }
  printf("# plot written to %s (data %s, script %s)\n", path, dat, gp);
  rc = 0;
done:
  free(dat);
  free(gp);
  free(titles);
  return rc;
}
