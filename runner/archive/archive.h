/* archive.h - the run folder: safe names, atomic writes, appended lines. */
#ifndef KT_ARCHIVE_H
#define KT_ARCHIVE_H

#include <stddef.h>

/* 1 when 'name' is [a-z0-9._-]+, not "." or "..", and at most 64 bytes. */
int kt_archive_name_ok(const char *name);
/* mkdir -p; returns 0 or -1 with kt_error_last() naming the path. */
int kt_archive_mkdirs(const char *path);
/* Writes 'len' bytes to 'dir/name' through a temporary file, fsync and rename. */
int kt_archive_write(const char *dir, const char *name, const void *data, size_t len);
/* Appends 'len' bytes to 'dir/name' and fsyncs (for points.jsonl and samples.csv). */
int kt_archive_append(const char *dir, const char *name, const void *data, size_t len);
/* Reads 'path' whole (NUL-terminated); 'max' bytes at most. Returns 0 or -1. */
int kt_read_file(char **out, size_t *len, const char *path, size_t max);

#endif
