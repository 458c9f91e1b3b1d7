/* nn_journal.h: mnist_nn's journal of finished bootstraps (unit_journal.h), so that a
 * job relaunched by hvrun --restarts (HV_RESTART > 0) or rerun with --resume keeps the
 * bootstraps already computed and hands out only the rest.
 *
 * The rank that finishes a bootstrap appends its whole contribution to the outputs to
 * <results>/journal/attempt-<a>-rank-<r>.txt: the drawn settings and their CV errors,
 * the chosen setting, epochs, rank, train and test error, seconds, and the test and
 * plotted images' probabilities, doubles with 17 and floats with 9 significant digits
 * (they read back bit for bit). On a resume every rank reads the files it can see; one
 * hv allreduce (max) picks one holder per kept bootstrap, which alone keeps its rows in
 * the per-bootstrap tables, so main.c's sum-gathers stay exact. The configuration line
 * names the data (a hash of the training and test images, the OOD image) and every flag
 * that changes a bootstrap's result. */
#ifndef HV_NN_JOURNAL_H
#define HV_NN_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "hv.h"
#include "nn_args.h"
#include "nn_boot.h"
#include "unit_journal.h"

/* The per-bootstrap tables of main.c that a record fills (rows of bootstrap b). */
typedef struct nn_journal_tabs {
  nn_hparams_t *settings;  /* (nb, nt) */
  double *cv_err;          /* (nb, nt) */
  int32_t *itab;           /* (nb, 4): best, epochs, rank, failed */
  double *dtab;            /* (nb, 3): train error, test error, seconds */
  float *test_prob;        /* (nb, n_test, 10) */
  float *extra_prob;       /* (nb, n_extra, 10) */
} nn_journal_tabs_t;

typedef struct nn_journal {
  unit_journal_t j;
  int writing;            /* this rank's journal file is open */
  int attempt;            /* HV_RESTART (0 when unset) */
  int resume;             /* HV_RESTART > 0 or --resume */
  int rank, nb, nt, n_test, n_extra;
  int damaged;
  int crash_after, done;  /* test hook (HV_NN_CRASH_AFTER_BOOTSTRAPS) */
  char *have;             /* (nb) read from the journal by this rank */
  nn_journal_tabs_t t;
  char config[2048];
} nn_journal_t;

/* Local, before the ranks agree on the input: on a fresh run removes the old journal of
 * the results folder; on a resume reads it into the tables. train/test: the images as
 * used; ood: the 28x28 OOD image. 0, or -1 with a message (a journal of another
 * configuration, an unreadable file). */
int nn_journal_load(nn_journal_t *s, const nn_args_t *a, const nn_images_t *train,
                    const nn_images_t *test, const uint8_t *ood, int n_extra, int rank,
                    const nn_journal_tabs_t *tabs, char *err, size_t errlen);

/* Collective: one holder per kept bootstrap (the others zero their rows), todo gets the
 * bootstraps left to compute in increasing order; opens this rank's journal file and,
 * on rank 0, prints how many bootstraps were kept. Returns the number left (the length
 * of todo), or -1 on an hv error (message in err). */
int nn_journal_combine(nn_journal_t *s, hv_comm_t *comm, const char *results, int *todo,
                       char *err, size_t errlen);

/* Journals finished bootstrap b (its rows of the tables, filled). */
void nn_journal_add(nn_journal_t *s, int b);

void nn_journal_close(nn_journal_t *s);

#endif /* HV_NN_JOURNAL_H */
