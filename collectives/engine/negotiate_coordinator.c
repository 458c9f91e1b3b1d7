/* negotiate_coordinator.c: rank 0's part of negotiation. It records which rank
 * has submitted which name (from the cache misses every rank sends), checks that
 * every rank's metadata agrees once a name is everywhere, and answers OK (cache it at
 * the same bit everywhere), ERROR (mismatch, or a stall past HV_STALL_SHUTDOWN_TIME)
 * or EVICT (a cached name came back with other metadata). Stall reports name the
 * ranks that have not submitted a waiting name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune.h"
#include "flight_recorder.h"
#include "negotiate.h"

typedef struct coord_entry {
  char *name;
  hv__meta_t *metas; /* per rank */
  uint8_t *has;      /* per rank */
  int nhave;
  uint64_t evicted_round;
  double max_age; /* stall reports: the oldest age any rank reported */
  double first_seen; /* CLOCK_MONOTONIC us: when the first rank's request arrived */
} coord_entry_t;

static void coord_entry_free(coord_entry_t *e) {
  if (!e) return;
  free(e->name);
  free(e->metas);
  free(e->has);
  free(e);
}


hv_result_t hv__coordinator_create(hv_comm_t *comm) {
  hv__coordinator_t *c = calloc(1, sizeof *c);
  if (!c) return hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator");
  c->lens = calloc((size_t)comm->size, sizeof(int));
  c->displs = calloc((size_t)comm->size, sizeof(int));
  c->joined = calloc((size_t)comm->size, 1);
  if (!c->lens || !c->displs || !c->joined) {
    free(c->lens);
    free(c->displs);
    free(c->joined);
    free(c);
    return hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator");
  }
  comm->coordinator = c;
  return HV_SUCCESS;
}

void hv__coordinator_destroy(hv_comm_t *comm) {
  hv__coordinator_t *c = comm->coordinator;
  if (!c) return;
  for (size_t i = 0; i < c->table.capacity; i++)
    if (c->table.slots[i].key) coord_entry_free(c->table.slots[i].value);
  hv__map_free(&c->table);
  free(c->response.data);
  free(c->gathered.data);
  free(c->lens);
  free(c->displs);
  free(c->joined);
  free(c);
  comm->coordinator = NULL;
}

static void describe_group(char *out, size_t len, const hv__meta_t *m) {
  if (m->layout == 0) snprintf(out, len, "one tensor (hv_allreduce)");
  else snprintf(out, len, "a group of %llu tensor%s with counts hashing to %016llx", (unsigned long long)m->ntensors,
                m->ntensors == 1 ? "" : "s", (unsigned long long)m->layout);
}

static int has_root(int coll) {
  return coll == HV__COLL_REDUCE || coll == HV__COLL_GATHER || coll == HV__COLL_GATHERV || coll == HV__COLL_SCATTER ||
         coll == HV__COLL_SCATTERV;
}

/* Collectives whose count is each rank's own (checked at execution, engine_vector.c). */
static int count_per_rank(int coll) {
  return coll == HV__COLL_ALLGATHERV || coll == HV__COLL_ALLTOALLV || coll == HV__COLL_GATHERV ||
         coll == HV__COLL_SCATTERV;
}

/* A root every rank gave alike is still checked for range here, not at the call: a
 * rank that failed alone at its call would leave the others waiting for it. */
static hv_result_t root_in_range(const coord_entry_t *e, int n, char *msg, size_t msglen) {
  for (int q = 0; q < n; q++)
    if (has_root(e->metas[q].coll) && (e->metas[q].root < 0 || e->metas[q].root >= n)) {
      snprintf(msg, msglen, "tensor '%s' (%s): rank %d gave root %d, out of range (ranks are 0..%d)", e->name,
               hv__coll_name(e->metas[q].coll), q, e->metas[q].root, n - 1);
      return HV_ERR_INVALID_ARGUMENT;
    }
  return HV_SUCCESS;
}

/* A point-to-point name is ready once two ranks gave it: one hv_send and one hv_recv
 * that name each other, with the same count and dtype. Else a message naming both. */
