/* algo.h: the algorithms' context (a host, a transport, scratch) and every
 * collective algorithm of hv: the allreduce table (ring, recursive doubling, shared
 * memory, hierarchical, MPI's own, Rabenseifner's, 2-D), the ring phases, the
 * non-blocking ring, and the other collectives (broadcast, allgather,
 * reduce-scatter, alltoall). Files of
 * collectives/algo/ include this header and checks.h only, never the engine's: the
 * algorithms run unchanged under the engine, in a test's in-process ranks
 * (transport_local.c) and in a simulator. They run on whatever thread calls them and
 * never allocate once their scratch has grown to the job's sizes. */
#ifndef HV_ALGO_H
#define HV_ALGO_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "checks.h"
#include "host.h"
#include "hv.h"
#include "shm_region.h"
#include "transport.h"

/* The allreduce algorithms, by the names HV_ALLREDUCE_ALGO and hvbench take. */
typedef enum {
  HV__ALGO_AUTO = 0,
  HV__ALGO_RING = 1,
  HV__ALGO_RD = 2,
  HV__ALGO_MPI = 3,
  HV__ALGO_HIER = 4,
  HV__ALGO_SHM = 5,
  HV__ALGO_RAB = 6, /* Rabenseifner's */
  HV__ALGO_2D = 7,  /* two-level over a grid of the ranks */
  HV__NUM_ALGOS = 8,
  /* Not a choice but what ran: the hierarchical allreduce with its node phases in
   * shared memory (allreduce_hier_shm.c), told apart so that a silent loss of shared
   * memory shows in the timeline and the counters (hv_comm_allreduce_count). */
  HV__ALGO_HIER_SHM = 8,
  /* Not chosen by HV_ALLREDUCE_ALGO either: what HV_COMPRESSION=fp16-1r/bf16-1r runs
   * (allreduce_1r.c). */
  HV__ALGO_1R = 9,
  HV__NUM_RAN = 10
} hv__algo_t;
/* The name of an algorithm (HV__ALGO_HIER_SHM included: "hier_shm"). */
const char *hv__algo_name(hv__algo_t algo);
/* The algorithm named `name` (case-insensitive) among those HV_ALLREDUCE_ALGO
 * accepts, or -1. */
int hv__algo_from_name(const char *name);

typedef struct hv__algo_ctx {
  const hv__algo_host_t *host; /* errors, timeout, fault polls, settings */
  hv__transport_t transport;
  MPI_Comm mpi; /* for the MPI library's own collectives; MPI_COMM_NULL in-process */
  void *scratch;
  size_t scratch_bytes;
  int scratch_shared; /* simulated builds: an SMPI shared allocation (sim_memory.c) */
  size_t *seg_off; /* size + 1 entries: segment offsets, in elements */
  hv__request_t *reqs; /* grow-only request array */
  size_t reqs_cap;
  /* Hierarchical algorithms: contexts over the ranks of my node and over the ranks
   * with my local rank on every node (NULL when not set up). */
  struct hv__algo_ctx *local, *cross;
  int uniform_nodes; /* every node has the same number of ranks */
  int spans_nodes;   /* its ranks are on more than one node: messages cross the network */
  hv__shm_t *shm;    /* the node's shared-memory region, or NULL (then MPI carries it) */
  /* On a local context, once a hierarchical allgather or broadcast has run: for each local rank q,
   * the global ranks of q's cross group (nodes ints from q * nodes). */
  int *groups;
  /* The 2-D allreduce's contexts over my row and my column (allreduce_2d.c), made on
   * its first call; NULL before. */
  struct hv__grid *grid;
} hv__algo_ctx_t;

/* A context over the ranks of mpi, carried by MPI point-to-point. */
hv_result_t hv__algo_ctx_init_mpi(hv__algo_ctx_t *ctx, const hv__algo_host_t *host, MPI_Comm mpi);
/* A context over a ready transport (in-process ranks): the MPI algorithm, and the
 * hierarchical allgather and broadcast, which call MPI's collectives, are not
 * available there. */
