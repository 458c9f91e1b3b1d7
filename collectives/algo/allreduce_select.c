/* allreduce_select.c: the table of allreduce algorithms and the choice among them.
 *
 * Decision table for HV_ALLREDUCE_ALGO=auto (measured with hvbench on one node and
 * on emulated nodes, and simulated on fat trees of 16 to 1,024 nodes: the README):
 *   one node with shared memory, any size      -> shm: flags instead of barriers;
 *                                                small buffers one flag wait, larger
 *                                                ones copied in and out once, from
 *                                                2 MiB a single copy through
 *                                                process_vm_readv/writev where the
 *                                                node allows it (allreduce_shm_cma.c)
 *                                                (2 ranks, --no-engine, medians of 3:
 *                                                1.09x MPI at 4 KiB, 1.1-2.6x up to
 *                                                16 MiB, 4.2-4.4x at 64-256 MiB; the
 *                                                ring over MPI 0.8-1.2x up to 16 MiB,
 *                                                recursive doubling 0.30x at 4 KiB;
 *                                                against Intel MPI: README)
 *   size <= HV_SMALL_ALLREDUCE_BYTES (64 KiB)  -> recursive doubling: log2(p) latency
 *   (with HV_LINK_GBITS: the crossover of       steps beat the ring's 2(p-1)
 *   rd_limit below, on one rank per node)
 *   larger, job on several nodes with several  -> hierarchical: only one reduced copy
 *   ranks each (same count per node)             per local slot crosses the network
 *   larger, two ranks                          -> ring: the same bytes as one exchange of
 *                                                the whole buffer (rd), pipelined with the
 *                                                reduction; across TCP in chunks below the
 *                                                eager limit (net_chunk.c), whose
 *                                                transfers in the two directions overlap
 *                                                (2 emulated nodes at 1 Gbit/s, --no-engine:
 *                                                16 MiB 143 ms against rd's 199, 64 MiB 601
 *                                                against 752; equal to 1 MiB). With 1 MiB
 *                                                rendezvous chunks they took turns, and rd
 *                                                was chosen here before
 *   larger, a power of two from 4 ranks        -> Rabenseifner's (rab): bandwidth-optimal
 *                                                like the ring with 2 log2(p) latencies
 *                                                instead of 2(p-1): at 1,024 nodes the
 *                                                ring pays 2,046 of them
 *   larger otherwise                           -> ring: bandwidth-optimal (rab would
 *                                                fold the extra ranks in with one more
 *                                                copy of the whole buffer)
 * HV_HIERARCHICAL_ALLREDUCE=1 forces hierarchical (above the small size), 0 forbids it.
 * A single rank needs no communication at all. The 2-D allreduce (2d) runs only when
 * forced.
 *
 * The outer phase of the two-level allreduces (hierarchical: across nodes; 2-D: down
 * a column) follows the same rule over its ranks (recursive doubling when its segment
 * is at most HV_SMALL_ALLREDUCE_BYTES), unless the host's cross_algo asks for ring, rd
 * or rab. */
#include <stdint.h>
#include <strings.h>

#include "algo.h"

static const char *const algo_names[HV__NUM_RAN] = {"auto", "ring", "rd", "mpi",      "hier",
                                                    "shm",  "rab",  "2d", "hier_shm", "1r"};

const char *hv__algo_name(hv__algo_t algo) {
  return (unsigned)algo < HV__NUM_RAN ? algo_names[algo] : "?";
}

int hv__algo_from_name(const char *name) {
  for (int i = 0; i < HV__NUM_ALGOS; i++)
    if (strcasecmp(name, algo_names[i]) == 0) return i;
  return -1;
}

static const hv__allreduce_algo_t algorithms[] = {
    {HV__ALGO_RING, "ring", hv__allreduce_ring},
    {HV__ALGO_RD, "rd", hv__allreduce_rd},
    {HV__ALGO_MPI, "mpi", hv__allreduce_mpi},
    {HV__ALGO_HIER, "hier", hv__allreduce_hier},
    {HV__ALGO_SHM, "shm", hv__allreduce_shm},
    {HV__ALGO_RAB, "rab", hv__allreduce_rab},
    {HV__ALGO_2D, "2d", hv__allreduce_2d},
    /* hv__allreduce_hier takes the shared-memory path itself when ctx->shm is set. */
    {HV__ALGO_HIER_SHM, "hier_shm", hv__allreduce_hier},
};

/* The table's entry for id (the ring for one not in it). */
static const hv__allreduce_algo_t *algo_of(hv__algo_t id) {
  for (size_t i = 0; i < sizeof algorithms / sizeof algorithms[0]; i++)
    if (algorithms[i].id == id) return &algorithms[i];
  return &algorithms[0];
}

/* A large buffer over n ranks with no hierarchy to use (flat, or one phase of a
 * two-level allreduce): Rabenseifner's for a power of two from 4 (2 log2 n latencies
 * against the ring's 2(n-1), the same bytes); the ring otherwise (two ranks: it is
 * Rabenseifner's), where Rabenseifner's folding would move the whole buffer once more. */