static hv_result_t pair_agrees(const coord_entry_t *e, int n, char *msg, size_t msglen) {
  int a = -1, b = -1;
  for (int q = 0; q < n; q++)
    if (e->has[q]) {
      if (a < 0) a = q;
      else b = q;
    }
  const hv__meta_t *ma = &e->metas[a], *mb = &e->metas[b];
  if (!hv__coll_is_p2p(ma->coll) || !hv__coll_is_p2p(mb->coll) || ma->coll == mb->coll) {
    snprintf(msg, msglen, "tensor '%s' was submitted as %s by rank %d and as %s by rank %d: a point-to-point name "
             "pairs one hv_send with one hv_recv", e->name, hv__coll_name(ma->coll), a, hv__coll_name(mb->coll), b);
    return HV_ERR_MISMATCH;
  }
  int s = ma->coll == HV__COLL_SEND ? a : b, r = s == a ? b : a;
  const hv__meta_t *ms = &e->metas[s], *mr = &e->metas[r];
  if (ms->root != r || mr->root != s)
    snprintf(msg, msglen, "tensor '%s' (send/recv): rank %d sends to rank %d, rank %d receives from rank %d", e->name,
             s, ms->root, r, mr->root);
  else if (ms->dtype != mr->dtype || ms->count != mr->count)
    snprintf(msg, msglen, "tensor '%s' (send/recv): rank %d sends %llu %s, rank %d receives %llu %s", e->name, s,
             (unsigned long long)ms->count, hv_dtype_name(ms->dtype), r, (unsigned long long)mr->count,
             hv_dtype_name(mr->dtype));
  else return HV_SUCCESS;
  return HV_ERR_MISMATCH;
}

/* Compares every rank's metadata with rank 0's; on a mismatch writes a message that
  * names the tensor, both ranks and both values. Returns the failure's code. */
static hv_result_t metas_agree(const coord_entry_t *e, int n, char *msg, size_t msglen) {
  int ref = 0; /* rank 0, or with ranks joined (join.c) the first that submitted it */
  while (ref < n - 1 && !e->has[ref]) ref++;
  const hv__meta_t *a = &e->metas[ref];
  for (int q = ref + 1; q < n; q++) {
    if (!e->has[q]) continue;
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
    } else if ((a->coll == HV__COLL_ALLREDUCE || a->coll == HV__COLL_REDUCESCATTER || a->coll == HV__COLL_REDUCE) &&
               a->op != b->op) {
      what = "op";
      snprintf(va, sizeof va, "%s", hv_op_name(a->op));
      snprintf(vb, sizeof vb, "%s", hv_op_name(b->op));
    } else if (!count_per_rank(a->coll) && a->count != b->count) {
      what = "count";
      snprintf(va, sizeof va, "%llu", (unsigned long long)a->count);
      snprintf(vb, sizeof vb, "%llu", (unsigned long long)b->count);
    } else if (a->coll == HV__COLL_ALLREDUCE && (a->ntensors != b->ntensors || a->layout != b->layout)) {
      /* The same total split into other tensors (only a hash of the counts travels). */
      what = "lists of tensors";
      describe_group(va, sizeof va, a);
      describe_group(vb, sizeof vb, b);
    } else if ((a->coll == HV__COLL_BROADCAST || has_root(a->coll)) && a->root != b->root) {
      what = "root";
      snprintf(va, sizeof va, "%d", a->root);
      snprintf(vb, sizeof vb, "%d", b->root);
    } else if (a->compression != b->compression) {
      static const char *const comp[] = {"default", "none", "fp16", "bf16", "fp16-1r", "bf16-1r", "?", "?"};
      what = "compression";
      snprintf(va, sizeof va, "%s", comp[a->compression & 7]);
      snprintf(vb, sizeof vb, "%s", comp[b->compression & 7]);
    }
    if (what) {
      snprintf(msg, msglen,
               "tensor '%s' (%s) was submitted with different %s on different ranks: "
               "rank %d has %s, rank %d has %s",
               e->name, hv__coll_name(a->coll), what, ref, va, q, vb);
      return HV_ERR_MISMATCH;
    }
  }
  return root_in_range(e, n, msg, msglen);
}

