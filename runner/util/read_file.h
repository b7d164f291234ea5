/* read_file.h - a whole file into memory, with a cap on its size. */
#ifndef KT_READ_FILE_H
#define KT_READ_FILE_H

#include <stddef.h>

/* Reads 'path' whole (NUL-terminated); 'max' bytes at most. Returns 0 or -1. */
int kt_read_file(char **out, size_t *len, const char *path, size_t max);

#endif
