/* restart_mark.h: how a program tells `hvrun --restarts` (tools/hvrun/restart.c) that it
 * resumes when relaunched: it reads HV_RESTART and continues from its checkpoints or
 * journal. hvrun relaunches any program that lost a rank, but says so when the program
 * never marked itself: such a program starts over, and its work so far is lost. */
#ifndef HV_WORKLOAD_RESTART_MARK_H
#define HV_WORKLOAD_RESTART_MARK_H

/* The attempt hvrun --restarts is on (HV_RESTART: 0 first), or 0 outside it. */
int restart_attempt(void);

/* Creates $HV_RUN_DIR/resumable (any rank may; once is enough). Nothing outside
 * hvrun --restarts. */
void restart_mark_resumable(void);

#endif /* HV_WORKLOAD_RESTART_MARK_H */
