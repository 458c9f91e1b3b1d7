/* file_read.h: reads a whole file, plain or gzip (zlib reads both transparently), into
 * memory, so the loaders check sizes against the real byte count. */
#ifndef HV_TRAINER_FILE_READ_H
#define HV_TRAINER_FILE_READ_H

#include <stddef.h>
#include <stdint.h>

/* Reads path (decompressed when gzip) into a malloc'ed *data of *size bytes, refusing
 * more than max_bytes (the message then says so). 0, or -1 with a message in err. */
int file_read_all(const char *path, size_t max_bytes, uint8_t **data, size_t *size,
                  char *err, size_t errlen);

/* 1 if path names an existing regular file. */
int file_exists(const char *path);

#endif /* HV_TRAINER_FILE_READ_H */
