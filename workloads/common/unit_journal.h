/* unit_journal.h: a journal of finished work units (mnist_svm's grid units, mnist_nn's
 * bootstraps), so that a job relaunched after a lost rank or node (hvrun --restarts,
 * HV_RESTART > 0) or rerun with --resume keeps what was finished and computes only the
 * rest.
 *
 * The journal is the folder <results>/journal/, one text file per (attempt, rank) (and a
 * new one each time a run with that attempt and rank is resumed), each written by that
 * rank alone:
 *
 *   hv-journal 1 <configuration>\n
 *   unit <index> <payload> <crc32>\n
 *   ...
 *
 * The configuration is one line naming everything that determines a unit's result
 * (flags and a hash of the data); a journal of another configuration is refused, never
 * mixed in. Each record is one write() of one whole line, with the CRC-32 (8 hex
 * digits) of everything before its last space, followed by fdatasync: a kill leaves the
 * records before it intact and at most one truncated last line, which the reader names
 * and ignores (its unit is computed again), as it does a record whose checksum or
 * payload is wrong. No MPI here: the workloads combine what each rank read. */
#ifndef WORKLOAD_UNIT_JOURNAL_H
#define WORKLOAD_UNIT_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

typedef struct unit_journal {
  int fd;                /* -1: closed */
  char path[4400];
  char *buf;             /* the record being built */
  size_t len, cap;
  int oom;               /* building the record ran out of memory */
} unit_journal_t;

/* FNV-1a 64 of n bytes, continuing from h (start with UNIT_JOURNAL_HASH_INIT): the
 * data's fingerprint in the configuration line. */
#define UNIT_JOURNAL_HASH_INIT 0xcbf29ce484222325ULL
uint64_t unit_journal_hash(uint64_t h, const void *data, size_t n);

/* CRC-32 (IEEE) of n bytes. */
uint32_t unit_journal_crc32(const void *data, size_t n);

/* The journal folder of a results folder: <results>/journal. */
void unit_journal_dir(const char *results, char *out, size_t len);

/* Removes every journal file of <results>/journal (a fresh run starts a new journal).
 * 0, or -1 with a message. */
int unit_journal_clear(const char *results, char *err, size_t errlen);

/* Creates <results>/journal (and its parents) and this writer's file with its header
 * line: attempt-<attempt>-rank-<rank>.txt, or .<k>.txt before .txt when that exists.
 * 0, or -1 with a message. */
int unit_journal_open(unit_journal_t *j, const char *results, int attempt, int rank,
                      const char *config, char *err, size_t errlen);

/* Builds a record: begin, then any number of add (printf-style, appended to the
 * payload; no newline allowed), then commit, which writes the line in one write() and
 * syncs it. commit returns 0, or -1 with a message. */
void unit_journal_begin(unit_journal_t *j, int unit);
void unit_journal_add(unit_journal_t *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int unit_journal_commit(unit_journal_t *j, char *err, size_t errlen);

void unit_journal_close(unit_journal_t *j);

/* Called for each intact record: payload is the text between the unit index and the
 * checksum (the callee may modify it). Returns 0 to keep the record, -1 when the
 * payload does not parse or the unit is out of range (then counted as damaged). */
typedef int (*unit_journal_record_fn)(void *ctx, int unit, char *payload);
/* One line naming a damaged record or file, for the caller to print. */
typedef void (*unit_journal_warn_fn)(void *ctx, const char *line);

/* Reads every journal file of <results>/journal, calling fn for each intact record and
 * warn (may be NULL) for each damaged one. *damaged gets their count. Returns the
 * number of records kept (0 when there is no journal), or -1 with a message when a
 * file was written by another configuration or cannot be read. */
int unit_journal_load(const char *results, const char *config, unit_journal_record_fn fn,
                      unit_journal_warn_fn warn, void *ctx, int *damaged, char *err,
                      size_t errlen);

#endif /* WORKLOAD_UNIT_JOURNAL_H */
