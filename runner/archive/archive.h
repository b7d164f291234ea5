/* archive.h - the run folder: safe names, atomic writes, appended lines. */
#ifndef KT_ARCHIVE_H
#define KT_ARCHIVE_H

#include "util/read_file.h"

#include <stddef.h>

/* 1 when 'name' is [a-z0-9._-]+, not "." or "..", and at most 64 bytes. */
int kt_archive_name_ok(const char *name);
/* mkdir -p; returns 0 or -1 with kt_error_last() naming the path. */
int kt_archive_mkdirs(const char *path);
/* Every file is opened relative to the folder's directory fd (openat) and never through a
 * symbolic link (O_NOFOLLOW); new files are created with O_EXCL. */

/* Writes 'len' bytes to 'dir/name' through a fresh temporary file, fsync and rename. */
int kt_archive_write(const char *dir, const char *name, const void *data, size_t len);
/* Appends 'len' bytes to the regular file 'dir/name' and fsyncs (points.jsonl, samples.csv);
 * on a short write the file is cut back to its old length, so no partial line stays. */
int kt_archive_append(const char *dir, const char *name, const void *data, size_t len);
/* Cuts 'dir/name' to 'len' bytes (a torn last line, on --resume). */
int kt_archive_truncate(const char *dir, const char *name, size_t len);

/* The lock file of a run folder: flock(LOCK_EX) held by the run writing it. */
#define KT_ARCHIVE_LOCK ".ktrial.lock"
#define KT_ARCHIVE_BUSY (-16) /* kt_archive_lock: another run holds the folder */
/* Takes the folder's lock without waiting. Returns the fd (kept open until exit), or
 * KT_ARCHIVE_BUSY when another run holds it (its pid in the message), or -1. */
int kt_archive_lock(const char *dir);
/* 1 when some process holds the folder's lock now (a run still going). */
int kt_archive_lock_held(const char *dir);

#endif
