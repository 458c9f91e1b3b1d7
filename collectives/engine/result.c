/* result.c: the communicator's last error (hv_comm_last_error): the sink every
 * failure's detail lands in, the engine's own and the algorithms' (through
 * comm->host.errors), and the collectives' names. */
#include <stdarg.h>
#include <stdio.h>

#include "hv_internal.h"

const char *hv__coll_name(hv__coll_t coll) {
  static const char *const names[HV__NUM_COLLS] = {"allreduce", "allgather", "allgatherv",
                                                   "broadcast", "reducescatter", "alltoall",
                                                   "barrier", "alltoallv", "reduce", "gather",
                                                   "gatherv", "scatter", "scatterv", "send", "recv"};
  return (unsigned)coll < HV__NUM_COLLS ? names[coll] : "invalid-collective";
}

/* Errors of hv_init (before a communicator exists) land here. */
static char init_error[1024];
static pthread_mutex_t init_error_mutex = PTHREAD_MUTEX_INITIALIZER;

void hv__comm_record_error(void *owner, const char *msg) {
  hv_comm_t *comm = owner;
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
  hv__comm_record_error(comm, msg);
  HV_LOG(HV__LOG_DEBUG, "%s: %s", hv_strerror(code), msg);
  return code;
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
