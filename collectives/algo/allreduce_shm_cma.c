/* allreduce_shm_cma.c: the single-copy allreduce on one node: each rank reads its
 * share of the peers' send buffers and writes its reduced share into the peers'
 * receive buffers with cross-memory attach (process_vm_readv/writev, shm_cma.c), so no
 * byte goes through the shared slots. The slots carry only each rank's pid and buffer
 * addresses, and the flags (shm_region.h) order the phases.
 *
 * One call is one step t of the shared-memory allreduce's sequence (allreduce_shm.c),
 * on half-slot t mod 2; with l ranks, rank i owning segment i (cut at cache lines):
 *   1. rank i writes its table (pid, count, and every piece's send and receive
 *      address) into its half-slot and posts 2t-1;
 *   2. it waits for every flag to reach 2t-1, then, chunk by chunk, reads segment i
 *      of each peer's send buffers into scratch (one kernel copy, the chunk staying in
 *      cache), reduces its own send buffer and the chunks, in local-rank order of the
 *      peers, into its receive buffer, and writes the reduced chunk into every peer's
 *      receive buffer (process_vm_writev) while it is still in cache (a separate pass
 *      over the segment after the reduction measured 8 MiB 3.1 ms instead of 1.5-1.7);
 *   3. it posts 2t and waits for every flag to reach 2t.
 * Two flag waits, as the copying path. Why the buffers are safe to share:
 *   - a rank touches a peer's buffers only after the peer posted 2t-1 (it is in the
 *     call) and the peer returns only once every rank posted 2t (done with them), so
 *     the user may reuse a buffer as soon as the call returns;
 *   - rank i writes only segment i of a peer's receive buffer, which no one else reads
 *     in this call: in place (send == recv), segment i of rank q's buffer is read only
 *     by rank i itself, in phase 2, before it writes there.
 * Each segment is reduced by one rank and copied by all, so every rank gets bitwise
 * the same result. Memory traffic per rank for S bytes: (l-1)/l S read from peers and
 * (l-1)/l S written to them, against twice that (copy in, read peers' slots, publish,
 * copy out) in the copying path; each call costs two system calls per peer and chunk
 * (a read and a write), and the kernel pins the pages it copies (a few tenths
 * of a microsecond per call and page), so the copying path stays below CMA_MIN_BYTES.
 *
 * The pieces are the tensors of a fused batch (algo.h), the same counts on every rank
 * (the engine fuses the same responses everywhere); a peer's table whose count or
 * number of pieces differs from this rank's fails the call with a message. */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "algo.h"
#include "reduce.h"

/* The smallest batch (bytes in all) auto takes this path for. Measured on 2 ranks bound
 * to cores through the engine with the send buffer written before and the receive
 * buffer read after each call (as a training step does): 64 KiB 11.8 us against 8.6
 * copying, 256 KiB 34.5 against 31, 1 MiB even, 2 MiB 320-440 against 367-395, 4 MiB
 * 605-868 against 885-1140, 8 MiB 1.7-4.9 ms against 5.6-6.0. Below, the kernel's cost
 * per call and page outweighs the copy saved, and the peers' writes leave the result
 * in their caches, from where the reader must fetch it. */
#define CMA_MIN_BYTES ((size_t)2 << 20)
/* Phase 2's chunk: read from a peer in one system call, then reduced while in cache. */
#define CMA_CHUNK_BYTES ((size_t)64 << 10)
/* iovecs per system call (the kernel's IOV_MAX is 1024). */
#define CMA_IOVS 256

/* What a rank publishes in its half-slot: its pid and, for piece i, the addresses of
 * its send (addr[2i]) and receive (addr[2i + 1]) buffers. */
typedef struct cma_table {
  uint64_t pid, count, npieces, elem_size;
  uint64_t addr[];
} cma_table_t;

/* Local rank q's table in this step's half-slot. */
static const cma_table_t *table_of(const hv__shm_t *shm, int q, size_t half) {
  return (const cma_table_t *)(const void *)(hv__shm_slot(shm, q) + half);
}

int hv__allreduce_shm_cma_wanted(const hv__algo_ctx_t *ctx, size_t npieces, size_t bytes) {
  const hv__shm_t *shm = ctx->shm;
  if (!shm || !shm->cma || shm->local_size < 2 || ctx->host->shm_cma == 0) return 0;
  if (npieces > (hv__shm_half_bytes(shm) - sizeof(cma_table_t)) / (2 * sizeof(uint64_t))) return 0;
  if (ctx->host->shm_cma == 1) return 1; /* every size: tests, measurements */
  return bytes >= CMA_MIN_BYTES;
}

/* Elements [at, at + len) between this process and peer `pid`: write 0 reads the
 * peer's send buffers into scratch (contiguous), write 1 writes this rank's receive
 * buffers into the peer's receive buffers. */
