/* hv_mpi.h: hv entry points that take MPI types, kept out of hv.h so a CPU-only
 * trainer needs no mpi.h. */
#ifndef HV_MPI_H
#define HV_MPI_H

#include <mpi.h>

#include "hv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Initialises hv over the ranks of an existing communicator (MPI must be initialised,
 * ideally with MPI_THREAD_MULTIPLE; with less, the program must not call MPI while hv
 * collectives are pending). hv duplicates mpi_comm, so its traffic never matches the
 * caller's; hv_shutdown() frees the duplicate and never finalises MPI. Collective
 * over mpi_comm. */
HV_API hv_result_t hv_init_from_mpi(MPI_Comm mpi_comm, hv_comm_t **comm);

#ifdef __cplusplus
}
#endif
#endif /* HV_MPI_H */
