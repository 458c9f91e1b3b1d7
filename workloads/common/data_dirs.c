/* data_dirs.c: mnist_data_dir, the default data-set directory of the workloads
 * (data_dirs.h). */
#include "data_dirs.h"

#include <string.h>

const char *mnist_data_dir(const char *dataset, const char *data_dir, const char *mnist_dir) {
  if (data_dir) return data_dir;
  return !strcmp(dataset, "fashion-mnist") ? FASHION_MNIST_DIR : mnist_dir;
}
