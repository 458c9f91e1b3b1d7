/* shm_region.c: set-up, mapping and barrier of the node's shared-memory region (see
 * shm_region.h). Local rank 0 creates the object with O_EXCL and mode 0600 under a
 * name made of the job's id, its own pid, a per-process counter and 64 random bits
 * (so another user can neither guess nor pre-create it), broadcasts the
 * name, everyone maps it, a barrier, then rank 0 unlinks it: the mapping lives on
 * until each process unmaps it or exits, the name does not. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "shm_region.h"

#include "reduce.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>


static atomic_uint region_counter;

char *hv__shm_slot(const hv__shm_t *shm, int local_rank) {
  return shm->slots + (size_t)local_rank * shm->slot_bytes;
}

void hv__shm_segment(const hv__shm_t *shm, size_t n, int q, size_t *start, size_t *len) {
  const size_t l = (size_t)shm->local_size, base = n / l, extra = n % l;
  *start = (size_t)q * base + ((size_t)q < extra ? (size_t)q : extra);
  *len = base + ((size_t)q < extra);
}

void hv__shm_line_segment(const hv__shm_t *shm, size_t n, int q, size_t es, size_t *start, size_t *len) {
  const size_t g = 64 / es, units = n / g, l = (size_t)shm->local_size, base = units / l, extra = units % l;
  const size_t uq = (size_t)q;
  *start = (uq * base + (uq < extra ? uq : extra)) * g;
  *len = (base + (uq < extra)) * g + (uq == l - 1 ? n % g : 0);
}

size_t hv__shm_tail_bytes(const hv__shm_t *shm) { return (shm->slot_bytes / 32) & ~(size_t)127; }

size_t hv__shm_half_bytes(const hv__shm_t *shm) {
  return ((shm->slot_bytes - hv__shm_tail_bytes(shm)) / 2) & ~(size_t)63;
}

/* Copies of 32 KiB and more go through 4 pages at once, 256 bytes from each in turn:
 * the hardware prefetcher follows each 4 KiB page on its own, so several streams keep
 * more lines in flight between the cores' caches (measured, two processes each copying
 * 128 KiB into its slot and then out of the other's: 6.5 and 7.1 us plain, 5.5 and
 * 5.5 us 8 pages at a time; at 16 KiB no gain). Reductions go the same way, a group of
 * pages at a time, small enough for dst to stay in L1 between the reductions with each
 * slot. In the allreduce (2 ranks, --no-engine) 4 pages beat 8: 256 KiB 29.6 against
 * 31.3 us, 64 KiB 8.2 against 8.8. */
#define GROUP_PAGES 4
#define GROUP_BYTES ((size_t)GROUP_PAGES * 4096)
#define PIECE_BYTES ((size_t)256)
/* Below this, one pass (measured: interleaving 16 KiB segments slowed 32 KiB on 2 ranks
 * from 7.2 to 9.1 us). */
#define INTERLEAVE_MIN_BYTES ((size_t)32 << 10)

void hv__shm_copy(char *dst, const char *src, size_t bytes) {
  size_t done = 0;
  if (bytes >= INTERLEAVE_MIN_BYTES)
    for (; done + GROUP_BYTES <= bytes; done += GROUP_BYTES)
      for (size_t o = 0; o < 4096; o += PIECE_BYTES)
        for (size_t page = 0; page < GROUP_PAGES; page++)
          memcpy(dst + done + page * 4096 + o, src + done + page * 4096 + o, PIECE_BYTES);
  if (done < bytes) memcpy(dst + done, src + done, bytes - done);
}

/* dst = a op b over n elements: a whole group page by page in turn, else in one go. */
static void reduce_group(char *dst, const char *a, const char *b, size_t n, hv_dtype_t dtype, hv_op_t op,
                         int interleave) {
  const size_t es = hv_dtype_size(dtype);
  if (!interleave || n * es != GROUP_BYTES) {
    hv__reduce_to(dst, a, b, n, dtype, op);
    return;
  }
  for (size_t o = 0; o < 4096; o += PIECE_BYTES)
    for (size_t page = 0; page < GROUP_PAGES; page++) {
      const size_t at = page * 4096 + o;
      hv__reduce_to(dst + at, a + at, b + at, PIECE_BYTES / es, dtype, op);
    }
}