static hv_result_t cma_move(const hv__algo_ctx_t *ctx, const cma_table_t *peer, int q, int write,
                            const hv__piece_t *p, size_t np, size_t at, size_t len, size_t es, char *scratch) {
  struct iovec mine[CMA_IOVS], theirs[CMA_IOVS];
  size_t n = 0, bytes = 0;
  for (size_t i = hv__piece_at(p, np, at); len; i++) {
    const size_t off = at - p[i].start, k = p[i].count - off < len ? p[i].count - off : len;
    if (k) {
      mine[n].iov_base = write ? p[i].recv + off * es : scratch;
      mine[n].iov_len = k * es;
      theirs[n].iov_base = (void *)(uintptr_t)(peer->addr[2 * i + (size_t)write] + off * es);
      theirs[n].iov_len = k * es;
      if (!write) scratch += k * es;
      n++, bytes += k * es;
    }
    at += k;
    len -= k;
    if (n == CMA_IOVS || (!len && n)) {
      ssize_t done;
      do {
        done = write ? process_vm_writev((pid_t)peer->pid, mine, n, theirs, n, 0)
                     : process_vm_readv((pid_t)peer->pid, mine, n, theirs, n, 0);
      } while (done < 0 && errno == EINTR);
      if (done != (ssize_t)bytes)
        return hv__fail(&ctx->host->errors, HV_ERR_SYSTEM,
                        "rank %d: the single-copy shared-memory allreduce could not %s local rank %d's memory "
                        "(pid %llu): %s (%zd of %zu bytes); HV_SHM_CMA=0 turns this path off",
                        ctx->host->rank, write ? "write" : "read", q, (unsigned long long)peer->pid,
                        done < 0 ? strerror(errno) : "a partial transfer", done, bytes);
      n = 0, bytes = 0;
    }
  }
  return HV_SUCCESS;
}

/* recv = send op chunk (first) or recv op= chunk, over elements [at, at + len). */
static void reduce_chunk(const hv__piece_t *p, size_t np, size_t at, size_t len, const char *chunk, size_t es,
                         hv_dtype_t dtype, hv_op_t op, int first) {
  for (size_t i = hv__piece_at(p, np, at); len; i++) {
    const size_t off = at - p[i].start, k = p[i].count - off < len ? p[i].count - off : len;
    if (k && first) hv__reduce_to(p[i].recv + off * es, p[i].send + off * es, chunk, k, dtype, op);
    if (k && !first) hv__reduce(p[i].recv + off * es, chunk, k, dtype, op);
    chunk += k * es;
    at += k;
    len -= k;
  }
}

hv_result_t hv__allreduce_shm_cma(hv__algo_ctx_t *ctx, const hv__piece_t *p, size_t np, size_t count,
                                  hv_dtype_t dtype, hv_op_t op) {
  hv__shm_t *shm = ctx->shm;
  const int l = shm->local_size, me = shm->local_rank;
  const size_t es = hv_dtype_size(dtype), chunk = CMA_CHUNK_BYTES / es;
  char *scratch;
  HV_CHECK(hv__algo_scratch(ctx, CMA_CHUNK_BYTES, (void **)&scratch));
  const unsigned long t = ++shm->steps;
  const size_t half = (++shm->halves & 1u) * hv__shm_half_bytes(shm);
  shm->cma_runs++;
  shm->flags_pending = 1; /* the tables' half: as the copying path's steps */
  cma_table_t *mine = (cma_table_t *)(void *)(hv__shm_slot(shm, me) + half);
  mine->pid = (uint64_t)getpid();
  mine->count = count;
  mine->npieces = np;
  mine->elem_size = es;
  for (size_t i = 0; i < np; i++) {
    mine->addr[2 * i] = (uint64_t)(uintptr_t)p[i].send;
    mine->addr[2 * i + 1] = (uint64_t)(uintptr_t)p[i].recv;
  }
  hv__shm_post(shm, 2 * t - 1);
  HV_CHECK(hv__shm_wait_all(shm, 2 * t - 1, 0, NULL));
  for (int q = 0; q < l; q++) {
    const cma_table_t *peer = table_of(shm, q, half);
    if (q != me && (peer->count != count || peer->npieces != np || peer->elem_size != es))
      return hv__fail(&ctx->host->errors, HV_ERR_INTERNAL,
                      "rank %d: the single-copy shared-memory allreduce got a batch of %zu elements in %zu pieces "
                      "(%zu bytes each), local rank %d one of %llu in %llu (%llu bytes each)",
                      ctx->host->rank, count, np, es, q, (unsigned long long)peer->count,
                      (unsigned long long)peer->npieces, (unsigned long long)peer->elem_size);
  }
  size_t a, len;
  hv__shm_line_segment(shm, count, me, es, &a, &len);
  for (size_t at = a, end = a + len; at < end; at += chunk) {
    const size_t k = end - at < chunk ? end - at : chunk;
    int first = 1;
    for (int q = 0; q < l; q++) {
      if (q == me) continue;
      HV_CHECK(cma_move(ctx, table_of(shm, q, half), q, 0, p, np, at, k, es, scratch));
      reduce_chunk(p, np, at, k, scratch, es, dtype, op, first);
      first = 0;
    }
    /* The reduced chunk to every peer while it is in cache. */
    for (int q = 0; q < l; q++) {
      if (q == me) continue;
      HV_CHECK(cma_move(ctx, table_of(shm, q, half), q, 1, p, np, at, k, es, NULL));
    }
  }
  hv__shm_post(shm, 2 * t);
  return hv__shm_wait_all(shm, 2 * t, 0, NULL);
}
