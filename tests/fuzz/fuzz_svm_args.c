/* fuzz_svm_args.c: libFuzzer target of mnist_svm's command-line parser
 * (workloads/svm/svm_args.c). Input: the arguments after the program name, separated
 * by NUL bytes. */
#include <stdio.h>

#include "fuzz_util.h"
#include "svm_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int argc;
  char **argv = fuzz_argv("mnist_svm", data, size, 64, &argc);
  svm_args_t a;
  char err[512] = "";
  const int rc = svm_args_parse(argc, argv, &a, err, sizeof err);
  if (rc == -1 && err[0] == '\0') __builtin_trap(); /* an error must say why */
  if (rc == 0 && !a.help) {
    /* The values main() goes on to use without another check. */
    if (a.n_tuning < 1 || a.folds < 2 || a.log_c_min > a.log_c_max ||
        a.log_gamma_min > a.log_gamma_max)
      __builtin_trap();
    char line[512];
    snprintf(line, sizeof line, "%s %s %s %s %s", a.dataset, a.results, a.device, a.multiclass,
             a.data_dir ? a.data_dir : "-");
  }
  fuzz_argv_free(argv);
  return 0;
}
