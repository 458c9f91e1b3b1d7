/* file_read.c: whole-file reads through zlib's gzread, which passes plain files
 * through unchanged, so every loader accepts .gz and uncompressed files alike. */
#include "file_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int file_read_all(const char *path, size_t max_bytes, uint8_t **data, size_t *size,
                  char *err, size_t errlen) {
  *data = NULL;
  *size = 0;
  gzFile f = gzopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
    return -1;
  }
  size_t cap = 1 << 20, len = 0;
  uint8_t *buf = malloc(cap);
  if (!buf) {
    gzclose(f);
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  for (;;) {
    if (len == cap) {
      /* One byte beyond the limit is enough to know the file is oversized. */
      if (cap > max_bytes) {
        free(buf);
        gzclose(f);
        snprintf(err, errlen, "%s: larger than the %zu bytes this format allows", path,
                 max_bytes);
        return -1;
      }
      uint8_t *grown = realloc(buf, cap * 2);
      if (!grown) {
        free(buf);
        gzclose(f);
        snprintf(err, errlen, "%s: out of memory after %zu bytes", path, len);
        return -1;
      }
      buf = grown;
      cap *= 2;
    }
    size_t want = cap - len;
    if (want > (1u << 30)) want = 1u << 30;
    int got = gzread(f, buf + len, (unsigned)want);
    if (got < 0) {
      int zerr = 0;
      const char *msg = gzerror(f, &zerr);
      snprintf(err, errlen, "%s: corrupt or truncated gzip data after %zu bytes: %s", path,
               len, msg);
      free(buf);
      gzclose(f);
      return -1;
    }
    if (got == 0) break;
    len += (size_t)got;
  }
  /* gzread reports a gzip stream cut short as a plain end of file; gzerror tells. */
  int zerr = 0;
  const char *msg = gzerror(f, &zerr);
  if (zerr != Z_OK && zerr != Z_STREAM_END) {
    snprintf(err, errlen, "%s: corrupt or truncated gzip data after %zu bytes: %s", path, len,
             msg);
    free(buf);
    gzclose(f);
    return -1;
  }
  gzclose(f);
  if (len > max_bytes) {
    free(buf);
    snprintf(err, errlen, "%s: %zu bytes, larger than the %zu bytes this format allows",
             path, len, max_bytes);
    return -1;
  }
  *data = buf;
  *size = len;
  return 0;
}
