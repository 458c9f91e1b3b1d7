/* args.h: the number parsers of the workloads' and tools' command lines
 * (workloads/cifar, svm, nn, tools/hvbench): one call per flag value, which on a bad
 * value names the flag and the value in err. */
#ifndef WORKLOAD_ARGS_H
#define WORKLOAD_ARGS_H

#include <stddef.h>

/* s as a whole decimal integer in [lo, hi] into *out: 0, or -1 with
 * "<flag>: '<s>' is not an integer in [lo, hi]" in err (err may be NULL: no message).
 * s NULL (a flag given last, without its value) is an error too. */
int parse_int(const char *flag, const char *s, long long lo, long long hi, long long *out,
              char *err, size_t errlen);

/* s as a whole finite number in [lo, hi] into *out: 0, or -1 with
 * "<flag>: '<s>' is not a number in [lo, hi]" in err ("... is not a number" when the
 * range is [-HUGE_VAL, HUGE_VAL], i.e. any finite number). err may be NULL. */
int parse_double(const char *flag, const char *s, double lo, double hi, double *out, char *err,
                 size_t errlen);

#endif /* WORKLOAD_ARGS_H */
