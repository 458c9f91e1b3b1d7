/* test_sampler.c: the distributed sampler covers every sample exactly once per epoch
 * over all ranks (training, up to size-1 padding repeats; evaluation, none), gives
 * equal shards in training, reshuffles per epoch identically on every rank, and is
 * reproducible from its seed. */
#include <stdlib.h>

#include "check.h"
#include "sampler.h"

static void coverage(int n, int size, sampler_mode_t mode, int epoch) {
  int *seen = calloc((size_t)n + 1, sizeof(int));
  int total = 0, first = -1;
  char err[128];
  for (int r = 0; r < size; r++) {
    sampler_t s;
    CHECK(sampler_init(&s, n, r, size, mode, 1, 42, err, sizeof err) == 0);
    sampler_set_epoch(&s, epoch);
    if (mode == SAMPLER_TRAIN) {
      if (first < 0) first = s.count;
      CHECK_EQ_INT(s.count, first); /* equal shards */
      CHECK_EQ_INT(s.count, (n + size - 1) / size);
    } else {
      CHECK_EQ_INT(s.count, n / size + (r < n % size));
    }
    for (int i = 0; i < s.count; i++) {
      CHECK(s.indices[i] >= 0 && s.indices[i] < n);
      seen[s.indices[i]]++;
    }
    total += s.count;
    sampler_free(&s);
  }
  int missing = 0, extra = 0;
  for (int i = 0; i < n; i++) {
    if (seen[i] == 0) missing++;
    if (seen[i] > 1) extra += seen[i] - 1;
  }
  CHECK_EQ_INT(missing, 0);
  if (mode == SAMPLER_EVAL) {
    CHECK_EQ_INT(extra, 0);
    CHECK_EQ_INT(total, n);
  } else {
    CHECK_EQ_INT(extra, total - n);
    CHECK(extra < size);
  }
  free(seen);
}

int main(void) {
  const int sizes[] = {1, 2, 3, 4, 7};
  for (int k = 0; k < 5; k++) {
    for (int n = 1; n <= 23; n += 11) {
      coverage(n, sizes[k], SAMPLER_TRAIN, 0);
      coverage(n, sizes[k], SAMPLER_TRAIN, 5);
      coverage(n, sizes[k], SAMPLER_EVAL, 0);
    }
    coverage(1000, sizes[k], SAMPLER_TRAIN, 3);
    coverage(1001, sizes[k], SAMPLER_EVAL, 3);
  }
  char err[128];
  sampler_t a, b;
  CHECK(sampler_init(&a, 100, 1, 4, SAMPLER_TRAIN, 1, 7, err, sizeof err) == 0);
  CHECK(sampler_init(&b, 100, 1, 4, SAMPLER_TRAIN, 1, 7, err, sizeof err) == 0);
  sampler_set_epoch(&a, 2);
  sampler_set_epoch(&b, 2);
  CHECK(memcmp(a.indices, b.indices, sizeof(int) * 25) == 0); /* reproducible */
  sampler_set_epoch(&b, 3);
  CHECK(memcmp(a.indices, b.indices, sizeof(int) * 25) != 0); /* reshuffled */
  sampler_free(&b);
  CHECK(sampler_init(&b, 100, 1, 4, SAMPLER_TRAIN, 0, 7, err, sizeof err) == 0);
  CHECK(b.indices[0] == 1 && b.indices[1] == 5 && b.indices[24] == 97); /* no shuffle */
  sampler_free(&a);
  sampler_free(&b);
  CHECK(sampler_init(&a, 10, 4, 4, SAMPLER_TRAIN, 1, 7, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "rank 4 of 4");
  CHECK_RETURN();
}