static void format_ranks(char *out, size_t outlen, const uint8_t *has, int n, int want) {
  size_t used = 0;
  out[0] = '\0';
  for (int q = 0; q < n && used + 16 < outlen; q++)
    if (!!has[q] == want) used += (size_t)snprintf(out + used, outlen - used, "%s%d", used ? "," : "", q);
}

/* Stall report: names pending somewhere but not everywhere. Warns, and with
 * HV_STALL_SHUTDOWN_TIME past, fails them on every rank. */
static int coordinator_stall(hv_comm_t *comm, hv__reader_t *readers, int n) {
  hv__coordinator_t *c = comm->coordinator;
  hv__map_t seen = {0};
  int rc = 0;
  for (int q = 0; q < n && !rc; q++) {
    uint32_t count;
    hv__read_bytes(&readers[q], &count, sizeof count);
    for (uint32_t i = 0; i < count && !readers[q].bad; i++) {
      char *name = hv__read_name(&readers[q]);
      double age;
      hv__read_bytes(&readers[q], &age, sizeof age);
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
      char line[900];
      /* A send or receive waits for one rank only, its peer: name that one. */
      const coord_entry_t *full = hv__map_get(&c->table, e->name);
      int by = -1;
      for (int q = 0; full && q < n && by < 0; q++)
        if (full->has[q] && hv__coll_is_p2p(full->metas[q].coll)) by = q;
      if (by >= 0) {
        const hv__meta_t *m = &full->metas[by];
        int send = m->coll == HV__COLL_SEND;
        snprintf(missing, sizeof missing, "%d", m->root);
        snprintf(line, sizeof line, "stall: tensor '%s' (hv_%s on rank %d, %s rank %d) has been waiting %.0f s: rank %d "
                 "has not submitted the matching hv_%s%s", e->name, send ? "send" : "recv", by, send ? "to" : "from",
                 m->root, age, m->root, send ? "recv" : "send", shut ? "; HV_STALL_SHUTDOWN_TIME passed, failing it" : "");
      } else {
        snprintf(line, sizeof line, "stall: tensor '%s' has been waiting %.0f s: submitted by ranks [%s], not by ranks [%s]%s",
                 e->name, age, have, missing, shut ? "; HV_STALL_SHUTDOWN_TIME passed, failing it on every rank" : "");
      }
      HV_LOG(HV__LOG_WARNING, "%s", line);
      hv__flight_stall(comm, line, NULL);
      if (shut) {
        char msg[768];
        if (by >= 0)
          snprintf(msg, sizeof msg, "tensor '%s' stalled for %.0f s: rank %s never submitted the matching hv_%s (rank %s "
                   "did submit the hv_%s)", e->name, age, missing,
                   full->metas[by].coll == HV__COLL_SEND ? "recv" : "send", have,
                   full->metas[by].coll == HV__COLL_SEND ? "send" : "recv");
        else
          snprintf(msg, sizeof msg,
                   "tensor '%s' stalled for %.0f s: ranks [%s] never submitted it (ranks [%s] did)",
                   e->name, age, missing, have);
        if (hv__wire_put_response(&c->response, HV__RESP_ERROR, HV_ERR_STALLED, NULL, e->name, NULL, n, msg)) rc = -1;
        coord_entry_t *pending = hv__map_remove(&c->table, e->name);
        coord_entry_free(pending);
      }
    }
    coord_entry_free(e);
  }
  hv__map_free(&seen);
  return rc;
}

/* Every rank has submitted it, or (join.c) has joined; a send/recv name, its two ranks. */
static int ready(const hv__coordinator_t *c, const coord_entry_t *e, int n) {
  int ref = 0;
  while (ref < n - 1 && !e->has[ref]) ref++;
  if (hv__coll_is_p2p(e->metas[ref].coll)) return e->nhave == 2; /* its two ranks */
  if (e->nhave == n) return 1;
  if (!c->njoined || e->nhave == 0) return 0;
  for (int q = 0; q < n; q++)
    if (!e->has[q] && !c->joined[q]) return 0;
  return 1;
}

