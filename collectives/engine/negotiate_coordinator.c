/* negotiate_coordinator.c: rank 0's part of negotiation. It records which rank
 * has submitted which name (from the cache misses every rank sends), checks that
 * every rank's metadata agrees once a name is everywhere, and answers OK (cache it at
 * the same bit everywhere), ERROR (mismatch, or a stall past HV_STALL_SHUTDOWN_TIME)
 * or EVICT (a cached name came back with other metadata). Stall reports name the
 * ranks that have not submitted a waiting name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  hv__coordinator_t *c = comm->coordinator;
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
               "rank 0 has %s, rank %d has %s",
               e->name, hv__coll_name(a->coll), what, va, q, vb);
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
      /* A cached name sent in full: its metadata changed on that rank. Every rank drops
       * it and re-sends in full, so the mismatch (if any) is seen with all values. */
      if (hv__cache_find(&comm->cache, e->name) >= 0 && e->evicted_round != comm->round + 1) {
        e->evicted_round = comm->round + 1;
        if (hv__wire_put_response(&c->response, HV__RESP_EVICT, HV_SUCCESS, NULL, e->name, NULL, n, NULL)) goto oom;
      }
      const int p2p = hv__coll_is_p2p(meta.coll);
      if (e->nhave == (p2p ? 2 : n)) {
        char msg[768];
        hv_result_t verdict = p2p ? pair_agrees(e, n, msg, sizeof msg) : metas_agree(e, n, msg, sizeof msg);
        if (verdict == HV_SUCCESS) {
          uint64_t *counts = NULL;
          if (e->metas[0].coll == HV__COLL_ALLGATHERV) {
            counts = malloc(sizeof(uint64_t) * (size_t)n);
            if (!counts) goto oom;
            for (int k = 0; k < n; k++) counts[k] = e->metas[k].count;
          }
          /* A pair's own metadata: rank 0 may not be one of its two ranks. */
          int first = 0;
          while (!e->has[first]) first++;
          int bad = hv__wire_put_response(&c->response, HV__RESP_OK, HV_SUCCESS, &e->metas[first], e->name, counts, n,
                                          NULL);
          free(counts);
          if (bad) goto oom;
        } else {
          HV_LOG(HV__LOG_ERROR, "%s", msg);
          if (hv__wire_put_response(&c->response, HV__RESP_ERROR, verdict, NULL, e->name, NULL, n, msg)) goto oom;
        }
        hv__map_remove(&c->table, e->name);
        coord_entry_free(e);
      }
    }
    if (rd[q].oom) result = hv__set_error(comm, HV_ERR_NO_MEMORY, "coordinator: a tensor name from rank %d", q);
    else if (rd[q].bad) result = hv__set_error(comm, HV_ERR_INTERNAL, "corrupt negotiation message from rank %d", q);
  }
  if (result == HV_SUCCESS && (flags & HV__FLAG_STALL) && coordinator_stall(comm, rd, n)) goto oom;
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
