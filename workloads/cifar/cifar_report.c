/* cifar_report.c: progress display and the --results files of cifar_ddp (see
 * cifar_report.h). Files are written to an owner-only temporary file and renamed
 * (trainer/atomic_file.h), so a reader (or a job killed mid-write) never sees half a
 * file. Plots are drawn by running gnuplot on
 * a script written next to the data, so the user can edit and re-run it. */
#include "cifar_report.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"

void cifar_progress_start(cifar_progress_t *p, int enabled, int epoch, int epochs, int steps,
                          double now) {
  memset(p, 0, sizeof *p);
  p->enabled = enabled;
  /* Open MPI hands its ranks a pseudo-terminal even when mpirun's own output goes to
   * a pipe or file, so under a launcher isatty() proves nothing: draw the bar there
   * only when asked (HV_PROGRESS=bar). HV_PROGRESS=lines forces plain lines. */
  const char *mode = getenv("HV_PROGRESS");
  const int launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
                       getenv("SLURM_PROCID");
  if (mode && !strcmp(mode, "bar")) p->tty = enabled;
  else if (mode && !strcmp(mode, "lines")) p->tty = 0;
  else p->tty = enabled && !launched && isatty(STDOUT_FILENO);
  p->epoch = epoch;
  p->epochs = epochs;
  p->steps = steps;
  p->next_plain = (steps + 9) / 10;
  p->t0 = now;
  p->last_draw = -1;
}

void cifar_progress_update(cifar_progress_t *p, int step, double loss, long long images,
                           double now) {
  if (!p->enabled || p->steps <= 0) return;
  const double dt = now - p->t0, rate = dt > 0 ? (double)images / dt : 0;
  if (p->tty) {
    /* Redraw at most 10 times a second: a terminal write per step would cost more than
     * a small model's step. */
    if (step < p->steps && p->last_draw >= 0 && now - p->last_draw < 0.1) return;
    p->last_draw = now;
    enum { WIDTH = 30 };
    char bar[WIDTH + 1];
    const int filled = (int)((long long)WIDTH * step / p->steps);
    for (int i = 0; i < WIDTH; i++) bar[i] = i < filled ? '#' : '.';
    bar[WIDTH] = '\0';
    printf("\rEpoch %d/%d [%s] %d/%d loss %.4f %.1f images/s ", p->epoch, p->epochs, bar, step,
           p->steps, loss, rate);
    fflush(stdout);
  } else if (step >= p->next_plain && step < p->steps) {
    printf("Epoch %d/%d step %d/%d loss %.4f %.1f images/second\n", p->epoch, p->epochs, step,
           p->steps, loss, rate);
    fflush(stdout);
    while (p->next_plain <= step) p->next_plain += (p->steps + 9) / 10;
  }
}

void cifar_progress_end(cifar_progress_t *p) {
  if (p->enabled && p->tty) {
    printf("\r%*s\r", 100, "");
    fflush(stdout);
  }
}

int cifar_report_mkdirs(const char *path, char *err, size_t errlen) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
    snprintf(err, errlen, "%s: path too long", path);
    return -1;
  }
  for (char *s = buf + 1;; s++) {
    const char c = *s;
    if (c == '/' || c == '\0') {
      *s = '\0';
      if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create directory %s: %s", buf, strerror(errno));
        return -1;
      }
      *s = c;
    }
    if (c == '\0') break;
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s exists and is not a directory", path);
    return -1;
  }
  return 0;
}

static const char CSV_HEADER[] =
    "epoch,train_loss,train_accuracy,val_loss,val_accuracy,seconds,images_per_second,lr,"
    "steps,images,cpu_seconds\n";

int cifar_report_write_csv(const char *path, const cifar_epoch_t *e, int n, char *err,
                           size_t errlen) {
  atomic_file_t af;
  if (atomic_file_open(&af, path, err, errlen)) return -1;
  FILE *f = af.f;
  fputs(CSV_HEADER, f);
  /* %.17g: a resumed run reads back exactly what the interrupted one measured. */
  for (int i = 0; i < n; i++) {
    fprintf(f, "%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%lld,%lld,%.17g\n", e[i].epoch,
            e[i].train_loss, e[i].train_acc, e[i].val_loss, e[i].val_acc, e[i].seconds,
            e[i].images_per_s, e[i].lr, e[i].steps, e[i].images, e[i].cpu_seconds);
  }
  return atomic_file_commit(&af, 0, err, errlen);
}

/* One results.csv row. strtod/strtoll with range checks rather than sscanf: sscanf's
 * %d on a number too large for an int is undefined behaviour (a damaged file must
 * give an error, nothing worse). 0, or -1 when the row is not a record. */
