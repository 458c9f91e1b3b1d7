/* fuzz_nn_args.c: libFuzzer target of mnist_nn's command-line parser
 * (workloads/nn/nn_args.c, with nn_plan.c's search-space check). Input: the arguments
 * after the program name, separated by NUL bytes. */
#include <stdio.h>

#include "fuzz_util.h"
#include "nn_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int argc;
  char **argv = fuzz_argv("mnist_nn", data, size, 64, &argc);
  nn_args_t a;
  char err[512] = "";
  const int rc = nn_args_parse(argc, argv, &a, err, sizeof err);
  if (rc == -1 && err[0] == '\0') __builtin_trap(); /* an error must say why */
  if (rc == 0 && !a.help) {
    if (a.n_bootstrap < 1 || a.n_tuning < 1 || a.folds < 2 || a.batch < 1 || a.max_epochs < 1)
      __builtin_trap();
    char line[512];
    snprintf(line, sizeof line, "%s %s %s %s", a.dataset, a.results, a.device,
             a.data_dir ? a.data_dir : "-");
  }
  fuzz_argv_free(argv);
  return 0;
}
