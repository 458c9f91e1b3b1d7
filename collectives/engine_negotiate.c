/* engine_negotiate.c: one negotiation round, run by every rank's background thread
 * in lockstep. It decides which pending names are ready on every rank, in one global
 * order, and turns them into the execution list.
 *
 *  1. Dequeue newly submitted requests into the pending table.
 *  2. Each pending request whose name is in the response cache with identical
 *     metadata sets its bit; the others (cache misses) are serialised in full.
 *  3. One allreduce (bitwise AND) of [bits | ~bits | ~flags] gives: the bits set on
 *     every rank (ready: executed in bit order, no coordinator), and the OR of flags
 *     (someone has misses to send, wants a stall report, or shuts down).
 *  4. Only when a flag is up: the misses are gathered to rank 0 (the coordinator),
 *     which records which rank has which name, checks that metadata agrees once a
 *     name is everywhere, and broadcasts responses: OK (also inserted in every
 *     rank's cache at the same bit), ERROR (mismatch or stall: the handle fails on
 *     every rank holding it), EVICT (a rank sent a cached name with other metadata:
 *     every rank drops it and re-sends it in full next round, so the coordinator sees
 *     all values and can name the mismatch).
 * In steady state (same names every step) a round is one small allreduce: Horovod's
 * response cache. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hv_internal.h"
#include "timeline.h"

enum { FLAG_UNCACHED = 1u, FLAG_STALL = 2u, FLAG_SHUTDOWN = 4u };
enum { RESP_OK = 1, RESP_ERROR = 2, RESP_EVICT = 3 };

/* ---- growable byte buffer with little-endian-agnostic (same machine) encoding ---- */

typedef hv__bytes_t bytes_t;

static int bytes_reserve(bytes_t *b, size_t total) {
  if (total > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < total) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
  }
  return 0;
}

