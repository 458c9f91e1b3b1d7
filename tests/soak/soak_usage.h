/* soak_usage.h: what a long run must not accumulate, read from /proc/self: resident
 * memory (statm), open file descriptors (the entries of /proc/self/fd) and threads
 * (status), plus the bytes malloc has handed out (mallinfo2, glibc) as a finer view of
 * the heap than whole resident pages. Linux only, like the rest of the tests. */
#ifndef HV_SOAK_USAGE_H
#define HV_SOAK_USAGE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

typedef struct soak_usage {
  double rss_mib;  /* resident set, MiB */
  double heap_mib; /* bytes in use by malloc (glibc; -1 when unknown), MiB */
  int fds;         /* open file descriptors */
  int threads;     /* threads of the process */
  char thread_names[512]; /* "tid:name ..." of each thread, to name the one that came or went */
} soak_usage_t;

static inline double soak_rss_mib(void) {
  long pages_total = 0, pages_resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  int ok = fscanf(f, "%ld %ld", &pages_total, &pages_resident) == 2;
  fclose(f);
  return ok ? (double)pages_resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0) : -1;
}

static inline int soak_threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  int n = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "Threads:", 8) == 0) n = atoi(line + 8);
  fclose(f);
  return n;
}

/* Each thread as tid:name (/proc/self/task/TID/comm; hv names its own, e.g. hv-engine). */
static inline void soak_thread_names(char *out, size_t len) {
  size_t used = 0;
  out[0] = 0;
  DIR *d = opendir("/proc/self/task");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && used + 1 < len) {
    if (e->d_name[0] == '.') continue;
    char path[300], name[32] = "?";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = 0;
      fclose(f);
    }
    int n = snprintf(out + used, len - used, "%s%s:%s", used ? " " : "", e->d_name, name);
    if (n < 0) break;
    used += (size_t)n < len - used ? (size_t)n : len - used - 1;
  }
  closedir(d);
}

/* The directory stream itself holds one descriptor while it is read: not counted. */
static inline int soak_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1;
}

/* Freed memory that glibc keeps in its arenas is given back first (malloc_trim), so
 * the resident figure reflects what is live, not which pages the allocator happened
 * to keep: without it, RSS moves by megabytes with the order of frees alone. */
static inline soak_usage_t soak_usage_now(void) {
  soak_usage_t u;
  u.heap_mib = -1;
#if defined(__GLIBC__)
  malloc_trim(0);
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)
  struct mallinfo2 mi = mallinfo2();
  u.heap_mib = (double)(mi.uordblks + mi.hblkhd) / (1024.0 * 1024.0);
#endif
#endif
  u.rss_mib = soak_rss_mib();
  u.fds = soak_fds();
  u.threads = soak_threads();
  soak_thread_names(u.thread_names, sizeof u.thread_names);
  return u;
}

#endif
