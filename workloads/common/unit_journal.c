/* unit_journal.c: the journal of finished work units (see unit_journal.h): files of
 * checksummed lines, one per (attempt, rank), appended one whole record per write(). */
#define _POSIX_C_SOURCE 200809L
#include "unit_journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOURNAL_MAGIC "hv-journal 1 "

uint64_t unit_journal_hash(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

uint32_t unit_journal_crc32(const void *data, size_t n) {
  static uint32_t table[256];
  static int ready = 0;
  if (!ready) { /* benign if two threads race: both write the same values */
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    ready = 1;
  }
  const unsigned char *p = data;
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

void unit_journal_dir(const char *results, char *out, size_t len) {
  snprintf(out, len, "%s/journal", results);
}

/* mkdir -p */
static int make_dirs(const char *dir, char *err, size_t errlen) {
  char p[4200];
  snprintf(p, sizeof p, "%s", dir);
  for (char *s = p + 1;; ++s) {
    if (*s == '/' || !*s) {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot make the journal folder %s: %s", p, strerror(errno));
        return -1;
      }
      if (!c) break;
      *s = c;
    }
  }
  return 0;
}

/* attempt-<a>-rank-<r>.txt, or attempt-<a>-rank-<r>.<k>.txt when that was taken. */
static int is_journal_file(const char *name) {
  int a, r, k, used = 0;
  if (sscanf(name, "attempt-%d-rank-%d.txt%n", &a, &r, &used) == 2 && used > 0 && !name[used]) return 1;
  used = 0;
  return sscanf(name, "attempt-%d-rank-%d.%d.txt%n", &a, &r, &k, &used) == 3 && used > 0 && !name[used];
}

int unit_journal_clear(const char *results, char *err, size_t errlen) {
  char dir[4200], path[8500];
  unit_journal_dir(results, dir, sizeof dir);
  DIR *d = opendir(dir);
  if (!d) return 0; /* no journal yet */
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d))) {
    if (!is_journal_file(e->d_name)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) != 0 && errno != ENOENT) {
      snprintf(err, errlen, "cannot remove the old journal file %s: %s", path, strerror(errno));
      rc = -1;
      break;
    }
  }
  closedir(d);
  return rc;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int unit_journal_open(unit_journal_t *j, const char *results, int attempt, int rank,
                      const char *config, char *err, size_t errlen) {
  memset(j, 0, sizeof *j);
  j->fd = -1;
  char dir[4200];
  unit_journal_dir(results, dir, sizeof dir);
  if (make_dirs(dir, err, errlen)) return -1;
  /* A new file, never one that holds records already (--resume run twice is attempt 0
   * twice): the first free name. */
  for (int k = 0; j->fd < 0 && k < 10000; ++k) {
    if (k == 0) snprintf(j->path, sizeof j->path, "%s/attempt-%d-rank-%d.txt", dir, attempt, rank);
    else snprintf(j->path, sizeof j->path, "%s/attempt-%d-rank-%d.%d.txt", dir, attempt, rank, k);
    j->fd = open(j->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
    if (j->fd < 0 && errno != EEXIST) break;
  }
  if (j->fd < 0) {
    snprintf(err, errlen, "cannot write the journal %s: %s", j->path, strerror(errno));
    return -1;
  }
  size_t n = strlen(JOURNAL_MAGIC) + strlen(config) + 2;
  char *h = malloc(n);
  if (!h) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  snprintf(h, n, "%s%s\n", JOURNAL_MAGIC, config);
  int bad = write_all(j->fd, h, n - 1) != 0 || fdatasync(j->fd) != 0;
  free(h);
  if (bad) {
    snprintf(err, errlen, "cannot write the journal %s: %s", j->path, strerror(errno));
    unit_journal_close(j);
    return -1;
  }
  return 0;
}

__attribute__((format(printf, 2, 0))) static void add_v(unit_journal_t *j, const char *fmt, va_list ap) {
  if (j->oom) return;
  for (;;) {
    va_list aq;
    va_copy(aq, ap);
    size_t room = j->cap - j->len;
    int n = vsnprintf(j->buf ? j->buf + j->len : NULL, room, fmt, aq);
    va_end(aq);
    if (n < 0) {
      j->oom = 1;
      return;
    }
    if ((size_t)n < room) {
      j->len += (size_t)n;
      return;
    }
    size_t cap = j->cap ? j->cap : 4096;
    while (cap - j->len <= (size_t)n + 16) cap *= 2;
    char *b = realloc(j->buf, cap);
    if (!b) {
      j->oom = 1;
      return;
    }
    j->buf = b;
    j->cap = cap;
  }
}

void unit_journal_add(unit_journal_t *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add_v(j, fmt, ap);
  va_end(ap);
}

void unit_journal_begin(unit_journal_t *j, int unit) {
  j->len = 0;
  j->oom = 0;
  unit_journal_add(j, "unit %d", unit);
}

int unit_journal_commit(unit_journal_t *j, char *err, size_t errlen) {
  if (j->fd < 0) {
    snprintf(err, errlen, "the journal is not open");
    return -1;
  }
  uint32_t crc = j->oom ? 0 : unit_journal_crc32(j->buf, j->len);
  unit_journal_add(j, " %08x\n", (unsigned)crc);
  if (j->oom) {
    snprintf(err, errlen, "out of memory for a journal record");
    return -1;
  }
  if (write_all(j->fd, j->buf, j->len) != 0 || fdatasync(j->fd) != 0) {
    snprintf(err, errlen, "cannot write the journal %s: %s", j->path, strerror(errno));
    return -1;
  }
  return 0;
}

void unit_journal_close(unit_journal_t *j) {
  if (j->fd >= 0) close(j->fd);
  j->fd = -1;
  free(j->buf);
  j->buf = NULL;
  j->len = j->cap = 0;
}

static void warn_line(unit_journal_warn_fn warn, void *ctx, const char *path, long line,
                      const char *what, int unit) {
  if (!warn) return;
  char msg[9000];
  if (unit >= 0)
    snprintf(msg, sizeof msg, "%s line %ld: %s: the record of unit %d is not trusted", path, line,
             what, unit);
  else
    snprintf(msg, sizeof msg, "%s line %ld: %s: record not trusted", path, line, what);
  warn(ctx, msg);
}

static int is_value(const char *t) {
  return (*t >= '0' && *t <= '9') || *t == '-' || *t == '+' || *t == '.';
}

/* The names of the items two configuration lines ("name value ... name value ...")
 * differ in, comma-separated, into out. */
static void config_diff(const char *a, const char *b, char *out, size_t len) {
  char x[2048], y[2048], *sx, *sy;
  snprintf(x, sizeof x, "%s", a);
  snprintf(y, sizeof y, "%s", b);
  out[0] = '\0';
  const char *key = "", *last = "";
  char *tx = strtok_r(x, " ", &sx), *ty = strtok_r(y, " ", &sy);
  for (; tx && ty; tx = strtok_r(NULL, " ", &sx), ty = strtok_r(NULL, " ", &sy)) {
    /* Names are the same in two lines of one layout: a token that differs is a value. */
    const int value = is_value(tx) || strcmp(tx, ty) != 0;
    if (strcmp(tx, ty) != 0) {
      const char *name = value ? key : tx;
      if (strcmp(name, last) != 0) {
        size_t n = strlen(out);
        snprintf(out + n, len - n, "%s%s", n ? ", " : "", name);
        last = name;
      }
    }
    if (!value) key = tx; /* a name, or a word value (then the next name follows) */
  }
  if (!out[0] || tx || ty) {
    size_t n = strlen(out);
    snprintf(out + n, len - n, "%sthe layout", n ? ", " : "");
  }
}

/* One file: -1 (err set) when it belongs to another configuration or cannot be read. */
static int load_file(const char *path, const char *config, unit_journal_record_fn fn,
                     unit_journal_warn_fn warn, void *ctx, int *kept, int *damaged, char *err,
                     size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "cannot read the journal %s: %s", path, strerror(errno));
    return -1;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  long no = 0;
  int rc = 0;
  while ((n = getline(&line, &cap, f)) > 0) {
    ++no;
    const int whole = line[n - 1] == '\n';
    if (whole) line[--n] = '\0';
    if (no == 1) {
      const size_t m = strlen(JOURNAL_MAGIC);
      if (!whole || strncmp(line, JOURNAL_MAGIC, m) != 0) {
        /* Killed before its header was written, or not ours: nothing in it to trust. */
        warn_line(warn, ctx, path, no, whole ? "not a journal header" : "truncated header", -1);
        ++*damaged;
        break;
      }
      if (strcmp(line + m, config) != 0) {
        char diff[512];
        config_diff(line + m, config, diff, sizeof diff);
        snprintf(err, errlen,
                 "the journal %s was written by another configuration (it differs in: %s; "
                 "journal: '%s'; this run: '%s'): it is not mixed in; remove it or choose "
                 "another --results",
                 path, diff, line + m, config);
        rc = -1;
        break;
      }
      continue;
    }
    int unit = -1, used = 0;
    if (sscanf(line, "unit %d%n", &unit, &used) != 1) unit = -1;
    if (!whole) {
      warn_line(warn, ctx, path, no, "truncated line", unit);
      ++*damaged;
      continue;
    }
    char *sp = strrchr(line, ' ');
    unsigned crc = 0;
    int cu = 0;
    if (!sp || sscanf(sp + 1, "%8x%n", &crc, &cu) != 1 || cu != 8 || sp[9] ||
        unit_journal_crc32(line, (size_t)(sp - line)) != crc) {
      warn_line(warn, ctx, path, no, "checksum mismatch", unit);
      ++*damaged;
      continue;
    }
    *sp = '\0';
    if (unit < 0 || (line[used] != ' ' && line[used] != '\0') ||
        fn(ctx, unit, line + used + (line[used] == ' ')) != 0) {
      warn_line(warn, ctx, path, no, "unreadable record", unit);
      ++*damaged;
      continue;
    }
    ++*kept;
  }
  if (rc == 0 && ferror(f)) {
    snprintf(err, errlen, "cannot read the journal %s: %s", path, strerror(errno));
    rc = -1;
  }
  free(line);
  fclose(f);
  return rc;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int unit_journal_load(const char *results, const char *config, unit_journal_record_fn fn,
                      unit_journal_warn_fn warn, void *ctx, int *damaged, char *err,
                      size_t errlen) {
  char dir[4200], path[8500];
  unit_journal_dir(results, dir, sizeof dir);
  *damaged = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  /* Files in name order, so the lines about them come out the same way every time. */
  char **names = NULL;
  size_t nn = 0, cap = 0;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d))) {
    if (!is_journal_file(e->d_name)) continue;
    if (nn == cap) {
      cap = cap ? 2 * cap : 16;
      char **t = realloc(names, cap * sizeof *names);
      if (!t) {
        rc = -1;
        break;
      }
      names = t;
    }
    if (!(names[nn] = strdup(e->d_name))) {
      rc = -1;
      break;
    }
    nn++;
  }
  closedir(d);
  if (rc) snprintf(err, errlen, "out of memory listing %s", dir);
  if (!rc && nn) qsort(names, nn, sizeof *names, cmp_names);
  int kept = 0;
  for (size_t i = 0; i < nn && !rc; ++i) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    rc = load_file(path, config, fn, warn, ctx, &kept, damaged, err, errlen);
  }
  for (size_t i = 0; i < nn; ++i) free(names[i]);
  free(names);
  return rc ? -1 : kept;
}
