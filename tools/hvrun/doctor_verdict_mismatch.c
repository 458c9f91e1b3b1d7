/* doctor_verdict_mismatch.c: verdict 5 of doctor_verdict.c, mismatches: ordered
 * (GPU) calls that differ at one sequence number, and the same name submitted with a
 * different collective, dtype or count (the latest unfinished instance on each rank). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_verdict.h"

/* Groups ranks by a string of theirs; prints "ranks A and ranks B" style text. */
typedef struct {
  char key[256];
  int *ranks, n;
} group_t;

static int group_add(group_t *g, int ng, int cap, const char *key, int w) {
  for (int i = 0; i < ng; i++)
    if (!strcmp(g[i].key, key)) {
      g[i].ranks[g[i].n++] = w;
      return ng;
    }
  if (ng == cap) return ng;
  snprintf(g[ng].key, sizeof g[ng].key, "%s", key);
  g[ng].ranks[0] = w, g[ng].n = 1;
  return ng + 1;
}

static group_t *groups_new(int cap, int n) {
  group_t *g = calloc((size_t)cap, sizeof *g);
  for (int i = 0; g && i < cap; i++)
    if (!(g[i].ranks = calloc((size_t)n, sizeof(int)))) return NULL;
  return g;
}

static void groups_free(group_t *g, int cap) {
  for (int i = 0; g && i < cap; i++) free(g[i].ranks);
  free(g);
}

/* Ordered (GPU) calls that differ at one seq; returns 1 when found. */
int dv_verdict_ordered(an_t *a, int index) {
  long long first = -1;
  int found = 0, ref = -1;
  group_t *g = groups_new(4, a->n);
  evview_t *vs = calloc((size_t)a->n, sizeof *vs);
  int *all = calloc((size_t)a->n, sizeof *all);
  if (!g || !vs || !all) goto out;
  for (int w = 0; w < a->n; w++) {
    vs[w] = dv_view_of(dv_comm_of(&a->m->ranks[w], index), 1);
    if (vs[w].n && (ref < 0 || vs[w].n > vs[ref].n)) ref = w;
  }
  /* the smallest seq at which a rank's call differs from the reference rank's (the one
   * that recorded most): O(ranks x events x log events) */
  for (int w = 0; ref >= 0 && w < a->n; w++)
    for (int i = 0; w != ref && i < vs[w].n; i++) {
      const doctor_event_t *e = vs[w].v[i], *f;
      if (first >= 0 && e->seq >= first) break;
      if ((f = dv_view_at(&vs[ref], e->seq)) && strcmp(f->name, e->name) != 0) {
        first = e->seq;
        break;
      }
    }
  if (first < 0) goto out;
  int ng = 0, nall = 0;
  for (int w = 0; w < a->n; w++) {
    const doctor_event_t *e = dv_view_at(&vs[w], first);
    if (e) ng = group_add(g, ng, 4, e->name, w), all[nall++] = w;
  }
  int major = 0;
  for (int i = 1; i < ng; i++)
    if (g[i].n > g[major].n || (g[i].n == g[major].n && g[i].ranks[0] < g[major].ranks[0])) major = i;
  char who[600], text[2048] = "", one[700];
  size_t used = 0;
  for (int i = 0; i < ng; i++) {
    if (i == major) continue;
    int w = snprintf(text + used, sizeof text - used, "%s%s called %s", used ? ", " : "",
                     dv_ranks_phrase(g[i].ranks, g[i].n, one, sizeof one), g[i].key);
    if (w > 0 && (size_t)w < sizeof text - used) used += (size_t)w;
  }
  dv_verdict(a, "%s issued different GPU collectives at sequence %lld: %s, the others %s",
             dv_ranks_phrase(all, nall, who, sizeof who), first, text, g[major].key);
  found = 1;
out:
  groups_free(g, 4);
  dv_views_free(vs, vs ? a->n : 0);
  free(all);
  return found;
}

/* The same name submitted differently: the latest unfinished instance on each rank. */
void dv_verdict_mismatch(an_t *a, int index, int skip_ordered) {
  group_t *g = groups_new(8, a->n);
  if (!g) return;
  /* candidate names: every unfinished latest instance */
  for (int w = 0; w < a->n; w++) {
    const doctor_comm_t *c = dv_comm_of(&a->m->ranks[w], index);
    for (int i = c ? c->nevents - 1 : -1; i >= 0; i--) {
      const doctor_event_t *e = &c->events[i];
      if (!dv_unfinished(e) || (skip_ordered && e->ordered)) continue;
      /* only the latest instance of this name on this rank, and each name once */
      int later = 0, earlier_rank = 0;
      for (int j = i + 1; j < c->nevents; j++) later |= !strcmp(c->events[j].name, e->name);
      for (int v = 0; v < w && !earlier_rank; v++) {
        const doctor_comm_t *d = dv_comm_of(&a->m->ranks[v], index);
        for (int j = 0; d && j < d->nevents; j++)
          if (dv_unfinished(&d->events[j]) && !strcmp(d->events[j].name, e->name)) {
            earlier_rank = 1;
            break;
          }
      }
      if (later || earlier_rank) continue;
      int ng = 0;
      for (int v = 0; v < a->n; v++) {
        const doctor_comm_t *d = dv_comm_of(&a->m->ranks[v], index);
        for (int j = d ? d->nevents - 1 : -1; j >= 0; j--)
          if (!strcmp(d->events[j].name, e->name)) {
            if (dv_unfinished(&d->events[j])) {
              char sig[256];
              dv_signature(&d->events[j], sig, sizeof sig);
              ng = group_add(g, ng, 8, sig, v);
            }
            break;
          }
      }
      if (ng > 1) {
        char text[2048] = "", sigs[2048] = "", one[700];
        size_t u1 = 0, u2 = 0;
        for (int k = 0; k < ng; k++) {
          int x = snprintf(text + u1, sizeof text - u1, "%s%s", k == 0 ? "" : k == ng - 1 ? " and " : ", ",
                           dv_ranks_phrase(g[k].ranks, g[k].n, one, sizeof one));
          if (x > 0 && (size_t)x < sizeof text - u1) u1 += (size_t)x;
          x = snprintf(sigs + u2, sizeof sigs - u2, "%s%s", k ? " against " : "", g[k].key);
          if (x > 0 && (size_t)x < sizeof sigs - u2) u2 += (size_t)x;
        }
        dv_verdict(a, "%s submitted '%s' differently: %s", text, e->name, sigs);
      }
    }
  }
  groups_free(g, 8);
}