static int parse_record(const char *line, cifar_epoch_t *r) {
  double *reals[] = {&r->train_loss, &r->train_acc, &r->val_loss, &r->val_acc, &r->seconds,
                     &r->images_per_s, &r->lr};
  char *end;
  errno = 0;
  const long long epoch = strtoll(line, &end, 10);
  if (end == line || *end != ',' || epoch < 0 || epoch > INT_MAX) return -1;
  r->epoch = (int)epoch;
  for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
    const char *at = end + 1;
    *reals[i] = strtod(at, &end);
    if (end == at || *end != ',') return -1;
  }
  long long *ints[] = {&r->steps, &r->images};
  for (size_t i = 0; i < 2; i++) {
    const char *at = end + 1;
    *ints[i] = strtoll(at, &end, 10);
    if (end == at || *end != ',') return -1;
  }
  const char *at = end + 1;
  r->cpu_seconds = strtod(at, &end);
  if (end == at || (*end != '\n' && *end != '\0') || errno == ERANGE) return -1;
  return 0;
}

int cifar_report_read_csv(const char *path, cifar_epoch_t *e, int cap, char *err,
                          size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  char line[1024];
  int n = 0, lineno = 1;
  if (!fgets(line, sizeof line, f) || strcmp(line, CSV_HEADER) != 0) {
    snprintf(err, errlen, "%s: not a cifar_ddp results.csv (header differs)", path);
    fclose(f);
    return -1;
  }
  while (n < cap && fgets(line, sizeof line, f)) {
    lineno++;
    cifar_epoch_t r;
    if (parse_record(line, &r) != 0) {
      snprintf(err, errlen, "%s: line %d is not an epoch record", path, lineno);
      fclose(f);
      return -1;
    }
    e[n++] = r;
  }
  fclose(f);
  return n;
}

/* JSON string: the values we write are paths and names; escape what JSON requires. */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

static int write_json(const char *path, const cifar_args_t *a, const cifar_run_info_t *info,
                      const cifar_epoch_t *e, int n, char *err, size_t errlen) {
  atomic_file_t af;
  if (atomic_file_open(&af, path, err, errlen)) return -1;
  FILE *f = af.f;
  fprintf(f, "{\n  \"program\": \"cifar_ddp\",\n  \"config\": {\n    \"dataset\": ");
  json_str(f, a->dataset);
  fprintf(f, ",\n    \"data_dir\": ");
  json_str(f, info->data_dir);
  fprintf(f, ",\n    \"model\": ");
  json_str(f, a->model);
  fprintf(f,
          ",\n    \"parameters\": %lld,\n    \"batch_size\": %d,\n    \"local_batch\": %d,\n"
          "    \"micro_batches\": %d,\n    \"epochs\": %d,\n    \"base_lr\": %.17g,\n"
          "    \"lr_scaling\": \"%s\",\n    \"lr_peak\": %.17g,\n    \"warmup_epochs\": %.17g,\n"
          "    \"lr_schedule\": \"%s\",\n    \"momentum\": %.17g,\n    \"weight_decay\": %.17g,\n"
          "    \"nesterov\": %s,\n    \"dropout\": %.17g,\n    \"augment\": %s,\n    \"sync_bn\": %s,\n"
          "    \"target_accuracy\": %.17g,\n    \"patience\": %d,\n    \"seed\": %llu,\n"
          "    \"amp\": %s,\n    \"compression\": \"%s\",\n    \"max_steps\": %lld,\n"
          "    \"world_size\": %d,\n    \"nodes\": %d,\n    \"ranks_per_node\": %d,\n"
          "    \"device\": \"%s\",\n    \"train_images\": %d,\n    \"test_images\": %d,\n"
          "    \"steps_per_epoch\": %d\n  },\n  \"epochs\": [",
          info->n_params, info->global_batch, info->local_batch, a->micro_batches, a->epochs,
          a->base_lr, a->lr_linear_scaling ? "linear" : "none", info->lr_peak, a->warmup_epochs,
          a->lr_schedule, a->momentum, a->weight_decay, a->nesterov ? "true" : "false",
          a->dropout, a->augment ? "true" : "false", a->sync_bn ? "true" : "false", a->target_accuracy, a->patience,
          (unsigned long long)a->seed, a->amp ? "true" : "false", a->compression, a->max_steps,
          info->world, info->nodes, info->ranks_per_node, info->device, info->train_images,
          info->test_images, info->steps_per_epoch);
  for (int i = 0; i < n; i++) {
    fprintf(f,
            "%s\n    {\"epoch\": %d, \"train_loss\": %.9g, \"train_accuracy\": %.9g, "
            "\"val_loss\": %.9g, \"val_accuracy\": %.9g, \"seconds\": %.6g, "
            "\"images_per_second\": %.6g, \"lr\": %.9g, \"steps\": %lld, \"images\": %lld, "
            "\"cpu_seconds\": %.6g}",
            i ? "," : "", e[i].epoch, e[i].train_loss, e[i].train_acc, e[i].val_loss,
            e[i].val_acc, e[i].seconds, e[i].images_per_s, e[i].lr, e[i].steps, e[i].images,
            e[i].cpu_seconds);
  }
  fprintf(f,
          "\n  ],\n  \"summary\": {\"total_seconds\": %.6g, \"images_per_second\": %.6g, "
          "\"epochs_run\": %d, \"stopped_early\": %s, \"resumed_from_epoch\": %d, "
          "\"final_val_accuracy\": %.9g, \"eval_every\": %d, \"time_to_target_seconds\": ",
          info->total_seconds, info->images_per_s, n, info->stopped_early ? "true" : "false",
          info->resumed_from_epoch, n ? e[n - 1].val_acc : 0.0, a->eval_every);
  if (info->time_to_target_s >= 0)
    fprintf(f, "%.6g, \"time_to_target_training_seconds\": %.6g, \"target_step\": %lld}\n}\n",
            info->time_to_target_s, info->time_to_target_train_s, info->target_step);
  else
    fprintf(f, "null, \"time_to_target_training_seconds\": null, \"target_step\": null}\n}\n");
  return atomic_file_commit(&af, 0, err, errlen);
}

