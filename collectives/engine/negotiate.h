/* negotiate.h: the parts of negotiation (engine-private): the round every rank
 * runs (negotiate_round.c), rank 0's coordinator (negotiate_coordinator.c), the
 * wire format between them (negotiate_wire.c), and the bit-vector AND
 * (negotiate_vector.c). */
#ifndef HV_NEGOTIATE_H
#define HV_NEGOTIATE_H

#include <stdint.h>

#include "hashmap.h"
#include "hv_internal.h"

/* The flags word of the bit vector (ANDed as its complement: an OR over ranks). */
/* TUNE: rank 0's autotuner has a setting to send (autotune.c). */
enum { HV__FLAG_UNCACHED = 1u, HV__FLAG_STALL = 2u, HV__FLAG_SHUTDOWN = 4u, HV__FLAG_TUNE = 8u };
/* The coordinator's responses. */
/* JOINED: meta.root has called hv_join (join.c). */
/* TUNE: a new autotune setting, in meta (autotune.c). */
enum { HV__RESP_OK = 1, HV__RESP_ERROR = 2, HV__RESP_EVICT = 3, HV__RESP_JOINED = 4, HV__RESP_TUNE = 5 };

/* ---- wire format (negotiate_wire.c) ---- */
int hv__bytes_reserve(hv__bytes_t *b, size_t total); /* -1 when out of memory */
int hv__bytes_put(hv__bytes_t *b, const void *p, size_t n);
typedef struct hv__reader {
  const char *p, *end;
  int bad;
  int oom; /* bad because a name could not be copied (out of memory), not corrupt */
} hv__reader_t;

/* Reads n bytes; past the end sets bad and zeroes out. */
void hv__read_bytes(hv__reader_t *r, void *out, size_t n);
/* A name is stored as u16 length + bytes. */
int hv__put_name(hv__bytes_t *b, const char *name);
/* The next name, malloc'd and terminated; NULL (bad set) when the buffer is short. */
char *hv__read_name(hv__reader_t *r);
/* Appends one response: kind, code, meta (NULL: zeros), name; an allgatherv's OK
 * adds every rank's count (n), an ERROR its message. -1 when out of memory. */
int hv__wire_put_response(hv__bytes_t *out, uint8_t kind, hv_result_t code, const hv__meta_t *meta,
                          const char *name, const uint64_t *counts, int n, const char *msg);

/* ---- the coordinator (rank 0, negotiate_coordinator.c) ---- */
typedef struct hv__coordinator {
  hv__map_t table; /* name -> coord_entry_t */
  hv__bytes_t response;
  hv__bytes_t gathered;
  int *lens, *displs;
  uint8_t *joined; /* per rank: has called hv_join (join.c) */
  int njoined;
} hv__coordinator_t;

/* Processes every rank's gathered cache misses (and stall lists, with
 * HV__FLAG_STALL), in rank order, into c->response. */
hv_result_t hv__coordinator_process(hv_comm_t *comm, unsigned flags);

/* ---- the pending table (pending.c) ---- */
int hv__pending_add(hv_comm_t *comm, struct hv_handle *h); /* -1 when out of memory */
int hv__pending_has(const hv_comm_t *comm, const struct hv_handle *h);
/* The pending handle of a name a coordinator response gives, or NULL. Requests are
 * found by name only there (the first rounds of a name, and evictions); cached names
 * are found by their bit (bit_owner). */
struct hv_handle *hv__pending_by_name(hv_comm_t *comm, const char *name);
/* Moves newly submitted requests from the queue into the table; 1 if there were any. */
int hv__pending_dequeue(hv_comm_t *comm);

#endif