hv_result_t hv__shm_reduce_segment(const hv__shm_t *shm, char *dst, const char *own, char *publish,
                                   size_t slot_offset, size_t count, hv_dtype_t dtype, hv_op_t op,
                                   const hv__shm_poke_t *poke) {
  const size_t es = hv_dtype_size(dtype), block = GROUP_BYTES / es;
  const int interleave = count * es >= INTERLEAVE_MIN_BYTES;
  size_t since_poke = 0;
  for (size_t done = 0; done < count; done += block) {
    const size_t n = count - done < block ? count - done : block, at = done * es;
    /* The first other slot is combined with own straight into dst: out of place, no
     * copy of own first. */
    const char *acc = own;
    for (int q = 0; q < shm->local_size; q++)
      if (q != shm->local_rank) {
        reduce_group(dst + at, acc + at, hv__shm_slot(shm, q) + slot_offset + at, n, dtype, op, interleave);
        acc = dst;
      }
    if (acc != dst && n) memcpy(dst + at, own + at, n * es); /* alone on the node */
    if (publish) hv__shm_copy(publish + at, dst + at, n * es);
    since_poke += n * es;
    if (poke && since_poke >= poke->every_bytes) {
      since_poke = 0;
      HV_CHECK(poke->fn(poke->arg));
    }
  }
  return HV_SUCCESS;
}

/* The header and the flags, before the slots (a multiple of 128 bytes). */
static size_t shm_head_bytes(int local_size) {
  return ((sizeof(hv__shm_header_t) + 127) & ~(size_t)127) + (size_t)local_size * sizeof(hv__shm_flag_t);
}

size_t hv__shm_region_bytes(int local_size, size_t slot_bytes) {
  if (local_size < 1 || local_size > (1 << 20) || slot_bytes > SIZE_MAX - 63) return 0;
  const size_t head = shm_head_bytes(local_size) + 64;
  const size_t slot = (slot_bytes + 63) & ~(size_t)63;
  if (slot > (SIZE_MAX - head) / (size_t)local_size) return 0;
  return head + (size_t)local_size * slot;
}

/* Whether more ranks share the node than this process may run on cores. */
static int shm_oversubscribed(int local_size) {
  cpu_set_t set;
  int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  /* Bound to a subset (one core per rank, say): the machine's count decides. */
  if (online > cores) cores = (int)online;
  return cores > 0 && local_size > cores;
}

/* The region's layout over memory every local rank sees at the same offsets. */
static void shm_lay_out(hv__shm_t *shm, void *memory) {
  shm->header = memory;
  shm->flags = (hv__shm_flag_t *)((char *)memory + ((sizeof(hv__shm_header_t) + 127) & ~(size_t)127));
  shm->slots = (char *)memory + shm_head_bytes(shm->local_size);
  shm->oversubscribed = shm_oversubscribed(shm->local_size);
}

void hv__shm_attach(hv__shm_t *shm, const hv__algo_host_t *host, void *memory, int local_rank, int local_size,
                    size_t slot_bytes) {
  memset(shm, 0, sizeof *shm);
  shm->host = host;
  shm->local_rank = local_rank;
  shm->local_size = local_size;
  shm->slot_bytes = (slot_bytes + 63) & ~(size_t)63;
  shm_lay_out(shm, memory);
  shm->borrowed = 1;
  hv__shm_cma_probe_self(shm, host->shm_cma != 0);
}

/* "12.0 MiB": a size for a person to read. */
static void shm_format_bytes(char *out, size_t len, double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) snprintf(out, len, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  else if (bytes >= 1024.0 * 1024) snprintf(out, len, "%.1f MiB", bytes / (1024.0 * 1024));
  else snprintf(out, len, "%.1f KiB", bytes / 1024.0);
}

/* Why local rank 0 could not make the region, with the sizes when /dev/shm is too
 * small (the common case: Docker gives containers 64 MiB). */
static void shm_explain(char *why, size_t len, const char *step, int err, const hv__shm_t *shm, size_t slot_bytes) {
  char need[32], slot[32], avail[32] = "?";
  shm_format_bytes(need, sizeof need, (double)shm->map_bytes);
  shm_format_bytes(slot, sizeof slot, (double)slot_bytes);
  struct statvfs fs;
  if (statvfs("/dev/shm", &fs) == 0) shm_format_bytes(avail, sizeof avail, (double)fs.f_bavail * (double)fs.f_frsize);
  if (err == ENOSPC || err == ENOMEM) {
    /* What /dev/shm would need in all: what others use now, and the region. */
    char total[32] = "?";
    if (statvfs("/dev/shm", &fs) == 0)
      shm_format_bytes(total, sizeof total,
                       (double)(fs.f_blocks - fs.f_bavail) * (double)fs.f_frsize + (double)shm->map_bytes);
    snprintf(why, len,
             "/dev/shm is too small: the node's region needs %s (%d local ranks x HV_SHM_SLOT_BYTES=%s), %s is free "
             "(%s it: %s), so /dev/shm needs at least %s in all",
             need, shm->local_size, slot, avail, step, strerror(err), total);
  }
  else
    snprintf(why, len, "%s a %s region (%d local ranks x HV_SHM_SLOT_BYTES=%s) in /dev/shm (%s free) failed: %s", step,
             need, shm->local_size, slot, avail, strerror(err));
}

