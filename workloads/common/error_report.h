/* error_report.h: rank-aware error lines of the workloads on stderr,
 * "<program>: rank <r>: error: <message>" once the rank is known (report_set_rank),
 * "<program>: error: <message>" before. */
#ifndef WORKLOAD_ERROR_REPORT_H
#define WORKLOAD_ERROR_REPORT_H

/* The program name of the lines (a string that outlives the calls). */
void report_set_program(const char *program);
/* This process's rank; from now on every line names it. */
void report_set_rank(int rank);

/* One error line, flushed. */
void report_error(const char *msg);
/* One error line, then exit(1). */
_Noreturn void report_fatal(const char *msg);

#endif /* WORKLOAD_ERROR_REPORT_H */
