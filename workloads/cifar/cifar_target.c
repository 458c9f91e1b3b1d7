/* cifar_target.c: the early-stopping streak and the time to accuracy (cifar_target.h). */
#include "cifar_target.h"

void cifar_target_start(cifar_target_t *g, double target, int patience, int streak, double t_start) {
  g->target = target;
  g->patience = patience;
  g->streak = streak;
  g->t_start = t_start;
  g->reached_s = -1;
  g->reached_train_s = -1;
  g->reached_step = 0;
}

int cifar_target_feed(cifar_target_t *g, double val_acc, long long step, double now, double validate_s) {
  const int hit = val_acc >= g->target;
  g->streak = hit ? g->streak + 1 : 0;
  if (hit && g->reached_s < 0) {
    g->reached_s = now - g->t_start;
    g->reached_train_s = g->reached_s - validate_s;
    g->reached_step = step;
  }
  return g->streak >= g->patience;
}
