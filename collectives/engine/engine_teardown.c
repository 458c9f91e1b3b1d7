/* engine_teardown.c: what an engine does once it runs no more rounds (a failure, or
 * the round that agreed to shut down): every request still on the execution list,
 * pending or queued fails, with one line naming the cause and the tensors it takes
 * down, and the other ranks are told of a fault (fault.c). Shared by the background
 * thread (engine_thread.c) and the threadless engine of simulated builds
 * (engine_threadless.c). */
#include <stdio.h>
#include <string.h>

#include "flight_recorder.h"
#include "hv_internal.h"

void hv__engine_teardown(hv_comm_t *comm, hv_result_t failure) {
  /* round_lock is held: no thread runs rounds any more. */
  comm->rounds_over = 1;
  pthread_mutex_unlock(&comm->round_lock);
  hv__engine_thread_comm = comm; /* fault.c: the teardown below reads this thread's tables */
  if (failure != HV_SUCCESS) failure = hv__fault_explain(comm, failure);

  /* Nothing more will run: fail whatever is still pending or queued. */
  pthread_mutex_lock(&comm->mutex);
  comm->engine_stopped = 1;
  hv__fr_stopped(comm);
  if (failure != HV_SUCCESS && comm->async_error == HV_SUCCESS) comm->async_error = failure;
  struct hv_handle *queued = comm->queue_head;
  comm->queue_head = comm->queue_tail = NULL;
  pthread_mutex_unlock(&comm->mutex);
  char why[1200];
  if (failure != HV_SUCCESS) {
    /* One line with the cause and what it takes down with it, before any handle fails:
     * the program may exit as soon as its hv_wait returns. (A shutdown by another rank
     * has its line from fault.c.) */
    char names[512], detail[1024];
    size_t count = hv__fault_pending_names(comm, names, sizeof names, 1, queued);
    snprintf(detail, sizeof detail, "%s", hv_comm_last_error(comm));
    /* The detail of HV_ERR_NO_MEMORY names what was being allocated ('coordinator
     * table'); these lines outlive the code, so they say it was memory. */
    const char *oom = failure == HV_ERR_NO_MEMORY && !strstr(detail, "memory") && !strstr(detail, "allocate")
                          ? "out of memory: "
                          : "";
    HV_LOG(HV__LOG_ERROR, "the engine stopped: %s%s; pending tensors (%zu): %s", oom, detail, count,
           count ? names : "none");
    /* Before the other ranks are told and the handles fail: the program may exit
     * as soon as its hv_wait returns. */
    char line[1700];
    snprintf(line, sizeof line, "the engine stopped: %s%s; pending tensors (%zu): %s", oom, detail, count,
             count ? names : "none");
    snprintf(why, sizeof why, "the engine stopped before it completed: %s%s", oom, detail);
    hv__flight_dump_from_rounds(comm, hv__fault_dump_reason(comm, failure), line, NULL, why);
    hv__fault_report(comm, failure);
    snprintf(why, sizeof why, "the engine stopped before it completed: %s%s", oom, detail);
    pthread_mutex_lock(&comm->mutex);
    snprintf(comm->stopped_why, sizeof comm->stopped_why, "%s", why);
    pthread_mutex_unlock(&comm->mutex);
  } else {
    hv__fault_shutdown_why(comm, why, sizeof why);
  }
  hv_result_t code = failure != HV_SUCCESS ? failure : HV_ERR_SHUT_DOWN;
  for (size_t i = 0; i < comm->exec_count; i++)
    hv__handle_complete(comm->exec[i].handle, code, hv__strdup_printf("tensor '%s': %s", comm->exec[i].handle->name, why));
  comm->exec_count = 0;
  hv__fail_all_pending(comm, code, why);
  while (queued) {
    struct hv_handle *next = queued->next;
    hv__handle_complete(queued, code, hv__strdup_printf("tensor '%s': %s", queued->name, why));
    queued = next;
  }
}