hv_result_t hv__shm_create(hv__shm_t *shm, const hv__algo_host_t *host, MPI_Comm local, size_t slot_bytes,
                           char *why, size_t why_len) {
  memset(shm, 0, sizeof *shm);
  if (why_len) why[0] = '\0';
  shm->host = host;
  const hv__errors_t *errors = &host->errors;
  HV_MPI_CHECK(errors, MPI_Comm_rank(local, &shm->local_rank));
  HV_MPI_CHECK(errors, MPI_Comm_size(local, &shm->local_size));
  shm->map_bytes = hv__shm_region_bytes(shm->local_size, slot_bytes);
  if (shm->map_bytes == 0)
    return hv__fail(errors, HV_ERR_INVALID_ARGUMENT, "a shared-memory slot of %zu bytes x %d local ranks overflows size_t",
                    slot_bytes, shm->local_size);
  shm->slot_bytes = (slot_bytes + 63) & ~(size_t)63;
  char name[96] = {0};
  if (shm->local_rank == 0) {
    const char *job = getenv("SLURM_JOB_ID");
    if (!job) job = getenv("OMPI_MCA_ess_base_jobid");
    unsigned long long nonce = 0;
    if (getrandom(&nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce) nonce ^= (unsigned long long)time(NULL);
    snprintf(name, sizeof name, "/hv-%s-%ld-%u-%016llx", job ? job : "x", (long)getpid(),
             atomic_fetch_add(&region_counter, 1), nonce);
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600), err = 0;
    const char *step = "creating";
    if (fd < 0) err = errno;
    else if (ftruncate(fd, (off_t)shm->map_bytes) != 0) err = errno, step = "sizing";
    /* ftruncate alone only sets the size: tmpfs finds pages when they are first
     * touched, and when /dev/shm is full that touch is a SIGBUS in the middle of a
     * collective. Reserving every page now turns the shortage into ENOSPC here. */
    else if ((err = posix_fallocate(fd, 0, (off_t)shm->map_bytes)) != 0) step = "reserving";
    if (err) {
      shm_explain(why, why_len, step, err, shm, slot_bytes);
      if (fd >= 0) close(fd), shm_unlink(name);
      name[0] = '\0';
    } else {
      close(fd);
    }
  }
  HV_MPI_CHECK(errors, MPI_Bcast(name, sizeof name, MPI_CHAR, 0, local));
  if (!name[0]) return HV_ERR_UNSUPPORTED; /* every local rank returns here alike */
  void *map = MAP_FAILED;
  int fd = shm_open(name, O_RDWR, 0600), err = 0;
  if (fd >= 0) {
    map = mmap(NULL, shm->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) err = errno;
    close(fd);
  } else {
    err = errno;
  }
  /* Every local rank must take the same path, or the node deadlocks (some in a
   * shared-memory barrier, some in MPI): the lowest failing rank, if any, tells its
   * errno to all (rank 0 words the warning). */
  struct { int ok, rank; } mine = {err == 0, shm->local_rank}, first;
  HV_MPI_CHECK(errors, MPI_Allreduce(&mine, &first, 1, MPI_2INT, MPI_MINLOC, local));
  const int all_ok = first.ok;
  if (!all_ok) {
    HV_MPI_CHECK(errors, MPI_Bcast(&err, 1, MPI_INT, first.rank, local));
    if (shm->local_rank == 0)
      snprintf(why, why_len, "local rank %d could not map the %zu-byte region: %s", first.rank, shm->map_bytes,
               strerror(err));
  }
  if (shm->local_rank == 0) shm_unlink(name); /* everyone has it mapped (or gave up) */
  if (!all_ok) {
    if (map != MAP_FAILED) munmap(map, shm->map_bytes);
    return HV_ERR_UNSUPPORTED;
  }
  shm_lay_out(shm, map);
  shm->my_sense = 0;
  return hv__shm_cma_probe(shm, host, local, host->shm_cma != 0, shm->cma_off, sizeof shm->cma_off);
}

void hv__shm_destroy(hv__shm_t *shm) {
  if (shm->header && !shm->borrowed) munmap(shm->header, shm->map_bytes);
  memset(shm, 0, sizeof *shm);
}