hv_result_t hv__algo_ctx_init(hv__algo_ctx_t *ctx, const hv__algo_host_t *host, const hv__transport_t *transport);
void hv__algo_ctx_free(hv__algo_ctx_t *ctx);
/* The pipelining chunk of the chunked algorithms (ring, Rabenseifner) on ctx, in bytes:
 * the host's net_chunk_bytes where ctx spans nodes and it is set, else
 * ring_chunk_bytes. */
size_t hv__chunk_bytes(const hv__algo_ctx_t *ctx);
/* Receive slots a chunked algorithm keeps posted for chunks of chunk_bytes: about
 * 4 MiB in flight, from 4 to 64 slots, so that small chunks (across TCP, below the MPI
 * library's eager limit) mostly find their receive posted instead of being copied
 * out of the library's unexpected-message buffers. */
size_t hv__recv_depth(size_t chunk_bytes);
/* Grow-only scratch space of at least bytes. */
hv_result_t hv__algo_scratch(hv__algo_ctx_t *ctx, size_t bytes, void **out);
hv_result_t hv__algo_reqs(hv__algo_ctx_t *ctx, size_t n, hv__request_t **out);

/* Simulated builds (sim_memory.c): with HV_SIM_SHARED_BYTES set, scratch of that
 * size or more is one buffer shared by all simulated ranks and reductions skip their
 * arithmetic (timing runs: values meaningless). Elsewhere: malloc, and 0. */
int hv__sim_timing_only(void);
void *hv__scratch_alloc(size_t bytes, int *shared);
void hv__scratch_free(void *p, int shared);

/* Ring phases over arbitrary (possibly uneven, possibly empty) segments: segment i is
 * elements [off[i], off[i+1]) of buf. Reduce-scatter leaves rank r with segment r
 * reduced over all ranks; allgather starts from rank r owning segment r and leaves
 * every rank with all segments. */
hv_result_t hv__ring_reduce_scatter(hv__algo_ctx_t *ctx, void *buf, const size_t *off,
                                    hv_dtype_t dtype, hv_op_t op);
hv_result_t hv__ring_allgather(hv__algo_ctx_t *ctx, void *buf, const size_t *off,
                               size_t elem_size);
/* Splits count elements into size near-equal segments (the first count % size get one
 * more) into ctx->seg_off. */
void hv__ring_even_segments(hv__algo_ctx_t *ctx, size_t count);

/* A non-blocking ring allreduce in place on buf over ctx's ranks (ring_nb.c), for a
 * caller with other work to do meanwhile: start it, call progress now and then (it
 * never blocks; *done = 1 when finished), and finish to wait for the rest (bounded by
 * HV_TIMEOUT). It uses ctx's scratch, requests and segment offsets, so nothing else
 * may run on ctx until it is finished. */
typedef struct hv__ring_nb {
  hv__algo_ctx_t *ctx;
  char *data, *scratch;
  size_t es;
  hv_dtype_t dtype;
  hv_op_t op;
  int phase; /* 0 reduce-scatter, 1 allgather, 2 done */
  int step;  /* within the phase; n-1: waiting for the phase's sends */
  int whole; /* two ranks: one exchange of the whole buffer */
  hv__request_t *recv, *sends;
  int nsend;
} hv__ring_nb_t;
hv_result_t hv__ring_nb_start(hv__ring_nb_t *nb, hv__algo_ctx_t *ctx, void *buf, size_t count,
                              hv_dtype_t dtype, hv_op_t op);
hv_result_t hv__ring_nb_progress(hv__ring_nb_t *nb, int *done);
hv_result_t hv__ring_nb_finish(hv__ring_nb_t *nb);

/* The hierarchical allgather(v) and broadcast (hier_other.c), and whether to use them
 * for a transfer of total_bytes: HV_HIERARCHICAL_ALLREDUCE=1 forces them when the job
 * spans nodes, 0 forbids them; auto when it spans nodes with several ranks each.
 * allgather: rank g's block is elements [off[g], off[g+1]) of buf (es bytes each). */
int hv__hier_other_wanted(const hv__algo_ctx_t *ctx, size_t total_bytes);
hv_result_t hv__broadcast_hier(hv__algo_ctx_t *ctx, void *buf, size_t bytes, int root);
hv_result_t hv__allgather_hier(hv__algo_ctx_t *ctx, void *buf, const size_t *off, size_t es);

