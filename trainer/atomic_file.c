/* atomic_file.c: mkstemp next to the target, write, fchmod to the umask's mode, fsync,
 * rename (see atomic_file.h). */
#include "atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int atomic_file_open(atomic_file_t *af, const char *path, char *err, size_t errlen) {
  memset(af, 0, sizeof *af);
  if (strlen(path) + 16 >= sizeof af->tmp) {
    snprintf(err, errlen, "%s: path too long", path);
    return -1;
  }
  snprintf(af->path, sizeof af->path, "%s", path);
  /* Same directory as the target: rename(2) is atomic only within one file system. */
  const char *slash = strrchr(path, '/');
  const int dir_len = slash ? (int)(slash - path + 1) : 0;
  snprintf(af->tmp, sizeof af->tmp, "%.*s.%s.XXXXXX", dir_len, path, path + dir_len);
  const int fd = mkstemp(af->tmp); /* O_EXCL, mode 0600, random suffix */
  if (fd < 0) {
    snprintf(err, errlen, "cannot write %s (temporary %s): %s", path, af->tmp, strerror(errno));
    return -1;
  }
  af->f = fdopen(fd, "wb");
  if (!af->f) {
    snprintf(err, errlen, "cannot write %s: %s", af->tmp, strerror(errno));
    close(fd);
    unlink(af->tmp);
    return -1;
  }
  return 0;
}

void atomic_file_abort(atomic_file_t *af) {
  if (af->f) fclose(af->f);
  af->f = NULL;
  unlink(af->tmp);
}

int atomic_file_commit(atomic_file_t *af, int durable, char *err, size_t errlen) {
  const mode_t mask = umask(0);
  umask(mask);
  const int fd = fileno(af->f);
  int bad = ferror(af->f) || fflush(af->f) != 0;
  /* The mode a plain fopen would give: the data is the user's, readable as their umask
   * says, once it is complete. */
  if (!bad) bad = fchmod(fd, 0666 & ~mask) != 0;
  /* fsync before rename: otherwise a crash may leave the new name on empty data. */
  if (!bad && durable) bad = fsync(fd) != 0;
  const int saved = errno;
  const int close_failed = fclose(af->f) != 0;
  af->f = NULL;
  if (bad || close_failed) {
    snprintf(err, errlen, "cannot write %s: %s", af->tmp, strerror(bad ? saved : errno));
    unlink(af->tmp);
    return -1;
  }
  if (rename(af->tmp, af->path) != 0) {
    snprintf(err, errlen, "cannot rename %s to %s: %s", af->tmp, af->path, strerror(errno));
    unlink(af->tmp);
    return -1;
  }
  return 0;
}
