/* negotiate_round.c: one negotiation round, run by every rank's background thread
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

#include "autotune.h"
#include "flight_recorder.h"
#include "negotiate.h"
#include "timeline.h"

/* Builds this rank's vector and the serialised cache misses; returns the flags. */
static unsigned build_vector(hv_comm_t *comm, hv__bytes_t *misses, int want_shutdown) {
  size_t W = (comm->cache.capacity + 63) / 64;
  memset(comm->vec, 0, sizeof(uint64_t) * W);
  misses->len = 0;
  uint32_t nmiss = 0;
  hv__bytes_put(misses, &nmiss, sizeof nmiss); /* reserved by the caller: cannot fail */
  double now = hv__now_us();
  int stall = 0;
  hv__pending_compact(comm);
  for (size_t i = 0; i < comm->pending_count; i++) {
    struct hv_handle *h = comm->pending_list[i];
    if (!h->reported_full) {
      /* While ranks have joined, every request goes to the coordinator, which alone
       * knows who joined (join.c). */
      int bit = comm->joined_count ? -1 : hv__cache_lookup(&comm->cache, h->name, h->name_hash, &h->meta);
      h->cache_bit = bit;
      if (bit >= 0) {
        comm->vec[bit / 64] |= 1ull << (bit % 64);
        comm->bit_owner[bit] = h;
      } else {
        /* Out of memory: take back what was written and report it in full next round. */
        size_t before = misses->len;
        if (hv__bytes_put(misses, &h->meta, sizeof h->meta) || hv__put_name(misses, h->name)) {
          misses->len = before;
          continue;
        }
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
  unsigned flags = (nmiss ? HV__FLAG_UNCACHED : 0) | (stall ? HV__FLAG_STALL : 0) |
                   (want_shutdown ? HV__FLAG_SHUTDOWN : 0) | (hv__autotune_pending(comm) ? HV__FLAG_TUNE : 0);
  comm->vec[2 * W] = ~(uint64_t)flags;
  return flags;
}

/* 0, or -1 when out of memory (out is then as it was: never a list cut short, which
 * the coordinator would read as a corrupt message). */
static int append_stall_list(hv_comm_t *comm, hv__bytes_t *out) {
  hv__pending_compact(comm);
  const size_t start = out->len;
  uint32_t count = (uint32_t)comm->pending_count;
  if (hv__bytes_put(out, &count, sizeof count)) return -1;
  double now = hv__now_us();
  for (size_t i = 0; i < comm->pending_count; i++) {
    struct hv_handle *h = comm->pending_list[i];
    double age = (now - h->t_submit) * 1e-6;
    if (hv__put_name(out, h->name) || hv__bytes_put(out, &age, sizeof age)) {
      out->len = start;
      return -1;
    }
  }
  return 0;
}

/* Applies the coordinator's responses, in order, on this rank. */
static hv_result_t apply_responses(hv_comm_t *comm, const char *data, size_t len) {
  hv__reader_t r = {data, data + len, 0, 0};
  int n = comm->size;
  while (r.p < r.end && !r.bad) {
    uint8_t kind, code;
    hv__meta_t meta;
    hv__read_bytes(&r, &kind, 1);
    hv__read_bytes(&r, &code, 1);
    hv__read_bytes(&r, &meta, sizeof meta);
    char *name = hv__read_name(&r);
    if (!name) break;
    const char *counts = NULL; /* unaligned in the buffer: only memcpy from it */
    char *msg = NULL;
    if (kind == HV__RESP_OK && meta.coll == HV__COLL_ALLGATHERV) {
      counts = r.p;
      if ((size_t)(r.end - r.p) < sizeof(uint64_t) * (size_t)n) r.bad = 1;
      else r.p += sizeof(uint64_t) * (size_t)n;
    }
    if (kind == HV__RESP_ERROR) {
      uint16_t mlen;
      hv__read_bytes(&r, &mlen, sizeof mlen);
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
    struct hv_handle *h = hv__pending_by_name(comm, name);
    int contributors = 0;
    if (kind == HV__RESP_OK && meta.coll == HV__COLL_ALLREDUCE && meta.root > 0) {
      contributors = meta.root; /* ranks joined (join.c): the others' count */
      meta.root = 0;              /* as every rank's own request has it, for the cache */
    }
    if (kind == HV__RESP_OK && hv__is_join(&meta)) {
      comm->joined_count = 0; /* the last rank joined: hv_join returns everywhere */
      comm->me_joined = 0;
    }
    if (kind == HV__RESP_OK && !h && comm->me_joined) {
      /* Joined: take part with the identity in the others' collective. */
      h = hv__join_phantom(comm, name, &meta);
      if (!h) {
        hv_result_t rc = hv__set_error(comm, HV_ERR_NO_MEMORY, "hv_join's stand-in for '%s'", name);
        free(name);
        return rc;
      }
    }
    if (h) h->contributors = contributors;
    if (kind == HV__RESP_TUNE) {
      hv__autotune_apply(comm, &meta);
    } else if (kind == HV__RESP_JOINED) {
      comm->joined_count++;
      if (meta.root == comm->rank) comm->me_joined = 1;
    } else if (kind == HV__RESP_EVICT) {
      hv__cache_evict(&comm->cache, hv__cache_find(&comm->cache, name));
      if (h) h->cache_bit = -1;
    } else if (kind == HV__RESP_OK) {
      /* Barrier names are used once (hv.barrier.<seq>): cached, they would fill the
       * cache with names that never come back and push the real tensors out of it. */
      if (hv__coll_is_p2p(meta.coll) && !h) {
        /* A send/receive pair of two other ranks: every rank hears of it, the pair runs it. */
        free(name);
        continue;
      }
      /* Nor are point-to-point names: the bit vector's AND needs every rank's bit, and
       * only two ranks have these. */
      int bit = meta.coll == HV__COLL_BARRIER || hv__coll_is_p2p(meta.coll)
                    ? -1
                    : hv__cache_insert(&comm->cache, name, &meta, counts);
      if (bit == -2) {
        /* Not a fallback: every rank must assign the same bits, or the caches part. */
        hv_result_t rc = hv__set_error(comm, HV_ERR_NO_MEMORY, "response cache entry of '%s'", name);
        free(name);
        return rc;
      }
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
      /* Listed for execution before it leaves the pending table: a failed add leaves
       * it pending, where the teardown fails it, instead of in neither (a hang). */
      if (hv__exec_add(comm, h)) {
        hv_result_t rc = hv__set_error(comm, HV_ERR_NO_MEMORY, "execution list");
        if (h->phantom) free(h->phantom_buf), hv__handle_free(h);
        free(name);
        return rc;
      }
      if (h->phantom) {
        free(name);
        continue;
      }
      hv__pending_remove(comm, h);
      if (comm->timeline) hv__timeline_span(comm->timeline, h->name, "NEGOTIATE", h->t_dequeue, hv__now_us());
      if (h->t_step_first > 0) hv__straggler_ready(comm, h);
    } else if (kind == HV__RESP_ERROR && h) {
      hv__pending_remove(comm, h);
      hv__handle_complete(h, (hv_result_t)code, msg);
      msg = NULL;
    }
    free(msg);
    free(name);
  }
  if (r.oom) return hv__set_error(comm, HV_ERR_NO_MEMORY, "a tensor name of the negotiation response");
  if (r.bad) return hv__set_error(comm, HV_ERR_INTERNAL, "corrupt negotiation response");
  return HV_SUCCESS;
}

hv_result_t hv__negotiate_round(hv_comm_t *comm, int want_shutdown, int *shutdown_agreed,
                                int *productive) {
  int n = comm->size;
  comm->round++;
  comm->exec_count = 0;
  *productive = hv__pending_dequeue(comm);

  hv__bytes_t *misses = &comm->misses;
  if (hv__bytes_reserve(misses, sizeof(uint32_t))) return hv__set_error(comm, HV_ERR_NO_MEMORY, "negotiation message");
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
      if (!h || h->cache_bit != bit || !hv__pending_has(comm, h))
        return hv__set_error(comm, HV_ERR_INTERNAL, "cache bit %d ready but not pending here", bit);
      h->all_counts = e->all_counts;
      if (hv__exec_add(comm, h)) return hv__set_error(comm, HV_ERR_NO_MEMORY, "execution list");
      hv__pending_remove(comm, h);
      if (comm->timeline) hv__timeline_span(comm->timeline, h->name, "NEGOTIATE", h->t_dequeue, hv__now_us());
      if (h->t_step_first > 0) hv__straggler_ready(comm, h);
    }
  }

  if (flags & (HV__FLAG_UNCACHED | HV__FLAG_STALL | HV__FLAG_SHUTDOWN | HV__FLAG_TUNE)) {
    if ((flags & HV__FLAG_STALL) && append_stall_list(comm, misses))
      return hv__set_error(comm, HV_ERR_NO_MEMORY, "negotiation stall list");
    if (misses->len > (size_t)INT32_MAX) return hv__set_error(comm, HV_ERR_INTERNAL, "negotiation message too large");
    int mylen = (int)misses->len;
    hv__coordinator_t *c = comm->coordinator;
    HV_MPI_CHECK(&comm->host.errors, MPI_Igather(&mylen, 1, MPI_INT, c ? c->lens : NULL, 1, MPI_INT, 0, comm->mpi, &req));
    HV_CHECK(hv__wait_mpi(&comm->host, 1, &req, "negotiation (gather of sizes)", 1));
    if (c) {
      size_t total = 0;
      for (int q = 0; q < n; q++) c->displs[q] = (int)total, total += (size_t)c->lens[q];
      if (total > (size_t)INT32_MAX) return hv__set_error(comm, HV_ERR_INTERNAL, "negotiation too large");
      if (hv__bytes_reserve(&c->gathered, total)) return hv__set_error(comm, HV_ERR_NO_MEMORY, "negotiation gather");
      c->gathered.len = total;
    }
    HV_MPI_CHECK(&comm->host.errors, MPI_Igatherv(misses->data, mylen, MPI_BYTE, c ? c->gathered.data : NULL,
                                    c ? c->lens : NULL, c ? c->displs : NULL, MPI_BYTE, 0, comm->mpi, &req));
    HV_CHECK(hv__wait_mpi(&comm->host, 1, &req, "negotiation (gather of requests)", 1));
    hv__bytes_t *resp = &comm->response;
    int resp_len = 0;
    if (c) {
      HV_CHECK(hv__coordinator_process(comm, flags));
      resp_len = (int)c->response.len;
    }
    HV_MPI_CHECK(&comm->host.errors, MPI_Ibcast(&resp_len, 1, MPI_INT, 0, comm->mpi, &req));
    HV_CHECK(hv__wait_mpi(&comm->host, 1, &req, "negotiation (broadcast of responses)", 1));
    if (c) {
      resp = &c->response;
    } else {
      if (hv__bytes_reserve(resp, (size_t)resp_len)) return hv__set_error(comm, HV_ERR_NO_MEMORY, "negotiation response");
      resp->len = (size_t)resp_len;
    }
    if (resp_len) {
      HV_MPI_CHECK(&comm->host.errors, MPI_Ibcast(resp->data, resp_len, MPI_BYTE, 0, comm->mpi, &req));
      HV_CHECK(hv__wait_mpi(&comm->host, 1, &req, "negotiation (broadcast of responses)", 1));
    }
    HV_CHECK(apply_responses(comm, resp->data, (size_t)resp_len));
    if (resp_len) *productive = 1;
  }
  if (comm->exec_count) *productive = 1;
  hv__fr_negotiated(comm);
  /* The first stall report of the process dumps the flight recorder on every rank
   * (rank 0's coordinator already did, with its line). */
  if (flags & HV__FLAG_STALL)
    hv__flight_stall(comm, "a negotiation stall report: a request waited longer than HV_STALL_CHECK_TIME", NULL);
  /* Every rank stops after this round: learn which rank asked, and its last error, so
   * requests left here fail with that first error (fault.c). */
  if (flags & HV__FLAG_SHUTDOWN) HV_CHECK(hv__fault_shutdown_reason(comm, want_shutdown));
  *shutdown_agreed = (flags & HV__FLAG_SHUTDOWN) != 0;
  return HV_SUCCESS;
}