typedef struct hv__allreduce_algo {
  hv__algo_t id;
  const char *name;
  /* In-place allreduce of buf (count elements). AVERAGE is reduced as SUM: the caller
   * divides while unpacking. */
  hv_result_t (*run)(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op);
} hv__allreduce_algo_t;

hv_result_t hv__allreduce_ring(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op);
hv_result_t hv__allreduce_rd(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op);
hv_result_t hv__allreduce_hier(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op);
hv_result_t hv__allreduce_shm(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op);
hv_result_t hv__allreduce_rab(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op);
hv_result_t hv__allreduce_2d(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op);
/* Frees the 2-D allreduce's row and column contexts (NULL: nothing). */
void hv__grid_free(struct hv__grid *grid);
/* The two levels of the hierarchical and 2-D allreduces (allreduce_hier.c): ring
 * reduce-scatter over inner, allreduce of my segment over outer (the algorithm of
 * hv__cross_allreduce_select), ring allgather over inner. */
hv_result_t hv__allreduce_two_level(hv__algo_ctx_t *inner, hv__algo_ctx_t *outer, void *buf, size_t count,
                                    hv_dtype_t dtype, hv_op_t op);
/* A fused allreduce's tensors where the caller keeps them: piece i is elements
 * [start, start + count) of the fused buffer, read from send and written to recv
 * (send == recv in place). Pieces are in order and adjacent: start[i + 1] =
 * start[i] + count[i]. */
typedef struct hv__piece {
  const char *send;
  char *recv;
  size_t start, count;
} hv__piece_t;
/* The last piece starting at or before element at (pieces are in order). */
size_t hv__piece_at(const hv__piece_t *p, size_t n, size_t at);
/* Whether hv__allreduce_shm_pieces can run on ctx: every rank on one node, with the
 * node's shared memory. */
int hv__allreduce_shm_usable(const hv__algo_ctx_t *ctx);
/* The shared-memory allreduce straight from the pieces' send buffers into their
 * receive buffers: the fusion buffer's packing and unpacking copies are not needed. */
hv_result_t hv__allreduce_shm_pieces(hv__algo_ctx_t *ctx, const hv__piece_t *pieces, size_t npieces,
                                     hv_dtype_t dtype, hv_op_t op);
/* The single-copy allreduce (allreduce_shm_cma.c): whether it takes a batch of
 * npieces pieces and bytes in all on ctx (the node allows cross-memory attach,
 * host->shm_cma and the measured sizes), and the allreduce itself (count elements in
 * all, more than 0). hv__allreduce_shm and hv__allreduce_shm_pieces call it. */
int hv__allreduce_shm_cma_wanted(const hv__algo_ctx_t *ctx, size_t npieces, size_t bytes);
hv_result_t hv__allreduce_shm_cma(hv__algo_ctx_t *ctx, const hv__piece_t *pieces, size_t npieces, size_t count,
                                  hv_dtype_t dtype, hv_op_t op);
/* Bitwise AND of `words` 64-bit words over the node's ranks through its shared memory
 * (shm_and.c: the engine's negotiation vector when the job is on one node), usable when
 * shm is set up and the words fit half the slots' tail. hosts: as hv__shm_wait_all's. */
int hv__shm_and_usable(const hv__shm_t *shm, size_t words);
hv_result_t hv__shm_and(hv__shm_t *shm, const uint64_t *in, uint64_t *out, size_t words, const char (*hosts)[64]);
/* The hierarchical allreduce with its node phases in shared memory (ctx->shm). */
hv_result_t hv__allreduce_hier_shm(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op);
hv_result_t hv__allreduce_mpi(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op);
/* The single-rounding allreduce of 16-bit floats (allreduce_1r.c): all-to-all of the
 * segments, float32 accumulation and one rounding by each segment's owner, ring
 * allgather. dtype HV_FLOAT16 or HV_BFLOAT16. */
hv_result_t hv__allreduce_1r(hv__algo_ctx_t *ctx, void *buf, size_t count, hv_dtype_t dtype, hv_op_t op);

/* The algorithm for this size: forced by HV_ALLREDUCE_ALGO, else by the decision
 * table (documented in allreduce_select.c); in either case the one that will really
 * run: shm without shared memory on one node is the ring, hier with it is hier_shm
 * (or shm on a single node), so that what the caller reports is what ran. */
