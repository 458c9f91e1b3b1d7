/* atomic_file.h: replace a file by rename, through a temporary file that is owner-only
 * and unpredictably named ("<dir>/.<name>.XXXXXX", mkstemp), so a crash leaves the old
 * file or the new one, never half of one, and no other user can read (or pre-create) the
 * data while it is written. On commit the file gets the mode a plain fopen would have
 * given it (0666 less the umask), is flushed (and fsync'ed when asked), then renamed. */
#ifndef HV_TRAINER_ATOMIC_FILE_H
#define HV_TRAINER_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct atomic_file {
  FILE *f;            /* write here */
  char tmp[4200];     /* the temporary file's path */
  char path[4200];    /* the final path */
} atomic_file_t;

/* 0, or -1 with a message naming path. */
int atomic_file_open(atomic_file_t *af, const char *path, char *err, size_t errlen);

/* Closes and renames over path (fsync first when durable is non-zero). On any error the
 * temporary file is removed. 0, or -1 with a message. */
int atomic_file_commit(atomic_file_t *af, int durable, char *err, size_t errlen);

/* Closes and removes the temporary file (after a failure of the caller's own). */
void atomic_file_abort(atomic_file_t *af);

#endif /* HV_TRAINER_ATOMIC_FILE_H */
