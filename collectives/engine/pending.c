/* pending.c: the background thread's table of pending requests: dequeued from the
 * communicator's queue in submission order (the order bits are set in), removed
 * when negotiation hands them to execution or fails them, found by name for the
 * coordinator's responses. Removal leaves a hole (NULL) until hv__pending_compact: a
 * round that starts a fused batch of hundreds removes them all, and closing each gap
 * at once cost a memmove per tensor. */
#include <stdlib.h>

#include "negotiate.h"
#include "timeline.h"

/* comm->pending_list compacted (dequeue does it once before adding a batch). */
int hv__pending_add(hv_comm_t *comm, struct hv_handle *h) {
  if (comm->pending_len == comm->pending_cap) {
    size_t cap = comm->pending_cap ? comm->pending_cap * 2 : 64;
    struct hv_handle **list = realloc(comm->pending_list, cap * sizeof *list);
    if (!list) return -1;
    comm->pending_list = list;
    comm->pending_cap = cap;
  }
  h->pending_pos = comm->pending_len;
  comm->pending_list[comm->pending_len++] = h;
  comm->pending_count++;
  return 0;
}

int hv__pending_has(const hv_comm_t *comm, const struct hv_handle *h) {
  return h->pending_pos < comm->pending_len && comm->pending_list[h->pending_pos] == h;
}

/* The pending handle of a name a coordinator response gives, or NULL. Requests are
 * found by name only there (the first rounds of a name, and evictions); cached names
 * are found by their bit (bit_owner). */
struct hv_handle *hv__pending_by_name(hv_comm_t *comm, const char *name) {
  pthread_mutex_lock(&comm->mutex); /* names_in_flight is the submitting threads' too */
  struct hv_handle *h = hv__map_get(&comm->names_in_flight, name);
  pthread_mutex_unlock(&comm->mutex);
  return h && hv__pending_has(comm, h) ? h : NULL; /* not one still queued */
}

void hv__pending_remove(hv_comm_t *comm, struct hv_handle *h) {
  if (hv__pending_has(comm, h)) {
    comm->pending_list[h->pending_pos] = NULL;
    comm->pending_count--;
  }
}

void hv__pending_compact(hv_comm_t *comm) {
  if (comm->pending_len == comm->pending_count) return;
  size_t kept = 0;
  for (size_t i = 0; i < comm->pending_len; i++) {
    struct hv_handle *h = comm->pending_list[i];
    if (!h) continue;
    h->pending_pos = kept;
    comm->pending_list[kept++] = h;
  }
  comm->pending_len = kept;
}

void hv__fail_all_pending(hv_comm_t *comm, hv_result_t result, const char *why) {
  for (size_t i = 0; i < comm->pending_len; i++) {
    struct hv_handle *h = comm->pending_list[i];
    if (!h) continue;
    hv__pending_remove(comm, h);
    hv__handle_complete(h, result, hv__strdup_printf("tensor '%s': %s", h->name, why));
  }
  hv__pending_compact(comm);
}

/* Dequeues new requests; returns 1 if there were any. */
int hv__pending_dequeue(hv_comm_t *comm) {
  pthread_mutex_lock(&comm->mutex);
  struct hv_handle *h = comm->queue_head;
  comm->queue_head = comm->queue_tail = NULL;
  atomic_store(&comm->queued, 0);
  pthread_mutex_unlock(&comm->mutex);
  int any = h != NULL;
  double now = hv__now_us();
  hv__pending_compact(comm);
  while (h) {
    struct hv_handle *next = h->next;
    h->next = NULL;
    h->t_dequeue = now;
    h->cache_bit = -1;
    if (hv__pending_add(comm, h))
      hv__handle_complete(h, HV_ERR_NO_MEMORY, hv__strdup_printf("tensor '%s': out of memory", h->name));
    else
      hv__timeline_span(comm->timeline, h->name, "QUEUE", h->t_submit, now);
    h = next;
  }
  return any;
}

