/* timeline.c: Chrome trace event writer (JSON array of "X" complete events plus
 * "thread_name" metadata naming each tensor's row). Buffered stdio; the array is
 * closed at shutdown, and viewers also accept a file cut short by a crash. */
#include "timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "hv_internal.h"

struct hv__timeline {
  FILE *file;
  int rank;
  double origin_us;
  hv__map_t rows; /* tensor name -> row id (stored as pointer-sized integer) */
  char **names;   /* owned keys of rows */
  size_t nrows, cap;
};

struct hv__timeline *hv__timeline_open(const char *path, int rank, char *err, size_t errlen) {
  char file_path[600];
  size_t len = strlen(path);
  if (len > 5 && strcmp(path + len - 5, ".json") == 0)
    snprintf(file_path, sizeof file_path, "%.*s.rank%d.json", (int)(len - 5), path, rank);
  else
    snprintf(file_path, sizeof file_path, "%s.rank%d", path, rank);
  struct hv__timeline *tl = calloc(1, sizeof *tl);
  if (!tl) return NULL;
  tl->file = fopen(file_path, "w");
  if (!tl->file) {
    snprintf(err, errlen, "HV_TIMELINE: cannot open '%s' for writing", file_path);
    free(tl);
    return NULL;
  }
  tl->rank = rank;
  tl->origin_us = hv__now_us();
  fprintf(tl->file, "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"hv rank %d\"}}", rank, rank);
  return tl;
}

/* Writes s as a JSON string body (quotes and control characters escaped). */
static void write_json_string(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
}

static long row_of(struct hv__timeline *tl, const char *name) {
  void *v = hv__map_get(&tl->rows, name);
  if (v) return (long)(intptr_t)v;
  if (tl->nrows == tl->cap) {
    size_t cap = tl->cap ? tl->cap * 2 : 64;
    char **names = realloc(tl->names, cap * sizeof *names);
    if (!names) return 0;
    tl->names = names;
    tl->cap = cap;
  }
  char *key = strdup(name);
  if (!key) return 0;
  long row = (long)tl->nrows + 1;
  if (hv__map_put(&tl->rows, key, (void *)(intptr_t)row)) {
    free(key);
    return 0;
  }
  tl->names[tl->nrows++] = key;
  fprintf(tl->file, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%ld,\"args\":{\"name\":\"", tl->rank, row);
  write_json_string(tl->file, name);
  fprintf(tl->file, "\"}}");
  return row;
}

void hv__timeline_span(struct hv__timeline *tl, const char *name, const char *phase,
                       double start_us, double end_us) {
  if (!tl) return;
  long row = row_of(tl, name);
  fprintf(tl->file, ",\n{\"name\":\"%s\",\"cat\":\"hv\",\"ph\":\"X\",\"pid\":%d,\"tid\":%ld,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"tensor\":\"",
          phase, tl->rank, row, start_us - tl->origin_us, end_us - start_us);
  write_json_string(tl->file, name);
  fprintf(tl->file, "\"}}");
}

void hv__timeline_close(struct hv__timeline *tl) {
  if (!tl) return;
  fprintf(tl->file, "\n]\n");
  fclose(tl->file);
  for (size_t i = 0; i < tl->nrows; i++) free(tl->names[i]);
  free(tl->names);
  hv__map_free(&tl->rows);
  free(tl);
}
