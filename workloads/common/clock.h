/* clock.h: the clocks the workloads and tests time themselves with, in seconds as a
 * double. */
#ifndef WORKLOAD_CLOCK_H
#define WORKLOAD_CLOCK_H

/* CLOCK_MONOTONIC: wall-clock intervals (differences only). */
double now_s(void);

/* CLOCK_PROCESS_CPUTIME_ID: CPU time of this process, all threads; figures that stay
 * comparable on a machine shared with other jobs. */
double cpu_now_s(void);

#endif /* WORKLOAD_CLOCK_H */
