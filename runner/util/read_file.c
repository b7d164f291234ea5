/* read_file.c - see read_file.h. */
#include "util/read_file.h"
/* the error convention of every layer, from the public header below kernels/ */
#define KT_PLUGIN_HOST 1
#include "ktrial/plugin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kt_read_file(char **out, size_t *len, const char *path, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return kt_error_set("cannot read '%s': %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n > max) {
            free(buf);
            fclose(f);
            return kt_error_set("'%s' is over %zu bytes", path, max);
        }
        if (got == 0)
            break;
        if (n == cap) {
            char *bigger = realloc(buf, 2 * cap + 1);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        free(buf);
        return kt_error_set("cannot read '%s'", path);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}
