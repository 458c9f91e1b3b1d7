/* fuzz_util.c: the helpers of fuzz_util.h. Failures here abort on purpose: they are
 * the harness's own faults (a full disk, no /tmp), never the reader's. */
#include "fuzz_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[4096];

/* Removes what is inside dir; dir itself stays unless remove_self. */
static void rm_tree(const char *dir, int remove_self) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char path[4096 + 512];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      struct stat st;
      if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) rm_tree(path, 1);
      else unlink(path);
    }
    closedir(d);
  }
  if (remove_self) rmdir(dir);
}

static void remove_tmpdir(void) {
  if (tmpdir[0]) rm_tree(tmpdir, 1);
}

const char *fuzz_tmpdir(void) {
  if (!tmpdir[0]) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/hv-fuzz-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
      perror("fuzz_util: mkdtemp");
      abort();
    }
    atexit(remove_tmpdir);
  }
  return tmpdir;
}

void fuzz_tmpdir_clear(void) { rm_tree(fuzz_tmpdir(), 0); }

void fuzz_write_file(const char *path, const uint8_t *data, size_t size, int gzip) {
  if (gzip) {
    gzFile g = gzopen(path, "wb1");
    /* gzwrite(..., 0) is "nothing written" but not an error; a zero-byte input still
     * gives a valid empty gzip stream. */
    if (!g || (size > 0 && gzwrite(g, data, (unsigned)size) != (int)size) ||
        gzclose(g) != Z_OK) {
      fprintf(stderr, "fuzz_util: cannot write %s\n", path);
      abort();
    }
    return;
  }
  FILE *f = fopen(path, "wb");
  if (!f || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    fprintf(stderr, "fuzz_util: cannot write %s\n", path);
    abort();
  }
}

char **fuzz_argv(const char *prog, const uint8_t *data, size_t size, int max_args, int *argc) {
  char **argv = calloc((size_t)max_args + 2, sizeof *argv);
  if (!argv) abort();
  int n = 0;
  argv[n++] = strdup(prog);
  size_t start = 0;
  while (start < size && n <= max_args) {
    const uint8_t *nul = memchr(data + start, 0, size - start);
    const size_t len = nul ? (size_t)(nul - (data + start)) : size - start;
    char *arg = malloc(len + 1);
    if (!arg) abort();
    memcpy(arg, data + start, len);
    arg[len] = '\0';
    argv[n++] = arg;
    start += len + 1;
  }
  argv[n] = NULL;
  *argc = n;
  return argv;
}

void fuzz_argv_free(char **argv) {
  for (char **a = argv; *a; a++) free(*a);
  free(argv);
}
