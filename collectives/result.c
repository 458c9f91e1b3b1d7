/* result.c: result codes and their text, dtype/op names, the per-communicator
 * last-error string, and logging (HV_LOG_LEVEL) with rank and file:line. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hv_internal.h"

const char *hv_strerror(hv_result_t result) {
  switch (result) {
#define HV_RESULT_TEXT_(name, value, text) \
  case name:                               \
    return text;
    HV_RESULT_LIST(HV_RESULT_TEXT_)
#undef HV_RESULT_TEXT_
  }
  return "unknown hv result code";
}

size_t hv_dtype_size(hv_dtype_t dtype) {
  static const size_t sizes[HV_NUM_DTYPES] = {1, 1, 4, 8, 2, 2, 4, 8};
  return (unsigned)dtype < HV_NUM_DTYPES ? sizes[dtype] : 0;
}

const char *hv_dtype_name(hv_dtype_t dtype) {
  static const char *const names[HV_NUM_DTYPES] = {"uint8", "int8", "int32", "int64",
                                                   "float16", "bfloat16", "float32", "float64"};
  return (unsigned)dtype < HV_NUM_DTYPES ? names[dtype] : "invalid-dtype";
}

const char *hv_op_name(hv_op_t op) {
  static const char *const names[HV_NUM_OPS] = {"sum", "average", "min", "max", "product"};
  return (unsigned)op < HV_NUM_OPS ? names[op] : "invalid-op";
}

const char *hv__coll_name(hv__coll_t coll) {
  static const char *const names[HV__NUM_COLLS] = {"allreduce", "allgather", "allgatherv",
                                                   "broadcast", "reducescatter", "alltoall",
                                                   "barrier"};
  return (unsigned)coll < HV__NUM_COLLS ? names[coll] : "invalid-collective";
}

int hv__log_level = HV__LOG_WARNING;
int hv__log_rank = -1;

void hv__log(int level, const char *file, int line, const char *fmt, ...) {
  static const char *const names[] = {"trace", "debug", "info", "warning", "error", "off"};
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  /* One fprintf per line so lines of different ranks and threads do not interleave. */
  if (level >= HV__LOG_WARNING)
    fprintf(stderr, "[hv rank %d] %s: %s\n", hv__log_rank, names[level], msg);
  else
    fprintf(stderr, "[hv rank %d] %s %s:%d: %s\n", hv__log_rank, names[level], base, line, msg);
}

char *hv__strdup_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

double hv__now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* The same clock at the kernel tick's resolution (1-4 ms), which reads a value the
 * kernel keeps instead of the time counter: for a time stamp per request that only
 * stall ages (seconds) use. */
double hv__coarse_now_us(void) {
#ifdef CLOCK_MONOTONIC_COARSE
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
#else
  return hv__now_us();
#endif
}

/* Errors of hv_init (before a communicator exists) land here. */
static char init_error[1024];
static pthread_mutex_t init_error_mutex = PTHREAD_MUTEX_INITIALIZER;

static void store_error(hv_comm_t *comm, const char *msg) {
  if (comm) {
    pthread_mutex_lock(&comm->mutex);
    snprintf(comm->last_error, sizeof comm->last_error, "%s", msg);
    pthread_mutex_unlock(&comm->mutex);
  } else {
    pthread_mutex_lock(&init_error_mutex);
    snprintf(init_error, sizeof init_error, "%s", msg);
    pthread_mutex_unlock(&init_error_mutex);
  }
}

hv_result_t hv__set_error(hv_comm_t *comm, hv_result_t code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  store_error(comm, msg);
  HV_LOG(HV__LOG_DEBUG, "%s: %s", hv_strerror(code), msg);
  return code;
}

hv_result_t hv__mpi_error(hv_comm_t *comm, int mpi_code, const char *what, const char *file,
                          int line) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(mpi_code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", mpi_code);
  const char *base = strrchr(file, '/');
  return hv__set_error(comm, HV_ERR_MPI, "rank %d: %s failed at %s:%d: %s",
                       comm ? comm->rank : hv__log_rank, what, base ? base + 1 : file, line, text);
}

const char *hv_comm_last_error(const hv_comm_t *comm) {
  static _Thread_local char copy[1024];
  if (comm) {
    hv_comm_t *c = (hv_comm_t *)comm; /* the mutex is not part of the logical state */
    pthread_mutex_lock(&c->mutex);
    snprintf(copy, sizeof copy, "%s", c->last_error);
    pthread_mutex_unlock(&c->mutex);
  } else {
    pthread_mutex_lock(&init_error_mutex);
    snprintf(copy, sizeof copy, "%s", init_error);
    pthread_mutex_unlock(&init_error_mutex);
  }
  return copy;
}
