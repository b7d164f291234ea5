/* dotted_path.c - splitting a dotted path into its keys. */
#include "util/dotted_path.h"

#include <string.h>

int kt_path_next_key(const char **p, char *key, size_t cap)
{
    const char *s = *p;
    if (!*s)
        return 0;
    const char *dot = strchr(s, '.');
    size_t n = dot ? (size_t)(dot - s) : strlen(s);
    if (n >= cap)
        return -1;
    memcpy(key, s, n);
    key[n] = '\0';
    *p = dot ? dot + 1 : s + n;
    return 1;
}
