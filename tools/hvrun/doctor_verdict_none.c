/* doctor_verdict_none.c: verdict 8 of doctor_verdict.c, when no cause was found:
 * an engine error, ranks that have waited long for a name without a cause found, or
 * "no hang" (every rank moving, or every rank done). */
#include <stdio.h>

#include "doctor_verdict.h"

void dv_verdict_none(an_t *a, int *scratch) {
  const doctor_model_t *m = a->m;
  /* old pending collectives or an engine error without a cause found */
  double oldest = 0;
  const char *name = NULL;
  int *who = scratch, nw = 0;
  for (int w = 0; w < a->n; w++) {
    const doctor_comm_t *c = dv_comm_of(&m->ranks[w], 0);
    for (int i = 0; c && i < c->npending; i++) {
      double age = m->ranks[w].time - c->pending[i].t_submit;
      if (age > oldest) oldest = age, name = c->pending[i].name;
    }
  }
  for (int w = 0; w < a->n; w++) {
    const doctor_comm_t *c = dv_comm_of(&m->ranks[w], 0);
    if (c && c->error[0]) {
      dv_verdict(a, "rank %d's engine stopped: %s", w, c->error);
      break;
    }
  }
  if (!a->nverdicts && oldest >= PENDING_OLD_S) {
    for (int w = 0; w < a->n; w++)
      if (dv_has_pending(dv_comm_of(&m->ranks[w], 0), name, NULL)) who[nw++] = w;
    char t[600];
    dv_verdict(a, "%s have waited %.1f s for '%s' and no cause was found: see the evidence (the peers they wait for)",
               dv_ranks_phrase(who, nw, t, sizeof t), oldest, name);
  } else if (!a->nverdicts && name)
    dv_verdict(a, "no hang: every rank is moving (the oldest pending collective, '%s', is %.1f s old)", name, oldest);
  else if (!a->nverdicts) dv_verdict(a, "no hang: every rank completed its last collective");
}
