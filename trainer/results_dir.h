/* results_dir.h: the results folder of a workload (--results DIR): created with its
 * parents, and its files opened and closed with errors that name the path, so every
 * workload reports a bad folder the same way. */
#ifndef HV_TRAINER_RESULTS_DIR_H
#define HV_TRAINER_RESULTS_DIR_H

#include <stddef.h>
#include <stdio.h>

/* mkdir -p DIR; 0, or -1 with a message naming the part that failed. */
int results_make_dir(const char *dir, char *err, size_t errlen);
/* Opens DIR/NAME for writing; NULL with a message on failure. */
FILE *results_open(const char *dir, const char *name, char *err, size_t errlen);
/* Closes a file from results_open, reporting write errors (a full disk shows here). */
int results_close(FILE *f, const char *dir, const char *name, char *err, size_t errlen);

#endif /* HV_TRAINER_RESULTS_DIR_H */
