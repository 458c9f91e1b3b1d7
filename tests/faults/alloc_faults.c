/* alloc_faults.c: allocation-failure injection for tests (issue 27, "out of memory").
 * Built only with -DHV_ALLOC_FAULTS=ON (cmake/hv_alloc_faults.cmake), as the small
 * shared library libhv_alloc_faults.so. hv's own libraries and programs are linked
 * with -Wl,--wrap=malloc,... so that their calls (and only theirs: libc's, Open MPI's,
 * zlib's and OpenBLAS's internal allocations are not linked with the flag) land in the
 * __wrap_* functions here, which forward to the real allocator unless told to fail.
 * Being one shared library, the counter is one per process, whether the call came from
 * libhvcoll.so or from the executable.
 *
 * Environment, read at the first allocation:
 *   HV_FAIL_ALLOC=K        the K-th counted allocation (1-based) returns NULL (errno
 *                          ENOMEM); "K+" fails the K-th and every later one.
 *   HV_FAIL_ALLOC_RANK=R   count and fail only in the process whose rank (HV_RANK,
 *                          OMPI_COMM_WORLD_RANK or PMIX_RANK; 0 without any) is R.
 *   HV_FAIL_ALLOC_COUNT=F  at exit, append "alloc_faults rank=R count=N failed=M" to F:
 *                          a driver runs once with no failure to learn N, then sweeps
 *                          K = 1..N (tests/faults/alloc_sweep.sh).
 *   HV_FAIL_ALLOC_LOG=1    print the line below for every counted allocation (which K
 *                          is which site), not only the failed one.
 * Each injected failure prints one line to stderr naming the function, the size and the
 * caller (module+offset, for addr2line), so a sweep can tell the sites apart.
 * Nothing here allocates: the wrappers run inside malloc's callers, under ASan too. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The real functions: --wrap is not applied to this library itself, so the plain names
 * reach libc (or the sanitizer's interceptors). */
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
int __wrap_posix_memalign(void **p, size_t align, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static atomic_int configured; /* 0: not yet, 1: in progress, 2: done */
static long fail_at;          /* 0: never */
static int fail_after;        /* "K+": every allocation from K on */
static int counting = 1;      /* 0 on the ranks HV_FAIL_ALLOC_RANK excludes */
static int my_rank;
static int log_all;
static const char *count_file;
static atomic_long calls, failed;

static long env_long(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : dflt;
}

static void configure(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&configured, &expected, 1)) {
    while (atomic_load(&configured) != 2) { /* another thread is reading the environment */
    }
    return;
  }
  my_rank = (int)env_long("HV_RANK", env_long("OMPI_COMM_WORLD_RANK", env_long("PMIX_RANK", 0)));
  const char *k = getenv("HV_FAIL_ALLOC");
  if (k && *k) {
    char *end;
    fail_at = strtol(k, &end, 10);
    fail_after = *end == '+';
  }
  const long only = env_long("HV_FAIL_ALLOC_RANK", -1);
  if (only >= 0 && only != my_rank) counting = 0;
  log_all = env_long("HV_FAIL_ALLOC_LOG", 0) != 0;
  count_file = getenv("HV_FAIL_ALLOC_COUNT");
  if (count_file && !*count_file) count_file = NULL;
  atomic_store(&configured, 2);
}

/* Appends "what" to s (bounded), returning the new end. */
static char *put(char *s, char *end, const char *what) {
  while (*what && s < end) *s++ = *what++;
  return s;
}

static char *put_num(char *s, char *end, unsigned long v, int base) {
  char digits[24];
  int n = 0;
  do digits[n++] = "0123456789abcdef"[v % (unsigned)base];
  while ((v /= (unsigned)base) && n < (int)sizeof digits);
  while (n > 0 && s < end) *s++ = digits[--n];
  return s;
}

/* One stderr line per injected failure, with write(2): stdio may allocate. */
static void report(const char *what, const char *fn, size_t size, long nth, const void *caller) {
  char line[512], *s = line, *end = line + sizeof line - 1;
  s = put(s, end, what);
  s = put_num(s, end, (unsigned long)nth, 10);
  s = put(s, end, " (");
  s = put(s, end, fn);
  s = put(s, end, " of ");
  s = put_num(s, end, size, 10);
  s = put(s, end, " bytes) on rank ");
  s = put_num(s, end, (unsigned long)my_rank, 10);
  Dl_info info;
  if (dladdr(caller, &info) && info.dli_fname) {
    s = put(s, end, " at ");
    s = put(s, end, info.dli_fname);
    s = put(s, end, "+0x");
    s = put_num(s, end, (unsigned long)((uintptr_t)caller - (uintptr_t)info.dli_fbase), 16);
  }
  *s++ = '\n';
  ssize_t w = write(2, line, (size_t)(s - line));
  (void)w;
}

/* Counts one allocation; 1 when it is to fail. */
static int should_fail(const char *fn, size_t size, const void *caller) {
  if (atomic_load_explicit(&configured, memory_order_acquire) != 2) configure();
  if (!counting) return 0;
  const long nth = atomic_fetch_add(&calls, 1) + 1;
  if (fail_at <= 0 || (fail_after ? nth < fail_at : nth != fail_at)) {
    if (log_all) report("hv_alloc_faults: allocation ", fn, size, nth, caller);
    return 0;
  }
  atomic_fetch_add(&failed, 1);
  report("hv_alloc_faults: injected failure of allocation ", fn, size, nth, caller);
  errno = ENOMEM;
  return 1;
}

#define CALLER __builtin_extract_return_addr(__builtin_return_address(0))

void *__wrap_malloc(size_t size) { return should_fail("malloc", size, CALLER) ? NULL : malloc(size); }

void *__wrap_calloc(size_t n, size_t size) {
  return should_fail("calloc", n * size, CALLER) ? NULL : calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size) {
  /* realloc(p, 0) frees: not an allocation that can fail usefully. */
  if (size == 0) return realloc(p, size);
  return should_fail("realloc", size, CALLER) ? NULL : realloc(p, size);
}

int __wrap_posix_memalign(void **p, size_t align, size_t size) {
  return should_fail("posix_memalign", size, CALLER) ? ENOMEM : posix_memalign(p, align, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size) {
  return should_fail("aligned_alloc", size, CALLER) ? NULL : aligned_alloc(align, size);
}

char *__wrap_strdup(const char *s) { return should_fail("strdup", strlen(s) + 1, CALLER) ? NULL : strdup(s); }

char *__wrap_strndup(const char *s, size_t n) {
  return should_fail("strndup", strnlen(s, n) + 1, CALLER) ? NULL : strndup(s, n);
}

/* The count line for the driver, at exit (a process killed by a signal writes none). */
__attribute__((destructor)) static void alloc_faults_report(void) {
  if (atomic_load(&configured) != 2) configure();
  if (!count_file) return;
  char line[128], *s = line, *end = line + sizeof line - 1;
  s = put(s, end, "alloc_faults rank=");
  s = put_num(s, end, (unsigned long)my_rank, 10);
  s = put(s, end, " count=");
  s = put_num(s, end, (unsigned long)(counting ? atomic_load(&calls) : 0), 10);
  s = put(s, end, " failed=");
  s = put_num(s, end, (unsigned long)atomic_load(&failed), 10);
  *s++ = '\n';
  int fd = open(count_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, line, (size_t)(s - line));
  (void)w;
  close(fd);
}