/* The response to a ready entry: OK (with, when ranks joined, how many contributed),
 * or ERROR on a mismatch or a collective that cannot complete without them. Resets
 * the joins when it is hv_join's own request. -1 when out of memory. */
static int respond(hv_comm_t *comm, hv__coordinator_t *c, const coord_entry_t *e) {
  const int n = comm->size;
  char msg[768];
  int ref = 0; /* the first rank that gave it: rank 0 may have joined, or not be one of a pair's two */
  while (!e->has[ref]) ref++;
  const int p2p = hv__coll_is_p2p(e->metas[ref].coll);
  const hv_result_t verdict = p2p ? pair_agrees(e, n, msg, sizeof msg) : metas_agree(e, n, msg, sizeof msg);
  if (verdict != HV_SUCCESS) {
    HV_LOG(HV__LOG_ERROR, "%s", msg);
    return hv__wire_put_response(&c->response, HV__RESP_ERROR, verdict, NULL, e->name, NULL, n, msg);
  }
  hv__meta_t meta = e->metas[ref];
  if (hv__is_join(&meta)) { /* the last rank joined: every hv_join returns */
    memset(c->joined, 0, (size_t)n);
    c->njoined = 0;
  } else if (e->nhave < n && !p2p) {
    const char *why = hv__join_unsupported(&meta);
    char joined[256];
    format_ranks(joined, sizeof joined, e->has, n, 0);
    if (!why && meta.coll == HV__COLL_BROADCAST && !e->has[meta.root]) why = "its root has joined";
    if (why) {
      snprintf(msg, sizeof msg, "tensor '%s' (%s) cannot complete: ranks [%s] have joined (hv_join) and %s",
               e->name, hv__coll_name(meta.coll), joined, why);
      HV_LOG(HV__LOG_ERROR, "%s", msg);
      return hv__wire_put_response(&c->response, HV__RESP_ERROR, HV_ERR_INVALID_ARGUMENT, NULL, e->name, NULL, n, msg);
    }
    if (meta.coll == HV__COLL_ALLREDUCE) meta.root = e->nhave; /* the divisor of an average */
  }
  uint64_t *counts = NULL;
  if (meta.coll == HV__COLL_ALLGATHERV) {
    counts = malloc(sizeof(uint64_t) * (size_t)n);
    if (!counts) return -1;
    for (int k = 0; k < n; k++) counts[k] = e->metas[k].count;
  }
  int bad = hv__wire_put_response(&c->response, HV__RESP_OK, HV_SUCCESS, &meta, e->name, counts, n, NULL);
  free(counts);
  return bad;
}

/* After a join: the entries that now wait for no one. */
static int respond_joined(hv_comm_t *comm, hv__coordinator_t *c, int n) {
  for (size_t i = 0; i < c->table.capacity; i++) {
    coord_entry_t *e = c->table.slots[i].value;
    if (!c->table.slots[i].key || !e || !ready(c, e, n)) continue;
    if (respond(comm, c, e)) return -1;
    hv__map_remove(&c->table, e->name);
    coord_entry_free(e);
    i = (size_t)-1; /* the table may have moved its entries: from the start again */
  }
  return 0;
}

/* Processes every rank's cache misses (and stall lists), in rank order, into the
 * response list. */
