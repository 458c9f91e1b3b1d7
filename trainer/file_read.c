/* file_read.c: reads through zlib's gzread, which passes plain files through
 * unchanged, so every loader accepts .gz and uncompressed files alike. The streaming
 * reads (file_stream_*) let a reader check its header before it allocates the body;
 * file_read_all, for formats without one, stops one byte past its limit. */
#include "file_read.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

/* gzread takes an unsigned count: read in pieces of at most this. */
#define READ_PIECE ((size_t)1 << 30)
/* The first allocation of a body: bodies grow from here as their bytes arrive. */
#define FIRST_CHUNK ((size_t)1 << 20)

int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int file_stream_open(file_stream_t *s, const char *path, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->path = path;
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  errno = 0;
  gzFile f = gzopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
    return -1;
  }
  s->gz = f;
  s->bytes = (unsigned long long)st.st_size;
  /* gzdirect looks at the first bytes (it reads them into zlib's buffer). */
  s->gzip = !gzdirect(f);
  return 0;
}

unsigned long long file_stream_capacity(const file_stream_t *s) {
  if (!s->gzip) return s->bytes;
  return s->bytes > ULLONG_MAX / FILE_GZIP_MAX_RATIO ? ULLONG_MAX
                                                     : s->bytes * FILE_GZIP_MAX_RATIO;
}

/* The message of a failed gzread, or 0 when the stream is sound. gzread reports a gzip
 * stream cut short as a plain end of file; gzerror tells. */
static int gz_failed(file_stream_t *s, unsigned long long at, char *err, size_t errlen) {
  int zerr = 0;
  const char *msg = gzerror(s->gz, &zerr);
  if (zerr == Z_OK || zerr == Z_STREAM_END) return 0;
  snprintf(err, errlen, "%s: corrupt or truncated gzip data after %llu bytes: %s", s->path, at,
           msg);
  return -1;
}

int file_stream_read(file_stream_t *s, void *buf, size_t n, size_t *got, char *err,
                     size_t errlen) {
  uint8_t *p = buf;
  *got = 0;
  while (*got < n) {
    size_t want = n - *got;
    if (want > READ_PIECE) want = READ_PIECE;
    int r = gzread(s->gz, p + *got, (unsigned)want);
    if (r < 0) {
      if (!gz_failed(s, *got, err, errlen))
        snprintf(err, errlen, "%s: read error after %zu bytes", s->path, *got);
      return -1;
    }
    if (r == 0) break;
    *got += (size_t)r;
  }
  return *got < n ? gz_failed(s, *got, err, errlen) : 0;
}

int file_stream_read_body(file_stream_t *s, size_t n, uint8_t **data, size_t *got,
                          int *trailing, char *err, size_t errlen) {
  *data = NULL;
  *got = 0;
  *trailing = 0;
  size_t cap = n < FIRST_CHUNK ? n : FIRST_CHUNK;
  uint8_t *buf = malloc(cap ? cap : 1);
  if (!buf) {
    snprintf(err, errlen, "%s: out of memory for %zu bytes", s->path, cap);
    return -1;
  }
  for (;;) {
    size_t part;
    if (file_stream_read(s, buf + *got, cap - *got, &part, err, errlen)) {
      free(buf);
      *got = 0;
      return -1;
    }
    *got += part;
    if (*got < cap || cap == n) break;
    /* Doubling, never beyond what the header promised. */
    const size_t grown_cap = cap > n / 2 ? n : cap * 2;
    uint8_t *grown = realloc(buf, grown_cap);
    if (!grown) {
      free(buf);
      *got = 0;
      snprintf(err, errlen, "%s: out of memory for %zu bytes", s->path, grown_cap);
      return -1;
    }
    buf = grown;
    cap = grown_cap;
  }
  if (*got == n) {
    uint8_t extra;
    size_t more;
    if (file_stream_read(s, &extra, 1, &more, err, errlen)) {
      free(buf);
      *got = 0;
      return -1;
    }
    *trailing = more > 0;
  }
  *data = buf;
  return 0;
}

void file_stream_close(file_stream_t *s) {
  if (s->gz) gzclose(s->gz);
  s->gz = NULL;
}

int file_read_all(const char *path, size_t max_bytes, uint8_t **data, size_t *size,
                  char *err, size_t errlen) {
  *data = NULL;
  *size = 0;
  file_stream_t s;
  if (file_stream_open(&s, path, err, errlen)) return -1;
  /* A plain file is judged by its size before a byte of it is read. */
  if (!s.gzip && s.bytes > max_bytes) {
    snprintf(err, errlen, "%s: %llu bytes, larger than the %zu bytes this format allows", path,
             s.bytes, max_bytes);
    file_stream_close(&s);
    return -1;
  }
  int trailing = 0;
  int rc = file_stream_read_body(&s, max_bytes, data, size, &trailing, err, errlen);
  file_stream_close(&s);
  if (rc) return -1;
  if (trailing) {
    free(*data);
    *data = NULL;
    *size = 0;
    snprintf(err, errlen, "%s: larger than the %zu bytes this format allows", path, max_bytes);
    return -1;
  }
  return 0;
}
