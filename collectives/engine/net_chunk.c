/* net_chunk.c: the default pipelining chunk of the chunked algorithms (ring,
 * Rabenseifner) on contexts that span nodes (HV_NET_CHUNK_BYTES=auto).
 *
 * Over TCP, a message above the MPI library's eager limit is a rendezvous: its
 * receiver answers a request-to-send before the data follows. When both directions
 * of a link are busy, as in every allreduce step, that answer queues behind the
 * receiver's own outgoing data (the same socket, and the NIC's queue), and the
 * sender's pipe runs dry once per chunk: on 2 emulated nodes at 100 Mbit/s an 11 MB
 * ring allreduce took 1.38-1.44 s with 1 MiB chunks and 1.00 s with 60 KiB ones (the
 * link's one-way time is 0.92 s; MPI_Sendrecv of the whole 11 MB, 0.95 s). Chunks
 * below the eager limit need no answer, so hv cuts its messages there when the
 * network is sockets: no RDMA device on this node (/sys/class/infiniband empty), the
 * case where Open MPI's TCP BTL carries the traffic between nodes. With RDMA (UCX,
 * openib) the handshake does not wait behind data and large chunks stay cheaper, so
 * auto keeps HV_RING_CHUNK_BYTES there. The eager limit is Open MPI's
 * btl_tcp_eager_limit, read through the MPI tool interface (64 KiB when it cannot be
 * read), less 1 KiB for the library's headers. Simulated builds (SimGrid) keep
 * HV_RING_CHUNK_BYTES: the simulator models no sockets. */
#include <dirent.h>
#include <mpi.h>
#include <string.h>

#include "hv_internal.h"

#if !HV_SIMULATED
static int node_has_rdma(void) {
  DIR *d = opendir("/sys/class/infiniband");
  if (!d) return 0;
  int found = 0;
  for (struct dirent *e; !found && (e = readdir(d));) found = e->d_name[0] != '.';
  closedir(d);
  return found;
}

/* Open MPI's btl_tcp_eager_limit in bytes, or 0 when the tool interface does not
 * have it (another MPI, or the TCP BTL not built). */
static size_t tcp_eager_limit(void) {
  /* At the MPI library's own level: Open MPI 4.1 records the level given here as the
   * library's, and a later MPI_Query_thread would report it. */
  int level, provided, idx, count, verbosity, bind, scope;
  if (MPI_Query_thread(&level) != MPI_SUCCESS || MPI_T_init_thread(level, &provided) != MPI_SUCCESS) return 0;
  size_t limit = 0;
  MPI_Datatype type;
  MPI_T_enum enumtype;
  char name[256], desc[16];
  int name_len = sizeof name, desc_len = sizeof desc;
  MPI_T_cvar_handle h;
  if (MPI_T_cvar_get_index("btl_tcp_eager_limit", &idx) == MPI_SUCCESS &&
      MPI_T_cvar_get_info(idx, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len, &bind, &scope) ==
          MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) == MPI_SUCCESS) {
    union { unsigned u; unsigned long long ull; char bytes[32]; } v;
    memset(&v, 0, sizeof v);
    if (count == 1 && MPI_T_cvar_read(h, &v) == MPI_SUCCESS) {
      if (type == MPI_INT || type == MPI_UNSIGNED) limit = v.u;
      else if (type == MPI_UNSIGNED_LONG || type == MPI_LONG || type == MPI_UNSIGNED_LONG_LONG ||
               type == MPI_LONG_LONG)
        limit = (size_t)v.ull;
    }
    MPI_T_cvar_handle_free(&h);
  }
  MPI_T_finalize();
  return limit;
}
#endif

size_t hv__net_chunk_auto(void) {
#if HV_SIMULATED
  return 0;
#else
  if (node_has_rdma()) return 0;
  size_t eager = tcp_eager_limit();
  if (eager < (8u << 10) || eager > (64u << 20)) eager = 64u << 10;
  return eager - 1024;
#endif
}
