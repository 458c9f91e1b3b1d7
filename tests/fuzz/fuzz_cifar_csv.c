/* fuzz_cifar_csv.c: libFuzzer target of cifar_ddp's history reader
 * (workloads/cifar/cifar_report.c, cifar_report_read_csv: the results.csv a resumed
 * run reads back). Input: capacity (1 byte: rows the caller has room for, 0..31) |
 * the CSV file. The rows go into an array of exactly that many, so a write past the
 * capacity is an ASan report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cifar_report.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int cap = data[0] & 31;
  data++, size--;
  fuzz_tmpdir_clear();
  char path[4200];
  snprintf(path, sizeof path, "%s/results.csv", fuzz_tmpdir());
  fuzz_write_file(path, data, size, 0);
  cifar_epoch_t *rows = malloc(sizeof *rows * (size_t)cap + 1);
  if (!rows) __builtin_trap();
  char err[512] = "";
  const int n = cifar_report_read_csv(path, rows, cap, err, sizeof err);
  if (n < -1 || n > cap || (n == -1 && err[0] == '\0')) __builtin_trap();
  volatile double sum = 0;
  for (int i = 0; i < n; i++) sum += rows[i].train_loss + (double)rows[i].steps;
  (void)sum;
  free(rows);
  return 0;
}