static int write_plots(const char *dir, const cifar_args_t *a, int n, char *warn, size_t warnlen,
                       char *err, size_t errlen) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    snprintf(warn, warnlen,
             "gnuplot not found: no PNG plots in %s (apt-get install gnuplot-nox); the JSON "
             "and CSV are there",
             dir);
    return 0;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/plots.gp", dir);
  atomic_file_t af;
  if (atomic_file_open(&af, path, err, errlen)) return -1;
  FILE *f = af.f;
  fprintf(f,
          "# cifar_ddp: per-epoch plots of results.csv (run: gnuplot plots.gp in this folder)\n"
          "set datafile separator ','\nset terminal pngcairo size 800,500 noenhanced\n"
          "set xtics %d\n"
          "set grid\nset xlabel 'epoch'\nset key top right\n"
          "set title 'cifar_ddp %s on %s: loss'\nset output 'loss.png'\n"
          "plot 'results.csv' using 1:2 with linespoints title 'training loss', \\\n"
          "     '' using 1:4 with linespoints title 'validation loss'\n"
          "set title 'cifar_ddp %s on %s: accuracy'\nset output 'accuracy.png'\n"
          "set yrange [0:1]\nset key bottom right\n"
          "plot 'results.csv' using 1:3 with linespoints title 'training accuracy', \\\n"
          "     '' using 1:5 with linespoints title 'validation accuracy', \\\n"
          "     %.17g with lines dashtype 2 title 'target'\n"
          "set autoscale y\nset yrange [0:*]\n"
          "set title 'cifar_ddp %s on %s: throughput'\nset output 'throughput.png'\n"
          "set ylabel 'images/second'\n"
          "plot 'results.csv' using 1:7 with linespoints title 'training images/second'\n",
          n > 10 ? (n + 9) / 10 : 1, a->model, a->dataset, a->model, a->dataset,
          a->target_accuracy, a->model, a->dataset);
  if (atomic_file_commit(&af, 0, err, errlen)) return -1;
  char cmd[8800];
  snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot plots.gp 2>&1", dir);
  FILE *pipe = popen(cmd, "r");
  char out[512] = "";
  size_t got = pipe ? fread(out, 1, sizeof out - 1, pipe) : 0;
  out[got] = '\0';
  const int rc = pipe ? pclose(pipe) : -1;
  if (rc != 0) {
    char *nl = strchr(out, '\n');
    if (nl) *nl = '\0';
    snprintf(warn, warnlen, "gnuplot failed on %s/plots.gp: %s", dir, out);
  }
  return 0;
}

int cifar_report_write_results(const char *dir, const cifar_args_t *a,
                               const cifar_run_info_t *info, const cifar_epoch_t *e, int n,
                               char *warn, size_t warnlen, char *err, size_t errlen) {
  warn[0] = '\0';
  if (strchr(dir, '\'')) {
    snprintf(err, errlen, "--results %s: a quote in the path is not supported", dir);
    return -1;
  }
  char path[4200];
  if (cifar_report_mkdirs(dir, err, errlen)) return -1;
  snprintf(path, sizeof path, "%s/results.csv", dir);
  if (cifar_report_write_csv(path, e, n, err, errlen)) return -1;
  snprintf(path, sizeof path, "%s/results.json", dir);
  if (write_json(path, a, info, e, n, err, errlen)) return -1;
  if (a->plots && n > 0) return write_plots(dir, a, n, warn, warnlen, err, errlen);
  return 0;
}
