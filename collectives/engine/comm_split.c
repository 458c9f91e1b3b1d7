/* comm_split.c: sub-communicators: hv_comm_split (MPI_Comm_split's colour and key)
 * and hv_comm_create_group (Horovod's process sets, c10d's new_group: the listed
 * ranks, in list order). Each sub-communicator is a whole hv communicator made by
 * hv_init_from_mpi over the MPI split: its own background thread, names,
 * negotiation, response cache, shared memory and flight recorder, so its traffic and
 * names never meet the parent's, and it is freed by hv_shutdown.
 *
 * Both are collective over the parent. The arguments are first exchanged (one
 * allgather on the parent's user-thread communicator, never the one its background
 * thread negotiates on), so that a colour out of range or process-set lists that
 * differ fail on every rank with the same line naming the ranks, instead of leaving
 * the others waiting in MPI_Comm_split. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv_internal.h"
#include "hv_mpi.h"

/* What each rank passes, exchanged before anything is created. */
typedef struct split_args {
  int color, key;
  uint64_t list_hash; /* hv_comm_create_group: its list (else 0) */
  int list_len;
  int pad;
} split_args_t;

static uint64_t hash_ranks(const int *ranks, int n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a over the values, in order */
  for (int i = 0; i < n; i++) {
    uint64_t v = (uint64_t)(uint32_t)ranks[i];
    for (int b = 0; b < 4; b++) h = (h ^ ((v >> (8 * b)) & 0xffu)) * 1099511628211ull;
  }
  return h;
}

/* Every rank's arguments; on a disagreement or a bad colour, the same error on every
 * rank. group: called from hv_comm_create_group (lists must agree, colours are
 * derived). */
static hv_result_t exchange_and_check(hv_comm_t *comm, const split_args_t *mine, int group, const char *what) {
  hv__algo_ctx_t *ctx;
  HV_CHECK(hv__comm_bench_ctx(comm, &ctx)); /* its communicator is this thread's: comm->bench_mpi */
  split_args_t *all = calloc((size_t)comm->size, sizeof *all);
  if (!all) return hv__set_error(comm, HV_ERR_NO_MEMORY, "%s: the ranks' arguments", what);
  int mrc = MPI_Allgather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, comm->bench_mpi);
  if (mrc != MPI_SUCCESS) {
    free(all);
    return hv__set_error(comm, HV_ERR_MPI, "%s: exchanging the ranks' arguments failed (MPI error %d)", what, mrc);
  }
  hv_result_t rc = HV_SUCCESS;
  for (int q = 0; q < comm->size && rc == HV_SUCCESS; q++) {
    if (group) {
      if (all[q].list_len < 0)
        rc = hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "%s: rank %d passed a list that is not valid (its error says why)",
                           what, q);
      else if (all[q].list_len != all[0].list_len || all[q].list_hash != all[0].list_hash)
        rc = hv__set_error(comm, HV_ERR_MISMATCH,
                           "%s: ranks passed different process sets: rank 0 listed %d ranks, rank %d listed %d%s "
                           "(every rank of the parent must pass the same list, in the same order)",
                           what, all[0].list_len, q, all[q].list_len,
                           all[q].list_len == all[0].list_len ? " other ones" : "");
    } else if (all[q].color < 0 && all[q].color != HV_COLOR_NONE) {
      rc = hv__set_error(comm, HV_ERR_INVALID_ARGUMENT,
                         "%s: rank %d passed colour %d: a colour is >= 0, or HV_COLOR_NONE for no sub-communicator",
                         what, q, all[q].color);
    }
  }
  free(all);
  return rc;
}

/* The MPI split of the parent's user-thread communicator, made an hv communicator
 * (NULL where color is HV_COLOR_NONE). hv_init_from_mpi duplicates it: ours is freed. */
static hv_result_t make_sub(hv_comm_t *comm, int color, int key, hv_comm_t **sub, const char *what) {
  MPI_Comm split = MPI_COMM_NULL;
  int mrc = MPI_Comm_split(comm->bench_mpi, color == HV_COLOR_NONE ? MPI_UNDEFINED : color, key, &split);
  if (mrc != MPI_SUCCESS) return hv__set_error(comm, HV_ERR_MPI, "%s: MPI_Comm_split failed (MPI error %d)", what, mrc);
  if (split == MPI_COMM_NULL) return HV_SUCCESS;
  hv_result_t rc = hv_init_from_mpi(split, sub);
  if (rc != HV_SUCCESS) hv__set_error(comm, rc, "%s: %s", what, hv_comm_last_error(NULL));
  MPI_Comm_free(&split);
  return rc;
}

hv_result_t hv_comm_split(hv_comm_t *comm, int color, int key, hv_comm_t **sub) {
  if (!comm || !sub) return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_comm_split: comm and sub must not be NULL");
  *sub = NULL;
  split_args_t mine = {color, key, 0, 0, 0};
  HV_CHECK(exchange_and_check(comm, &mine, 0, "hv_comm_split"));
  return make_sub(comm, color, key, sub, "hv_comm_split");
}

hv_result_t hv_comm_create_group(hv_comm_t *comm, const int *ranks, int n, hv_comm_t **sub) {
  if (!comm || !sub) return hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_comm_create_group: comm and sub must not be NULL");
  *sub = NULL;
  /* A bad list is still taken to the exchange (as length -1), so that every rank
   * fails, not only the one that passed it. */
  split_args_t mine = {0, 0, 0, n, 0};
  int member = -1;
  char why[200] = "";
  if (n < 1 || !ranks) {
    snprintf(why, sizeof why, "the list is empty (n=%d)", n);
  } else {
    for (int i = 0; i < n && !why[0]; i++) {
      if (ranks[i] < 0 || ranks[i] >= comm->size)
        snprintf(why, sizeof why, "ranks[%d]=%d is not a rank of the communicator (size %d)", i, ranks[i], comm->size);
      for (int j = 0; j < i && !why[0]; j++)
        if (ranks[j] == ranks[i]) snprintf(why, sizeof why, "rank %d is listed twice (ranks[%d] and ranks[%d])", ranks[i], j, i);
      if (ranks[i] == comm->rank) member = i;
    }
  }
  if (why[0]) {
    hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_comm_create_group: %s", why);
    mine.list_len = -1;
  } else {
    mine.list_hash = hash_ranks(ranks, n);
  }
  hv_result_t rc = exchange_and_check(comm, &mine, 1, "hv_comm_create_group");
  if (rc != HV_SUCCESS || why[0]) {
    if (why[0]) hv__set_error(comm, HV_ERR_INVALID_ARGUMENT, "hv_comm_create_group: %s", why); /* this rank's own cause */
    return rc != HV_SUCCESS ? rc : HV_ERR_INVALID_ARGUMENT;
  }
  /* The set's ranks are numbered in list order, as Horovod's and c10d's. */
  return make_sub(comm, member >= 0 ? 0 : HV_COLOR_NONE, member, sub, "hv_comm_create_group");
}