/* A spinning wait on a peer's store: the fault polls and HV_TIMEOUT every 256 spins
 * (a local rank killed mid-wait never stores: fault.c sees its pid gone, or stopped,
 * and names it), and the core given away once the wait is long, or at once when the
 * node is oversubscribed (the awaited rank may be waiting for this core). A wait that
 * may sleep (for peers that may be idle: the engine's negotiation) sleeps after 1 ms
 * (50 us without a spare core, host->spin_ok 0), 2 us growing to 50 us, as
 * hv__wait_mpi does. */
typedef struct shm_spin {
  unsigned iter;
  int sleeping;
  long sleep_ns;
  double start;
  hv__wait_watch_t watch;
} shm_spin_t;

static hv_result_t shm_spin(hv__shm_t *shm, shm_spin_t *spin, const char *what, int may_sleep) {
  if (shm->oversubscribed && (spin->iter & 15) == 15) sched_yield();
  if ((++spin->iter & 255) != 0 && !spin->sleeping) return HV_SUCCESS;
  if (spin->iter == 256) {
    spin->start = hv__now_us();
    return HV_SUCCESS;
  }
  double waited = hv__now_us() - spin->start;
  HV_CHECK(hv__algo_host_poll(shm->host, &spin->watch, waited, what));
  if (shm->host->timeout_s > 0 && waited > shm->host->timeout_s * 1e6) return hv__algo_host_timeout(shm->host, what);
  if (may_sleep && waited > (shm->host->spin_ok ? 1000 : 50)) {
    if (!spin->sleeping) spin->sleeping = 1, spin->sleep_ns = 2000;
    struct timespec ts = {0, spin->sleep_ns};
    nanosleep(&ts, NULL);
    if (spin->sleep_ns < 50000) spin->sleep_ns *= 2;
  } else if (waited > 50) {
    sched_yield();
  }
  return HV_SUCCESS;
}

hv_result_t hv__shm_barrier(hv__shm_t *shm) {
  unsigned sense = shm->my_sense ^ 1u;
  shm->my_sense = sense;
  if (atomic_fetch_add_explicit(&shm->header->arrived, 1, memory_order_acq_rel) + 1 == (unsigned)shm->local_size) {
    atomic_store_explicit(&shm->header->arrived, 0, memory_order_relaxed);
    atomic_store_explicit(&shm->header->sense, sense, memory_order_release);
    return HV_SUCCESS;
  }
  shm_spin_t spin = {0};
  while (atomic_load_explicit(&shm->header->sense, memory_order_acquire) != sense)
    HV_CHECK(shm_spin(shm, &spin, "a shared-memory barrier of the node", 0));
  return HV_SUCCESS;
}

hv_result_t hv__shm_settle(hv__shm_t *shm) {
  if (!shm->flags_pending) return HV_SUCCESS;
  shm->flags_pending = 0;
  return hv__shm_barrier(shm);
}

void hv__shm_post(hv__shm_t *shm, unsigned long step) {
  atomic_store_explicit(&shm->flags[shm->local_rank].step, step, memory_order_release);
}

void hv__shm_post_and(hv__shm_t *shm, unsigned long step) {
  atomic_store_explicit(&shm->flags[shm->local_rank].and_step, step, memory_order_release);
}

hv_result_t hv__shm_wait_all(hv__shm_t *shm, unsigned long step, int and_flags, const char (*hosts)[64]) {
  shm_spin_t spin = {0};
  /* The description is a constant until a long wait names the rank: formatting it on
   * every call cost a quarter of a 16 KiB allreduce (perf). */
  char named_what[192];
  const char *what = and_flags ? "negotiation in the node's shared memory" : "a shared-memory flag of a node peer";
  const int may_sleep = and_flags;
  for (int q = 0; q < shm->local_size; q++) {
    int named = 0;
    atomic_ulong *flag = and_flags ? &shm->flags[q].and_step : &shm->flags[q].step;
    if (q != shm->local_rank)
      while (atomic_load_explicit(flag, memory_order_acquire) < step) {
        /* Once the wait is long (20 ms, as hv__wait_mpi_described), name the rank
         * waited for: a stopped or lost peer shows there. */
        if (hosts && !named && spin.iter > 256 && (spin.sleeping || (spin.iter & 255) == 255) &&
            hv__now_us() - spin.start > 20000.0) {
          snprintf(named_what, sizeof named_what, "negotiation with rank %d on host %s", q, hosts[q]);
          what = named_what;
          named = 1;
        }
        HV_CHECK(shm_spin(shm, &spin, what, may_sleep));
      }
  }
  return HV_SUCCESS;
}
