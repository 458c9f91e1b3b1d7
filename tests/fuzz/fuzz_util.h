/* fuzz_util.h: what the libFuzzer targets of tests/fuzz share: the entry point's
 * prototype, a private temporary directory for readers that take a path, writing an
 * input there (plain or gzip-compressed), and splitting an input on NUL bytes into an
 * argv for the command-line parsers. */
#ifndef HV_FUZZ_UTIL_H
#define HV_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point, defined once by each target (declared here for
 * -Wmissing-prototypes). Returns 0; a crash, leak or UB report is the finding. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional one-time set-up before the first input (a target that needs one defines it). */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The small model (about 120 parameters, batch-norm buffers) that fuzz_checkpoint loads
 * into and fuzz_seeds saves the checkpoint seeds from (fuzz_ckpt_model.c). Aborts on
 * failure. */
struct model;
struct model *fuzz_ckpt_model(void);

/* A directory of this process (mkdtemp under $TMPDIR or /tmp), created on first use,
 * emptied by fuzz_tmpdir_clear and removed at exit. */
const char *fuzz_tmpdir(void);

/* Removes everything inside fuzz_tmpdir() (subfolders too), so that each input starts
 * from an empty directory whatever the previous one wrote. */
void fuzz_tmpdir_clear(void);

/* Writes size bytes to path (gzip-compressed when gzip), aborting on an I/O error: a
 * harness that cannot write its input would only fuzz the "cannot open" branch. */
void fuzz_write_file(const char *path, const uint8_t *data, size_t size, int gzip);

/* argv[0] = prog, then each NUL-separated piece of data (a trailing piece without a
 * NUL too), at most max_args pieces, each in its own allocation so that ASan sees a
 * read past one argument's end; argv[argc] = NULL as in main. Free with fuzz_argv_free. */
char **fuzz_argv(const char *prog, const uint8_t *data, size_t size, int max_args, int *argc);
void fuzz_argv_free(char **argv);

#endif /* HV_FUZZ_UTIL_H */
