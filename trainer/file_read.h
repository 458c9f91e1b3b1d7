/* file_read.h: reading data files, plain or gzip (zlib reads both transparently).
 * Readers of formats with a header stream the file (file_stream_*): they read and check
 * the header first, compare what it promises with what the file can hold, and only
 * then allocate and inflate the body, never more of it than the header promised plus
 * one byte; so a small file whose header asks for gigabytes is refused before any of
 * them is allocated. Headerless formats (CIFAR) read the whole file under a limit
 * (file_read_all). */
#ifndef HV_TRAINER_FILE_READ_H
#define HV_TRAINER_FILE_READ_H

#include <stddef.h>
#include <stdint.h>

/* Reads path (decompressed when gzip) into a malloc'ed *data of *size bytes, refusing
 * more than max_bytes (the message then says so). 0, or -1 with a message in err. */
int file_read_all(const char *path, size_t max_bytes, uint8_t **data, size_t *size,
                  char *err, size_t errlen);

/* Deflate expands at most 1032 to 1 (zlib's technical details), so a gzip file of n
 * bytes cannot hold more than about 1032 n: a header asking for more is a lie. */
#define FILE_GZIP_MAX_RATIO 1032u

typedef struct file_stream {
  void *gz;                  /* gzFile */
  const char *path;          /* the caller's string, for messages */
  unsigned long long bytes;  /* size of the file on disk */
  int gzip;                  /* 1 when the file is gzip-compressed */
} file_stream_t;

/* Opens path. 0, or -1 with "path: cannot open: reason" in err. */
int file_stream_open(file_stream_t *s, const char *path, char *err, size_t errlen);

/* The most data bytes the file can deliver: its size when plain, FILE_GZIP_MAX_RATIO
 * times its size when gzip. A header promising more is refused with no allocation. */
unsigned long long file_stream_capacity(const file_stream_t *s);

/* Up to n bytes into buf, *got of them (fewer only at the end of the data). 0, or -1
 * with a message on corrupt or truncated gzip data. */
int file_stream_read(file_stream_t *s, void *buf, size_t n, size_t *got, char *err,
                     size_t errlen);

/* The body the header announced: up to n bytes into a malloc'ed *data (grown as data
 * arrives, so a file shorter than promised costs what it holds, not n), then one byte
 * more to learn whether the file goes on. *got < n: the file ended early; *trailing:
 * it holds more than n. 0 (the caller judges *got and *trailing, and frees *data), or
 * -1 with a message (corrupt gzip, no memory; *data NULL). */
int file_stream_read_body(file_stream_t *s, size_t n, uint8_t **data, size_t *got,
                          int *trailing, char *err, size_t errlen);

void file_stream_close(file_stream_t *s);

/* 1 if path names an existing regular file. */
int file_exists(const char *path);

#endif /* HV_TRAINER_FILE_READ_H */
