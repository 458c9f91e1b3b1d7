/* fuzz_cifar_args.c: libFuzzer target of cifar_ddp's command-line parser
 * (workloads/cifar/cifar_args.c). Input: the arguments after the program name,
 * separated by NUL bytes. */
#include <stdio.h>

#include "cifar_args.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int argc;
  char **argv = fuzz_argv("cifar_ddp", data, size, 64, &argc);
  cifar_args_t a;
  char err[512] = "";
  const int rc = cifar_args_parse(argc, argv, &a, err, sizeof err);
  if (rc == -1 && err[0] == '\0') __builtin_trap(); /* an error must say why */
  if (rc == 0) {
    /* What the program does next with the values it was promised are checked. */
    if (a.batch_size < 1 || a.epochs < 1 || a.micro_batches < 1 || !a.model || !a.dataset ||
        a.depth < 10 || (a.depth - 4) % 6 != 0 || a.widen < 1)
      __builtin_trap();
    char line[256];
    snprintf(line, sizeof line, "%s %s %s %s", a.model, a.dataset, a.lr_schedule, a.compression);
  }
  fuzz_argv_free(argv);
  return 0;
}