hv_result_t hv__coordinator_process(hv_comm_t *comm, unsigned flags) {
  hv__coordinator_t *c = comm->coordinator;
  int n = comm->size;
  c->response.len = 0;
  hv__reader_t *rd = malloc(sizeof(hv__reader_t) * (size_t)n);
  if (!rd) return hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator readers");
  for (int q = 0; q < n; q++) {
    rd[q].p = c->gathered.data + c->displs[q];
    rd[q].end = rd[q].p + c->lens[q];
    rd[q].bad = rd[q].oom = 0;
  }
  hv_result_t result = HV_SUCCESS;
  int joins = 0;
  for (int q = 0; q < n && result == HV_SUCCESS; q++) {
    uint32_t count;
    hv__read_bytes(&rd[q], &count, sizeof count);
    for (uint32_t i = 0; i < count && !rd[q].bad; i++) {
      hv__meta_t meta;
      hv__read_bytes(&rd[q], &meta, sizeof meta);
      char *name = hv__read_name(&rd[q]);
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
        e->first_seen = hv__coarse_now_us();
      } else {
        free(name);
      }
      if (!e->has[q]) e->nhave++;
      e->has[q] = 1;
      e->metas[q] = meta;
      if (hv__is_join(&meta) && !c->joined[q]) {
        /* Every rank learns it in this round's responses (join.c). */
        hv__meta_t who = meta;
        who.root = q;
        c->joined[q] = 1;
        c->njoined++;
        joins++;
        if (hv__wire_put_response(&c->response, HV__RESP_JOINED, HV_SUCCESS, &who, e->name, NULL, n, NULL)) goto oom;
      }
      /* A cached name sent in full: its metadata changed on that rank. Every rank drops
       * it and re-sends in full, so the mismatch (if any) is seen with all values. */
      if (!c->njoined && hv__cache_find(&comm->cache, e->name) >= 0 && e->evicted_round != comm->round + 1) {
        e->evicted_round = comm->round + 1;
        if (hv__wire_put_response(&c->response, HV__RESP_EVICT, HV_SUCCESS, NULL, e->name, NULL, n, NULL)) goto oom;
      }
      if (ready(c, e, n)) {
        if (respond(comm, c, e)) goto oom;
        hv__map_remove(&c->table, e->name);
        coord_entry_free(e);
      }
    }
    if (rd[q].oom) result = hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator: a tensor name from rank %d", q);
    else if (rd[q].bad) result = hv__set_error(comm, HV_ERR_INTERNAL, "corrupt negotiation message from rank %d", q);
  }
  /* Names that waited only for the ranks that joined now are ready. */
  if (result == HV_SUCCESS && joins && respond_joined(comm, c, n)) goto oom;
  if (result == HV_SUCCESS && (flags & HV__FLAG_STALL) && coordinator_stall(comm, rd, n)) goto oom;
  if (result == HV_SUCCESS && (flags & HV__FLAG_TUNE) && hv__autotune_pending(comm)) {
    hv__meta_t setting;
    hv__autotune_encode(comm, &setting);
    if (hv__wire_put_response(&c->response, HV__RESP_TUNE, HV_SUCCESS, &setting, HV__AUTOTUNE_NAME, NULL, n, NULL))
      goto oom;
  }
  free(rd);
  return result;
oom:
  free(rd);
  return hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator response");
}


/* The flight recorder's view of the table (FLIGHT_RECORDER.md, "coordinator"): the
 * names some ranks have submitted in full, who did and who did not. */
char *hv__coordinator_json(hv_comm_t *comm) {
  hv__coordinator_t *c = comm->coordinator;
  if (!c) return NULL;
  hv__json_t j = {0};
  hv__json_printf(&j, "{\"waiting\": [");
  int first = 1;
  for (size_t i = 0; i < c->table.capacity; i++) {
    const coord_entry_t *e = c->table.slots[i].value;
    if (!c->table.slots[i].key || !e) continue;
    int coll = -1;
    for (int q = 0; q < comm->size && coll < 0; q++)
      if (e->has[q]) coll = e->metas[q].coll;
    hv__json_printf(&j, "%s\n      {\"name\": ", first ? "" : ",");
    hv__json_string(&j, e->name);
    hv__json_printf(&j, ", \"coll\": \"%s\", \"submitted_by\": [", coll >= 0 ? hv__coll_name((hv__coll_t)coll) : "");
    for (int q = 0, n = 0; q < comm->size; q++)
      if (e->has[q]) hv__json_printf(&j, "%s%d", n++ ? "," : "", q);
    hv__json_printf(&j, "], \"missing\": [");
    for (int q = 0, n = 0; q < comm->size; q++)
      if (!e->has[q]) hv__json_printf(&j, "%s%d", n++ ? "," : "", q);
    hv__json_printf(&j, "], \"first_seen\": ");
    hv__json_time(&j, e->first_seen);
    hv__json_printf(&j, "}");
    first = 0;
  }
  hv__json_printf(&j, "]}");
  if (j.oom) {
    free(j.data);
    return NULL;
  }
  return j.data;
}
