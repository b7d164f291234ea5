/* dotted_path.h - the keys of a dotted path ("trials.max_startup_seconds"), one at a time,
 * for lookups in YAML trees and JSON documents alike. */
#ifndef KT_DOTTED_PATH_H
#define KT_DOTTED_PATH_H

#include <stddef.h>

/* Copies the next key of the dotted path at '*p' into 'key' ('cap' bytes) and moves '*p'
 * past it and its dot. Returns 1 with a key, 0 at the end of the path, -1 when the key does
 * not fit in 'cap' bytes. */
int kt_path_next_key(const char **p, char *key, size_t cap);

#endif