const hv__allreduce_algo_t *hv__allreduce_select(const hv__algo_ctx_t *ctx, hv__algo_t forced,
                                                 size_t bytes);
/* The algorithm of a two-level allreduce's outer phase over cross for bytes per
 * rank: the host's cross_algo when it is ring, rd or rab, else (auto) rd when small
 * or between two ranks, ring otherwise. */
const hv__allreduce_algo_t *hv__cross_allreduce_select(const hv__algo_ctx_t *cross, size_t bytes);
/* Selects and runs; *ran (when not NULL) is the algorithm that ran. */
hv_result_t hv__allreduce_run(hv__algo_ctx_t *ctx, hv__algo_t forced, void *buf, size_t count,
                              hv_dtype_t dtype, hv_op_t op, const hv__allreduce_algo_t **ran);

/* The other collectives, each in its file. All in place over ctx's ranks. */
/* Broadcast (broadcast.c): bytes at buf from root; hierarchical across nodes when
 * hv__hier_other_wanted, else MPI's, in pieces an int can count. */
hv_result_t hv__broadcast(hv__algo_ctx_t *ctx, void *buf, size_t bytes, int root);
/* Allgather(v) (allgather.c): rank q's block is elements [off[q], off[q+1]) of buf
 * (es bytes each), each rank's own block already in place; hierarchical across nodes
 * when wanted, else the ring. */
hv_result_t hv__allgather(hv__algo_ctx_t *ctx, void *buf, const size_t *off, size_t es);
/* Reduce-scatter of equal blocks (reducescatter.c): buf holds `size` blocks of
 * `block` elements; afterwards block `rank` holds their reduction (AVERAGE as SUM). */
hv_result_t hv__reducescatter(hv__algo_ctx_t *ctx, void *buf, size_t block, hv_dtype_t dtype, hv_op_t op);
/* Alltoall (alltoall.c): block q (bytes) of send goes to rank q, block q of recv
 * comes from rank q; every pair exchanges directly. */
hv_result_t hv__alltoall(hv__algo_ctx_t *ctx, const void *send, void *recv, size_t bytes);
/* Alltoallv (alltoallv.c): bytes [send_off[q], send_off[q+1]) of send go to rank q,
 * bytes [recv_off[q], recv_off[q+1]) of recv come from rank q (size + 1 offsets each;
 * every pair must agree on its block's size). Empty blocks cost nothing: gather,
 * scatter and point-to-point are this with one peer's blocks only. */
hv_result_t hv__alltoallv(hv__algo_ctx_t *ctx, const void *send, const size_t *send_off, void *recv,
                          const size_t *recv_off);
/* Reduce to root (reduce_root.c), MPI's MPI_Ireduce: count elements of send (NULL or
 * recv on root: in place) reduced into recv on root (unused elsewhere); AVERAGE as SUM. */
hv_result_t hv__reduce_root(hv__algo_ctx_t *ctx, const void *send, void *recv, size_t count, hv_dtype_t dtype,
                            hv_op_t op, int root);

/* Polls MPI requests until they complete or the host's HV_TIMEOUT passes, asking
 * the host now and then whether a peer failed (wait_mpi.c); `what` names the
 * operation; may_sleep for waits on peers that may be idle (negotiation), not for
 * data. */
hv_result_t hv__wait_mpi(const hv__algo_host_t *host, int n, MPI_Request *reqs, const char *what, int may_sleep);
/* The same, and once the wait has lasted HV__WAIT_DESCRIBE_US, `describe` (when not
 * NULL) writes a longer `what` (e.g. naming the peer waited for) that the fault
 * polls and the timeout use from then on: a fast wait never pays for formatting. */
#define HV__WAIT_DESCRIBE_US 20000.0
hv_result_t hv__wait_mpi_described(const hv__algo_host_t *host, int n, MPI_Request *reqs, const char *what,
                                   int may_sleep, void (*describe)(void *arg, char *out, size_t len), void *arg);

/* MPI datatype / op for a dtype, including user-defined ones for float16/bfloat16. */
MPI_Datatype hv__mpi_datatype(hv_dtype_t dtype);
MPI_Op hv__mpi_op(hv_dtype_t dtype, hv_op_t op);

#endif
