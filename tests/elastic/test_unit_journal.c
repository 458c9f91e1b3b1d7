/* test_unit_journal.c: the journal of finished work units (workloads/common/unit_journal.h)
 * without MPI: records read back as written; a resumed writer gets a new file and never
 * truncates one; damaged records (checksum, cut line, unreadable payload, cut header) are
 * counted and named, the rest kept; another configuration is refused naming what
 * differs; clear removes the journal files only. Exit 0 when all hold. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit_journal.h"

static int fails = 0;
#define CHECK(c, ...)                                  \
  do {                                                 \
    if (!(c)) {                                        \
      fprintf(stderr, "FAIL line %d: ", __LINE__);     \
      fprintf(stderr, __VA_ARGS__);                    \
      fputc('\n', stderr);                             \
      fails++;                                         \
    }                                                  \
  } while (0)

typedef struct seen {
  int value[16], n_warn;
  char warn[8][512];
} seen_t;

static int on_record(void *ctx, int u, char *payload) {
  seen_t *s = ctx;
  int v, used = 0;
  if (u >= 16 || sscanf(payload, "%d%n", &v, &used) != 1 || payload[used]) return -1;
  s->value[u] = v;
  return 0;
}

static void on_warn(void *ctx, const char *line) {
  seen_t *s = ctx;
  if (s->n_warn < 8) snprintf(s->warn[s->n_warn], sizeof s->warn[0], "%s", line);
  s->n_warn++;
}

static int load(const char *dir, const char *config, seen_t *s, int *damaged, char *err) {
  memset(s, 0, sizeof *s);
  for (int u = 0; u < 16; ++u) s->value[u] = -1;
  return unit_journal_load(dir, config, on_record, on_warn, s, damaged, err, 1024);
}

static int any_warn(const seen_t *s, const char *part) {
  for (int i = 0; i < s->n_warn && i < 8; ++i)
    if (strstr(s->warn[i], part)) return 1;
  return 0;
}

int main(void) {
  char dir[] = "/tmp/hv-unit-journal.XXXXXX", err[1024], path[4400];
  if (!mkdtemp(dir)) return 1;
  const char *cfg = "test data 0123 seed 1 grid 3 mode ovr";
  unit_journal_t j;
  seen_t s;
  int damaged = 0;

  CHECK(unit_journal_crc32("123456789", 9) == 0xcbf43926u, "CRC-32 check value");
  CHECK(load(dir, cfg, &s, &damaged, err) == 0 && damaged == 0, "no journal: nothing kept");

  /* Two writers, three records. */
  CHECK(unit_journal_open(&j, dir, 0, 0, cfg, err, sizeof err) == 0, "open: %s", err);
  for (int u = 0; u < 3; ++u) {
    unit_journal_begin(&j, u);
    unit_journal_add(&j, " %d", 100 + u);
    CHECK(unit_journal_commit(&j, err, sizeof err) == 0, "commit: %s", err);
  }
  unit_journal_close(&j);
  CHECK(unit_journal_open(&j, dir, 0, 1, cfg, err, sizeof err) == 0, "open: %s", err);
  unit_journal_begin(&j, 7);
  unit_journal_add(&j, " %d", 107);
  CHECK(unit_journal_commit(&j, err, sizeof err) == 0, "commit: %s", err);
  unit_journal_close(&j);
  CHECK(load(dir, cfg, &s, &damaged, err) == 4 && damaged == 0, "4 records kept");
  CHECK(s.value[0] == 100 && s.value[2] == 102 && s.value[7] == 107, "values read back");

  /* Resumed as the same attempt and rank: a new file, the old one untouched. */
  CHECK(unit_journal_open(&j, dir, 0, 0, cfg, err, sizeof err) == 0, "reopen: %s", err);
  CHECK(strstr(j.path, "attempt-0-rank-0.1.txt") != NULL, "new file name: %s", j.path);
  unit_journal_begin(&j, 5);
  unit_journal_add(&j, " %d", 105);
  CHECK(unit_journal_commit(&j, err, sizeof err) == 0, "commit: %s", err);
  unit_journal_close(&j);
  CHECK(load(dir, cfg, &s, &damaged, err) == 5 && s.value[1] == 101 && s.value[5] == 105,
        "the first file still holds its records");

  /* Damage: a changed digit (checksum), an unreadable payload with a good checksum, a
   * line cut short; and a file whose header was cut. */
  snprintf(path, sizeof path, "%s/journal/attempt-0-rank-0.txt", dir);
  FILE *f = fopen(path, "r+");
  CHECK(f != NULL, "open %s", path);
  if (f) {
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    char *l2 = strstr(buf, "unit 1 101");
    if (l2) l2[8] = '9'; /* unit 1 191 */
    rewind(f);
    fwrite(buf, 1, n, f);
    fclose(f);
  }
  unit_journal_t w;
  CHECK(unit_journal_open(&w, dir, 1, 0, cfg, err, sizeof err) == 0, "open: %s", err);
  unit_journal_begin(&w, 9);
  unit_journal_add(&w, " not-a-number");
  CHECK(unit_journal_commit(&w, err, sizeof err) == 0, "commit: %s", err);
  unit_journal_begin(&w, 3);
  unit_journal_add(&w, " %d", 103);
  CHECK(unit_journal_commit(&w, err, sizeof err) == 0, "commit: %s", err);
  unit_journal_begin(&w, 4);
  unit_journal_add(&w, " %d", 104);
  CHECK(unit_journal_commit(&w, err, sizeof err) == 0, "commit: %s", err);
  CHECK(ftruncate(w.fd, lseek(w.fd, 0, SEEK_END) - 3) == 0, "truncate");
  unit_journal_close(&w);
  snprintf(path, sizeof path, "%s/journal/attempt-2-rank-0.txt", dir);
  f = fopen(path, "w");
  if (f) fputs("hv-journal 1 test da", f), fclose(f);
  int kept = load(dir, cfg, &s, &damaged, err);
  CHECK(kept == 5 && damaged == 4, "kept %d (want 5), damaged %d (want 4)", kept, damaged);
  CHECK(s.value[1] == -1 && s.value[9] == -1 && s.value[4] == -1 && s.value[3] == 103,
        "damaged records not trusted, the good one kept");
  CHECK(any_warn(&s, "attempt-0-rank-0.txt line 3: checksum mismatch: the record of unit 1"),
        "checksum named: %s", s.warn[0]);
  CHECK(any_warn(&s, "attempt-1-rank-0.txt line 2: unreadable record: the record of unit 9"),
        "unreadable named");
  CHECK(any_warn(&s, "attempt-1-rank-0.txt line 4: truncated line: the record of unit 4"),
        "truncated named");
  CHECK(any_warn(&s, "attempt-2-rank-0.txt line 1: truncated header"), "cut header named");

  /* Another configuration: refused, naming what differs. */
  CHECK(load(dir, "test data 0123 seed 2 grid 3 mode ovo", &s, &damaged, err) == -1 &&
            strstr(err, "another configuration (it differs in: seed, mode;") != NULL,
        "refused: %s", err);

  /* clear: the journal files go, anything else stays. */
  snprintf(path, sizeof path, "%s/journal/notes.txt", dir);
  f = fopen(path, "w");
  if (f) fclose(f);
  CHECK(unit_journal_clear(dir, err, sizeof err) == 0, "clear: %s", err);
  CHECK(load(dir, cfg, &s, &damaged, err) == 0 && damaged == 0, "cleared");
  CHECK(access(path, F_OK) == 0, "clear left other files alone");
  unlink(path);
  snprintf(path, sizeof path, "%s/journal", dir);
  rmdir(path);
  rmdir(dir);
  printf("%s\n", fails ? "unit_journal: FAILED" : "unit_journal: all checks passed");
  return fails ? 1 : 0;
}
