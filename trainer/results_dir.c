/* results_dir.c: create a results folder and write files into it (results_dir.h). */
#include "results_dir.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

int results_make_dir(const char *dir, char *err, size_t errlen) {
  char path[4096];
  size_t len = strlen(dir);
  if (len == 0 || len >= sizeof path) {
    snprintf(err, errlen, "--results: path empty or too long");
    return -1;
  }
  memcpy(path, dir, len + 1);
  for (size_t i = 1; i <= len; ++i) {
    if (path[i] != '/' && path[i] != '\0') continue;
    char c = path[i];
    path[i] = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
      snprintf(err, errlen, "--results %s: cannot create %s: %s", dir, path, strerror(errno));
      return -1;
    }
    path[i] = c;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "--results %s: not a directory", dir);
    return -1;
  }
  return 0;
}

FILE *results_open(const char *dir, const char *name, char *err, size_t errlen) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
  return f;
}

int results_close(FILE *f, const char *dir, const char *name, char *err, size_t errlen) {
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    snprintf(err, errlen, "error writing %s/%s", dir, name);
    return -1;
  }
  return 0;
}
