/* checks.h: what every file of collectives/ uses to fail and to log: an error sink
 * (who records an error's detail), the CHECK macros, leveled logging with the rank,
 * and the clocks. It knows nothing of the engine: the algorithms report through the
 * sink their caller gives them (NCCL's checks.h is the model). */
#ifndef HV_CHECKS_H
#define HV_CHECKS_H

#include <stddef.h>

#include "hv.h"

/* Where an error's detail goes: the engine's sink stores it as the communicator's
 * last error (hv_comm_last_error); a test's may print it. record may be NULL. */
typedef struct hv__errors {
  void (*record)(void *owner, const char *detail);
  void *owner;
  int rank; /* this rank in the job, named in MPI failures */
} hv__errors_t;

/* Formats the detail, hands it to errors (NULL: only logged) and logs it at debug
 * level; returns code so callers can `return hv__fail(...)`. */
hv_result_t hv__fail(const hv__errors_t *errors, hv_result_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An MPI error code as HV_ERR_MPI with MPI's message and file:line. */
hv_result_t hv__fail_mpi(const hv__errors_t *errors, int mpi_code, const char *what, const char *file, int line);

#define HV_CHECK(call)                       \
  do {                                       \
    hv_result_t hv_rc_ = (call);             \
    if (hv_rc_ != HV_SUCCESS) return hv_rc_; \
  } while (0)
#define HV_MPI_CHECK(errors, call)                                           \
  do {                                                                       \
    int hv_mpi_rc_ = (call);                                                 \
    if (hv_mpi_rc_ != 0 /* MPI_SUCCESS */)                                   \
      return hv__fail_mpi((errors), hv_mpi_rc_, #call, __FILE__, __LINE__);  \
  } while (0)

/* ---- logging (HV_LOG_LEVEL), one line per call, prefixed with the rank ---- */
typedef enum { HV__LOG_TRACE, HV__LOG_DEBUG, HV__LOG_INFO, HV__LOG_WARNING, HV__LOG_ERROR, HV__LOG_OFF } hv__log_level_t;
extern int hv__log_level;
extern int hv__log_rank;
void hv__log(int level, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define HV_LOG(level, ...)                                                           \
  do {                                                                               \
    if ((level) >= hv__log_level) hv__log((level), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

char *hv__strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double hv__now_us(void);
double hv__coarse_now_us(void); /* CLOCK_MONOTONIC at tick resolution, cheaper */

#endif