static int bytes_put(bytes_t *b, const void *p, size_t n) {
  if (bytes_reserve(b, b->len + n)) return -1;
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

typedef struct reader {
  const char *p, *end;
  int bad;
} reader_t;

static void read_bytes(reader_t *r, void *out, size_t n) {
  if ((size_t)(r->end - r->p) < n) {
    r->bad = 1;
    memset(out, 0, n);
    return;
  }
  memcpy(out, r->p, n);
  r->p += n;
}

/* A name is stored as u16 length + bytes; returns a pointer into the buffer (not
 * terminated) through *name and its length. */
static int put_name(bytes_t *b, const char *name) {
  uint16_t len = (uint16_t)strlen(name);
  return bytes_put(b, &len, sizeof len) || bytes_put(b, name, len);
}

static char *read_name(reader_t *r) {
  uint16_t len;
  read_bytes(r, &len, sizeof len);
  if (r->bad || (size_t)(r->end - r->p) < len) {
    r->bad = 1;
    return NULL;
  }
  char *s = malloc((size_t)len + 1);
  if (!s) {
    r->bad = 1;
    return NULL;
  }
  memcpy(s, r->p, len);
  s[len] = '\0';
  r->p += len;
  return s;
}

/* ---- the coordinator's table (rank 0) ---- */

typedef struct coord_entry {
  char *name;
  hv__meta_t *metas; /* per rank */
  uint8_t *has;      /* per rank */
  int nhave;
  uint64_t evicted_round;
  double max_age; /* stall reports: the oldest age any rank reported */
} coord_entry_t;

typedef struct hv__coordinator {
  hv__map_t table; /* name -> coord_entry_t */
  bytes_t response;
  bytes_t gathered;
  int *lens, *displs;
} coordinator_t;

static void coord_entry_free(coord_entry_t *e) {
  if (!e) return;
  free(e->name);
  free(e->metas);
  free(e->has);
  free(e);
}


hv_result_t hv__coordinator_create(hv_comm_t *comm) {
  coordinator_t *c = calloc(1, sizeof *c);
  if (!c) return hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator");
  c->lens = calloc((size_t)comm->size, sizeof(int));
  c->displs = calloc((size_t)comm->size, sizeof(int));
  if (!c->lens || !c->displs) {
    free(c->lens);
    free(c->displs);
    free(c);
    return hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator");
  }
  comm->coordinator = c;
  return HV_SUCCESS;
}

void hv__coordinator_destroy(hv_comm_t *comm) {
  coordinator_t *c = comm->coordinator;
  if (!c) return;
  for (size_t i = 0; i < c->table.capacity; i++)
    if (c->table.slots[i].key) coord_entry_free(c->table.slots[i].value);
  hv__map_free(&c->table);
  free(c->response.data);
  free(c->gathered.data);
  free(c->lens);
  free(c->displs);
  free(c);
  comm->coordinator = NULL;
}

static void describe_group(char *out, size_t len, const hv__meta_t *m) {
  if (m->layout == 0) snprintf(out, len, "one tensor (hv_allreduce)");
  else snprintf(out, len, "a group of %llu tensor%s with counts hashing to %016llx", (unsigned long long)m->ntensors,
                m->ntensors == 1 ? "" : "s", (unsigned long long)m->layout);
}

/* Compares every rank's metadata with rank 0's; on a mismatch writes a message that
 * names the tensor, both ranks and both values. */
static int metas_agree(const coord_entry_t *e, int n, char *msg, size_t msglen) {
  const hv__meta_t *a = &e->metas[0];
  for (int q = 1; q < n; q++) {
    const hv__meta_t *b = &e->metas[q];
    const char *what = NULL;
    char va[96], vb[96];
    if (a->coll != b->coll) {
      what = "collective";
      snprintf(va, sizeof va, "%s", hv__coll_name(a->coll));
      snprintf(vb, sizeof vb, "%s", hv__coll_name(b->coll));
    } else if (a->dtype != b->dtype) {
      what = "dtype";
      snprintf(va, sizeof va, "%s", hv_dtype_name(a->dtype));
      snprintf(vb, sizeof vb, "%s", hv_dtype_name(b->dtype));
    } else if ((a->coll == HV__COLL_ALLREDUCE || a->coll == HV__COLL_REDUCESCATTER) && a->op != b->op) {
      what = "op";
      snprintf(va, sizeof va, "%s", hv_op_name(a->op));
      snprintf(vb, sizeof vb, "%s", hv_op_name(b->op));
    } else if (a->coll != HV__COLL_ALLGATHERV && a->count != b->count) {
      what = "count";
      snprintf(va, sizeof va, "%llu", (unsigned long long)a->count);
      snprintf(vb, sizeof vb, "%llu", (unsigned long long)b->count);
    } else if (a->coll == HV__COLL_ALLREDUCE && (a->ntensors != b->ntensors || a->layout != b->layout)) {
      /* The same total split into other tensors (only a hash of the counts travels). */
      what = "lists of tensors";
      describe_group(va, sizeof va, a);
      describe_group(vb, sizeof vb, b);
    } else if (a->coll == HV__COLL_BROADCAST && a->root != b->root) {
      what = "root";
      snprintf(va, sizeof va, "%d", a->root);
      snprintf(vb, sizeof vb, "%d", b->root);
    } else if (a->compression != b->compression) {
      static const char *const comp[] = {"default", "none", "fp16", "bf16"};
      what = "compression";
      snprintf(va, sizeof va, "%s", comp[a->compression & 3]);
      snprintf(vb, sizeof vb, "%s", comp[b->compression & 3]);
    }
    if (what) {
      snprintf(msg, msglen,
               "tensor '%s' (%s) was submitted with different %s on different ranks: "
               "rank 0 has %s, rank %d has %s",
               e->name, hv__coll_name(a->coll), what, va, q, vb);
      return 0;
    }
  }
  return 1;
}

static int respond(coordinator_t *c, uint8_t kind, hv_result_t code, const hv__meta_t *meta,
                   const char *name, const uint64_t *counts, int n, const char *msg) {
  uint8_t k = kind, rc = (uint8_t)code;
  hv__meta_t zero;
  memset(&zero, 0, sizeof zero);
  if (bytes_put(&c->response, &k, 1) || bytes_put(&c->response, &rc, 1) ||
      bytes_put(&c->response, meta ? meta : &zero, sizeof zero) || put_name(&c->response, name))
    return -1;
  if (kind == RESP_OK && meta->coll == HV__COLL_ALLGATHERV)
    if (bytes_put(&c->response, counts, sizeof(uint64_t) * (size_t)n)) return -1;
  if (kind == RESP_ERROR) {
    uint16_t len = (uint16_t)strlen(msg);
    if (bytes_put(&c->response, &len, sizeof len) || bytes_put(&c->response, msg, len)) return -1;
  }
  return 0;
}

static void format_ranks(char *out, size_t outlen, const uint8_t *has, int n, int want) {
  size_t used = 0;
  out[0] = '\0';
  for (int q = 0; q < n && used + 16 < outlen; q++)
    if (!!has[q] == want) used += (size_t)snprintf(out + used, outlen - used, "%s%d", used ? "," : "", q);
}

/* Stall report: names pending somewhere but not everywhere. Warns, and with
 * HV_STALL_SHUTDOWN_TIME past, fails them on every rank. */
static int coordinator_stall(hv_comm_t *comm, reader_t *readers, int n) {
  coordinator_t *c = comm->coordinator;
  hv__map_t seen = {0};
  int rc = 0;
  for (int q = 0; q < n && !rc; q++) {
    uint32_t count;
    read_bytes(&readers[q], &count, sizeof count);
    for (uint32_t i = 0; i < count && !readers[q].bad; i++) {
      char *name = read_name(&readers[q]);
      double age;
      read_bytes(&readers[q], &age, sizeof age);
      if (!name) break;
      coord_entry_t *e = hv__map_get(&seen, name);
      if (!e) {
        e = calloc(1, sizeof *e);
        if (!e || !(e->has = calloc((size_t)n, 1)) || hv__map_put(&seen, name, e)) {
          coord_entry_free(e);
          free(name);
          rc = -1;
          break;
        }
        e->name = name;
        e->metas = NULL;
      } else {
        free(name);
      }
      if (!e->has[q]) e->has[q] = 1, e->nhave++;
      if (age > e->max_age) e->max_age = age;
    }
  }
  for (size_t i = 0; i < seen.capacity; i++) {
    coord_entry_t *e = seen.slots[i].value;
    if (!seen.slots[i].key) continue;
    if (!rc && e->nhave < n) {
      double age = e->max_age;
      char have[256], missing[256];
      format_ranks(have, sizeof have, e->has, n, 1);
      format_ranks(missing, sizeof missing, e->has, n, 0);
      int shut = comm->config.stall_shutdown_s > 0 && age >= comm->config.stall_shutdown_s;
      HV_LOG(HV__LOG_WARNING,
             "stall: tensor '%s' has been waiting %.0f s: submitted by ranks [%s], not by ranks [%s]%s",
             e->name, age, have, missing,
             shut ? "; HV_STALL_SHUTDOWN_TIME passed, failing it on every rank" : "");
      if (shut) {
        char msg[768];
        snprintf(msg, sizeof msg,
                 "tensor '%s' stalled for %.0f s: ranks [%s] never submitted it (ranks [%s] did)",
                 e->name, age, missing, have);
        if (respond(c, RESP_ERROR, HV_ERR_STALLED, NULL, e->name, NULL, n, msg)) rc = -1;
        coord_entry_t *pending = hv__map_remove(&c->table, e->name);
        coord_entry_free(pending);
      }
    }
    coord_entry_free(e);
  }
  hv__map_free(&seen);
  return rc;
}

/* Processes every rank's cache misses (and stall lists), in rank order, into the
 * response list. */
static hv_result_t coordinator_process(hv_comm_t *comm, unsigned flags) {
  coordinator_t *c = comm->coordinator;
  int n = comm->size;
  c->response.len = 0;
  reader_t *rd = malloc(sizeof(reader_t) * (size_t)n);
  if (!rd) return hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator readers");
  for (int q = 0; q < n; q++) {
    rd[q].p = c->gathered.data + c->displs[q];
    rd[q].end = rd[q].p + c->lens[q];
    rd[q].bad = 0;
  }
  hv_result_t result = HV_SUCCESS;
  for (int q = 0; q < n && result == HV_SUCCESS; q++) {
    uint32_t count;
    read_bytes(&rd[q], &count, sizeof count);
    for (uint32_t i = 0; i < count && !rd[q].bad; i++) {
      hv__meta_t meta;
      read_bytes(&rd[q], &meta, sizeof meta);
      char *name = read_name(&rd[q]);
      if (!name) break;
      coord_entry_t *e = hv__map_get(&c->table, name);
      if (!e) {
        e = calloc(1, sizeof *e);
        if (!e || !(e->metas = calloc((size_t)n, sizeof *e->metas)) || !(e->has = calloc((size_t)n, 1)) ||
            hv__map_put(&c->table, name, e)) {
          coord_entry_free(e);
          free(name);
          result = hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator table");
          break;
        }
        e->name = name;
      } else {
        free(name);
      }
      if (!e->has[q]) e->nhave++;
      e->has[q] = 1;
      e->metas[q] = meta;
      /* A cached name sent in full: its metadata changed on that rank. Every rank drops
       * it and re-sends in full, so the mismatch (if any) is seen with all values. */
      if (hv__cache_find(&comm->cache, e->name) >= 0 && e->evicted_round != comm->round + 1) {
        e->evicted_round = comm->round + 1;
        if (respond(c, RESP_EVICT, HV_SUCCESS, NULL, e->name, NULL, n, NULL)) goto oom;
      }
      if (e->nhave == n) {
        char msg[768];
        if (metas_agree(e, n, msg, sizeof msg)) {
          uint64_t *counts = NULL;
          if (e->metas[0].coll == HV__COLL_ALLGATHERV) {
            counts = malloc(sizeof(uint64_t) * (size_t)n);
            if (!counts) goto oom;
            for (int k = 0; k < n; k++) counts[k] = e->metas[k].count;
          }
          int bad = respond(c, RESP_OK, HV_SUCCESS, &e->metas[0], e->name, counts, n, NULL);
          free(counts);
          if (bad) goto oom;
        } else {
          HV_LOG(HV__LOG_ERROR, "%s", msg);
          if (respond(c, RESP_ERROR, HV_ERR_MISMATCH, NULL, e->name, NULL, n, msg)) goto oom;
        }
        hv__map_remove(&c->table, e->name);
        coord_entry_free(e);
      }
    }
    if (rd[q].bad) result = hv__set_error(comm, HV_ERR_INTERNAL, "corrupt negotiation message from rank %d", q);
  }
  if (result == HV_SUCCESS && (flags & FLAG_STALL) && coordinator_stall(comm, rd, n)) goto oom;
  free(rd);
  return result;
oom:
  free(rd);
  return hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator response");
}

/* ---- every rank ---- */

/* comm->pending_list compacted (dequeue does it once before adding a batch). */
static int pending_add(hv_comm_t *comm, struct hv_handle *h) {
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

static int is_pending(const hv_comm_t *comm, const struct hv_handle *h) {
  return h->pending_pos < comm->pending_len && comm->pending_list[h->pending_pos] == h;
}

/* The pending handle of a name a coordinator response gives, or NULL. Requests are
 * found by name only there (the first rounds of a name, and evictions); cached names
 * are found by their bit (bit_owner). */
static struct hv_handle *pending_by_name(hv_comm_t *comm, const char *name) {
  pthread_mutex_lock(&comm->mutex); /* names_in_flight is the submitting threads' too */
  struct hv_handle *h = hv__map_get(&comm->names_in_flight, name);
  pthread_mutex_unlock(&comm->mutex);
  return h && is_pending(comm, h) ? h : NULL; /* not one still queued */
}

void hv__pending_remove(hv_comm_t *comm, struct hv_handle *h) {
  if (is_pending(comm, h)) {
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

static int exec_add(hv_comm_t *comm, struct hv_handle *h) {
  if (comm->exec_count == comm->exec_cap) {
    size_t cap = comm->exec_cap ? comm->exec_cap * 2 : 64;
    hv__exec_t *e = realloc(comm->exec, cap * sizeof *e);
    if (!e) return -1;
    comm->exec = e;
    comm->exec_cap = cap;
  }
  comm->exec[comm->exec_count++].handle = h;
  return 0;
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
static int dequeue(hv_comm_t *comm) {
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
    if (pending_add(comm, h))
      hv__handle_complete(h, HV_ERR_NO_MEMORY, hv__strdup_printf("tensor '%s': out of memory", h->name));
    else
      hv__timeline_span(comm->timeline, h->name, "QUEUE", h->t_submit, now);
    h = next;
  }
  return any;
}

/* Builds this rank's vector and the serialised cache misses; returns the flags. */
static unsigned build_vector(hv_comm_t *comm, bytes_t *misses, int want_shutdown) {
  size_t W = (comm->cache.capacity + 63) / 64;
  memset(comm->vec, 0, sizeof(uint64_t) * W);
  misses->len = 0;
  uint32_t nmiss = 0;
  bytes_put(misses, &nmiss, sizeof nmiss);
  double now = hv__now_us();
  int stall = 0;
  hv__pending_compact(comm);
  for (size_t i = 0; i < comm->pending_count; i++) {
    struct hv_handle *h = comm->pending_list[i];
    if (!h->reported_full) {
      int bit = hv__cache_lookup(&comm->cache, h->name, h->name_hash, &h->meta);
      h->cache_bit = bit;
      if (bit >= 0) {
        comm->vec[bit / 64] |= 1ull << (bit % 64);
        comm->bit_owner[bit] = h;
      } else {
        if (bytes_put(misses, &h->meta, sizeof h->meta) || put_name(misses, h->name)) continue;
        h->reported_full = 1;
        nmiss++;
      }
    }
    double age_s = (now - h->t_submit) * 1e-6;
    double check = comm->config.stall_check_s;
    if (check > 0 && age_s > check && (now - h->t_stall_reported) * 1e-6 > check) {
      h->t_stall_reported = now;
      stall = 1;
    }
    if (comm->config.stall_shutdown_s > 0 && age_s > comm->config.stall_shutdown_s) stall = 1;
  }
  memcpy(misses->data, &nmiss, sizeof nmiss);
  for (size_t w = 0; w < W; w++) comm->vec[W + w] = ~comm->vec[w];
  unsigned flags = (nmiss ? FLAG_UNCACHED : 0) | (stall ? FLAG_STALL : 0) |
                   (want_shutdown ? FLAG_SHUTDOWN : 0);
  comm->vec[2 * W] = ~(uint64_t)flags;
  return flags;
}

static void append_stall_list(hv_comm_t *comm, bytes_t *out) {
  hv__pending_compact(comm);
  uint32_t count = (uint32_t)comm->pending_count;
  bytes_put(out, &count, sizeof count);
  double now = hv__now_us();
  for (size_t i = 0; i < comm->pending_count; i++) {
    struct hv_handle *h = comm->pending_list[i];
    double age = (now - h->t_submit) * 1e-6;
    put_name(out, h->name);
    bytes_put(out, &age, sizeof age);
  }
}

/* Applies the coordinator's responses, in order, on this rank. */
static hv_result_t apply_responses(hv_comm_t *comm, const char *data, size_t len) {
  reader_t r = {data, data + len, 0};
  int n = comm->size;
  while (r.p < r.end && !r.bad) {
    uint8_t kind, code;
    hv__meta_t meta;
    read_bytes(&r, &kind, 1);
    read_bytes(&r, &code, 1);
    read_bytes(&r, &meta, sizeof meta);
    char *name = read_name(&r);
    if (!name) break;
    const char *counts = NULL; /* unaligned in the buffer: only memcpy from it */
    char *msg = NULL;
    if (kind == RESP_OK && meta.coll == HV__COLL_ALLGATHERV) {
      counts = r.p;
      if ((size_t)(r.end - r.p) < sizeof(uint64_t) * (size_t)n) r.bad = 1;
      else r.p += sizeof(uint64_t) * (size_t)n;
    }
    if (kind == RESP_ERROR) {
      uint16_t mlen;
      read_bytes(&r, &mlen, sizeof mlen);
      if (!r.bad && (size_t)(r.end - r.p) >= mlen && (msg = malloc((size_t)mlen + 1))) {
        memcpy(msg, r.p, mlen);
        msg[mlen] = '\0';
        r.p += mlen;
      }
    }
    if (r.bad) {
      free(name);
      free(msg);
      break;
    }
    struct hv_handle *h = pending_by_name(comm, name);
    if (kind == RESP_EVICT) {
      hv__cache_evict(&comm->cache, hv__cache_find(&comm->cache, name));
      if (h) h->cache_bit = -1;
    } else if (kind == RESP_OK) {
      /* Barrier names are used once (hv.barrier.<seq>): cached, they would fill the
       * cache with names that never come back and push the real tensors out of it. */
      int bit = meta.coll == HV__COLL_BARRIER ? -1 : hv__cache_insert(&comm->cache, name, &meta, counts);
      if (!h) {
        hv_result_t rc = hv__set_error(comm, HV_ERR_INTERNAL, "response for '%s', which is not pending here", name);
        free(name);
        return rc;
      }
      if (bit >= 0) {
        h->all_counts = hv__cache_entry(&comm->cache, bit)->all_counts;
      } else if (counts) {
        /* Not cached (cache full): copy, as the response buffer is unaligned and reused. */
        h->own_counts = malloc(sizeof(uint64_t) * (size_t)n);
        if (!h->own_counts) {
          free(name);
          return hv__set_error(comm, HV_ERR_NO_MEMORY, "allgatherv counts");
        }
        memcpy(h->own_counts, counts, sizeof(uint64_t) * (size_t)n);
        h->all_counts = h->own_counts;
      }
      hv__pending_remove(comm, h);
      if (exec_add(comm, h)) {
        free(name);
        return hv__set_error(comm, HV_ERR_NO_MEMORY, "execution list");
      }
      if (comm->timeline) hv__timeline_span(comm->timeline, h->name, "NEGOTIATE", h->t_dequeue, hv__now_us());
    } else if (kind == RESP_ERROR && h) {
      hv__pending_remove(comm, h);
      hv__handle_complete(h, (hv_result_t)code, msg);
      msg = NULL;
    }
    free(msg);
    free(name);
  }
  if (r.bad) return hv__set_error(comm, HV_ERR_INTERNAL, "corrupt negotiation response");
  return HV_SUCCESS;
}

hv_result_t hv__negotiate_round(hv_comm_t *comm, int want_shutdown, int *shutdown_agreed,
                                int *productive) {
  int n = comm->size;
  comm->round++;
  comm->exec_count = 0;
  *productive = dequeue(comm);

  bytes_t *misses = &comm->misses;
  build_vector(comm, misses, want_shutdown);
  size_t W = (comm->cache.capacity + 63) / 64;
  HV_CHECK(hv__negotiate_vector_and(comm, comm->vec, comm->vec_out, comm->vec_tmp, (int)(2 * W + 1)));
  MPI_Request req;
  unsigned flags = (unsigned)~comm->vec_out[2 * W];

  /* Names whose bit is set on every rank: ready, in bit order. */
  for (size_t w = 0; w < W; w++) {
    uint64_t word = comm->vec_out[w];
    while (word) {
      int b = __builtin_ctzll(word);
      word &= word - 1;
      int bit = (int)(w * 64) + b;
      const hv__cache_entry_t *e = hv__cache_entry(&comm->cache, bit);
      /* The handle that set the bit in build_vector: no name lookups for hundreds of
       * tensors a round. */
      struct hv_handle *h = comm->bit_owner[bit];
      if (!h || h->cache_bit != bit || !is_pending(comm, h))
        return hv__set_error(comm, HV_ERR_INTERNAL, "cache bit %d ready but not pending here", bit);
      h->all_counts = e->all_counts;
      hv__pending_remove(comm, h);
      if (exec_add(comm, h)) return hv__set_error(comm, HV_ERR_NO_MEMORY, "execution list");
      if (comm->timeline) hv__timeline_span(comm->timeline, h->name, "NEGOTIATE", h->t_dequeue, hv__now_us());
    }
  }

  if (flags & (FLAG_UNCACHED | FLAG_STALL | FLAG_SHUTDOWN)) {
    if (flags & FLAG_STALL) append_stall_list(comm, misses);
    if (misses->len > (size_t)INT32_MAX) return hv__set_error(comm, HV_ERR_INTERNAL, "negotiation message too large");
    int mylen = (int)misses->len;
    coordinator_t *c = comm->coordinator;
    HV_MPI_CHECK(comm, MPI_Igather(&mylen, 1, MPI_INT, c ? c->lens : NULL, 1, MPI_INT, 0, comm->mpi, &req));
    HV_CHECK(hv__mpi_wait_all(comm, 1, &req, "negotiation (gather of sizes)", 1));
    if (c) {
      size_t total = 0;
      for (int q = 0; q < n; q++) c->displs[q] = (int)total, total += (size_t)c->lens[q];
      if (total > (size_t)INT32_MAX) return hv__set_error(comm, HV_ERR_INTERNAL, "negotiation too large");
      if (bytes_reserve(&c->gathered, total)) return hv__set_error(comm, HV_ERR_NO_MEMORY, "negotiation gather");
      c->gathered.len = total;
    }
    HV_MPI_CHECK(comm, MPI_Igatherv(misses->data, mylen, MPI_BYTE, c ? c->gathered.data : NULL,
                                    c ? c->lens : NULL, c ? c->displs : NULL, MPI_BYTE, 0, comm->mpi, &req));
    HV_CHECK(hv__mpi_wait_all(comm, 1, &req, "negotiation (gather of requests)", 1));
    bytes_t *resp = &comm->response;
    int resp_len = 0;
    if (c) {
      HV_CHECK(coordinator_process(comm, flags));
      resp_len = (int)c->response.len;
    }
    HV_MPI_CHECK(comm, MPI_Ibcast(&resp_len, 1, MPI_INT, 0, comm->mpi, &req));
    HV_CHECK(hv__mpi_wait_all(comm, 1, &req, "negotiation (broadcast of responses)", 1));
    if (c) {
      resp = &c->response;
    } else {
      if (bytes_reserve(resp, (size_t)resp_len)) return hv__set_error(comm, HV_ERR_NO_MEMORY, "negotiation response");
      resp->len = (size_t)resp_len;
    }
    if (resp_len) {
      HV_MPI_CHECK(comm, MPI_Ibcast(resp->data, resp_len, MPI_BYTE, 0, comm->mpi, &req));
      HV_CHECK(hv__mpi_wait_all(comm, 1, &req, "negotiation (broadcast of responses)", 1));
    }
    HV_CHECK(apply_responses(comm, resp->data, (size_t)resp_len));
    if (resp_len) *productive = 1;
  }
  if (comm->exec_count) *productive = 1;
  /* Every rank stops after this round: learn which rank asked, and its last error, so
   * requests left here fail with that first error (fault.c). */
  if (flags & FLAG_SHUTDOWN) HV_CHECK(hv__fault_shutdown_reason(comm, want_shutdown));
  *shutdown_agreed = (flags & FLAG_SHUTDOWN) != 0;
  return HV_SUCCESS;
}
