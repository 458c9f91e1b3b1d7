/* svm_journal.h: mnist_svm's journal of finished grid units (unit_journal.h), so that
 * a job relaunched by hvrun --restarts (HV_RESTART > 0) or rerun with --resume keeps the
 * (grid point, fold) units already computed and computes only the rest.
 *
 * Every rank appends its own units to <results>/journal/attempt-<a>-rank-<r>.txt as
 * they finish: "unit <u> <errors> <cpu seconds> <crc32>". On a resume every rank reads
 * the journal files it can see; one hv allreduce (max) picks one holder per kept unit,
 * which alone puts the unit's numbers into its tables, so the usual sum-gather after
 * the search stays exact. The configuration line names the data (a hash of the centred
 * training set) and every flag that changes a unit's result. */
#ifndef HV_SVM_JOURNAL_H
#define HV_SVM_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "hv.h"
#include "svm_args.h"
#include "svm_data.h"
#include "unit_journal.h"

typedef struct svm_journal {
  unit_journal_t j;
  int writing;            /* this rank's journal file is open */
  int attempt;            /* HV_RESTART (0 when unset) */
  int resume;             /* HV_RESTART > 0 or --resume */
  int rank, nu;
  int damaged;            /* damaged records seen by this rank */
  int crash_after, done;  /* test hook (HV_SVM_CRASH_AFTER_UNITS) */
  char *have;             /* (nu) read from the journal by this rank */
  int32_t *errors;        /* (nu) the caller's tables the journal fills */
  double *unit_cpu;
  char config[1024];
} svm_journal_t;

/* Local, before the ranks agree on the input: on a fresh run removes the old journal of
 * the results folder; on a resume reads it into errors / unit_cpu (nu units). 0, or -1
 * with a message (a journal of another configuration, an unreadable file). */
int svm_journal_load(svm_journal_t *s, const svm_args_t *a, const svm_set_t *tr, int rank,
                     int nu, int32_t *errors, double *unit_cpu, char *err, size_t errlen);

/* Collective: picks one holder per kept unit (the others zero their copy), sets kept[u],
 * opens this rank's journal file and, on rank 0, prints how many units were kept.
 * Returns the number of kept units, or -1 on an hv error (message in err). */
int svm_journal_combine(svm_journal_t *s, hv_comm_t *comm, const char *results, char *kept,
                        char *err, size_t errlen);

/* cv_opts_t's unit_done: journals unit u (ctx: the svm_journal_t). */
void svm_journal_unit(void *ctx, int u, int32_t errors, double cpu_s);

void svm_journal_close(svm_journal_t *s);

#endif /* HV_SVM_JOURNAL_H */
