/* error_report.c: the workloads' rank-aware error lines (error_report.h). */
#include "error_report.h"

#include <stdio.h>
#include <stdlib.h>

static const char *g_program = "hv";
static int g_rank = -1; /* -1: not known yet */

void report_set_program(const char *program) { g_program = program; }

void report_set_rank(int rank) { g_rank = rank; }

void report_error(const char *msg) {
  if (g_rank >= 0) fprintf(stderr, "%s: rank %d: error: %s\n", g_program, g_rank, msg);
  else fprintf(stderr, "%s: error: %s\n", g_program, msg);
  fflush(stderr);
}

_Noreturn void report_fatal(const char *msg) {
  report_error(msg);
  exit(1);
}