static hv__algo_t flat_large(int n) {
  if (n >= 4 && (n & (n - 1)) == 0) return HV__ALGO_RAB;
  return HV__ALGO_RING;
}

/* The largest buffer for which recursive doubling beats flat_large(n) over n ranks.
 * Without a link model (HV_LINK_GBITS), HV_SMALL_ALLREDUCE_BYTES. With one, the
 * alpha-beta crossover: rd costs L_rd (lat + S/B), L_rd = log2 p steps (p the largest
 * power of two <= n) plus 2 to fold the others in and out; rab and the ring cost
 * L lat + 2 (n-1)/n S/B with L = 2 log2 n and 2 (n-1). rd wins below
 * S* = lat B (L - L_rd) / (L_rd - 2 (n-1)/n). The crossover moves with the link: for
 * 128 ranks and 8 us it is 35 KB at 25 Gbit/s, 140 KB at 100 and 560 KB at 400, and
 * the simulated fat trees put it there (README, "hv at scale"), where one fixed 64 KiB
 * limit chose rd 1.53x too slow at 25 Gbit/s x 64 KiB and rab 1.14x too slow at
 * 400 Gbit/s x 256 KiB. */
static size_t rd_limit(const hv__algo_host_t *host, int n) {
  /* Two ranks: rd moves the same bytes with one latency, but as one message whose
   * reduction waits for all of it; the model has no term for the ring's pipelining,
   * so the measured fixed limit decides. */
  if (!(host->link_Bps > 0) || n <= 2) return host->small_allreduce_bytes;
  int log2p = 0;
  while ((2 << log2p) <= n) log2p++;
  const double rd_steps = log2p + ((1 << log2p) == n ? 0 : 2);
  const hv__algo_t large = flat_large(n);
  const double large_steps = large == HV__ALGO_RAB ? 2.0 * log2p : 2.0 * (n - 1);
  const double large_volume = 2.0 * (n - 1) / n; /* bytes moved per byte of buffer */
  if (rd_steps <= large_volume) return SIZE_MAX;  /* rd moves no more: it always wins */
  if (large_steps <= rd_steps) return 0;          /* fewer latencies and fewer bytes */
  const double s = host->link_latency_s * host->link_Bps * (large_steps - rd_steps) / (rd_steps - large_volume);
  return s >= (double)SIZE_MAX ? SIZE_MAX : (size_t)s;
}

const hv__allreduce_algo_t *hv__allreduce_select(const hv__algo_ctx_t *ctx, hv__algo_t forced,
                                                 size_t bytes) {
  hv__algo_t want = forced;
  if (want == HV__ALGO_AUTO) {
    int hier_possible = ctx->local && ctx->cross && ctx->uniform_nodes;
    int several_nodes = hier_possible && ctx->cross->transport.size > 1 && ctx->local->transport.size > 1;
    int one_node = hier_possible && ctx->cross->transport.size == 1;
    if (hv__allreduce_shm_usable(ctx)) want = HV__ALGO_SHM;
    /* The link model describes flat rounds across nodes: on one node, and across
     * nodes of several ranks (rd or hierarchical), the fixed limit decides. */
    else if (bytes <= (several_nodes || one_node ? ctx->host->small_allreduce_bytes
                                                  : rd_limit(ctx->host, ctx->transport.size)))
      want = HV__ALGO_RD;
    else if (hier_possible && (ctx->host->hierarchical == 1 || (ctx->host->hierarchical == -1 && several_nodes)))
      want = HV__ALGO_HIER;
    else want = flat_large(ctx->transport.size);
  }
  /* What will really run (the algorithms' own fall-backs, made visible). */
  if (want == HV__ALGO_SHM && !hv__allreduce_shm_usable(ctx)) want = HV__ALGO_RING;
  if (want == HV__ALGO_HIER && ctx->shm && ctx->local && ctx->cross && ctx->uniform_nodes)
    want = ctx->cross->transport.size == 1 ? HV__ALGO_SHM : HV__ALGO_HIER_SHM;
  return algo_of(want);
}

const hv__allreduce_algo_t *hv__cross_allreduce_select(const hv__algo_ctx_t *cross, size_t bytes) {
  hv__algo_t want = (hv__algo_t)cross->host->cross_algo;
  /* Only the flat algorithms: the others need a hierarchy the outer context lacks,
   * and 2d there would nest grids without end over a prime number of ranks. */
  if (want != HV__ALGO_RING && want != HV__ALGO_RD && want != HV__ALGO_RAB)
    want = bytes <= rd_limit(cross->host, cross->transport.size) ? HV__ALGO_RD : flat_large(cross->transport.size);
  return algo_of(want);
}

hv_result_t hv__allreduce_run(hv__algo_ctx_t *ctx, hv__algo_t forced, void *buf, size_t count,
                              hv_dtype_t dtype, hv_op_t op, const hv__allreduce_algo_t **ran) {
  const hv__allreduce_algo_t *algo = hv__allreduce_select(ctx, forced, count * hv_dtype_size(dtype));
  if (ran) *ran = algo;
  if (ctx->transport.size == 1) return HV_SUCCESS;
  return algo->run(ctx, buf, count, dtype, op);
}
