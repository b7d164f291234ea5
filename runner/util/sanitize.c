/* sanitize.c - control characters written as escapes (see sanitize.h). */
#include "util/sanitize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The escape of byte 'c' into 'out' (at least 5 bytes); its length, 0 when 'c' is safe. */
static size_t escape(char *out, unsigned char c)
{
    if (c >= 0x20 && c != 0x7f)
        return 0;
    if (c == '\n' || c == '\r' || c == '\t') {
        out[0] = '\\';
        out[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        return 2;
    }
    snprintf(out, 5, "\\x%02x", c);
    return 4;
}

char *kt_sanitize(char *dst, size_t len, const char *src)
{
    size_t n = 0;
    if (len == 0)
        return dst;
    for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
        char esc[5];
        size_t e = escape(esc, *p);
        size_t need = e ? e : 1;
        if (n + need >= len)
            break;
        if (e)
            memcpy(dst + n, esc, e);
        else
            dst[n] = (char)*p;
        n += need;
    }
    dst[n] = '\0';
    return dst;
}

char *kt_sanitize_dup(const char *src)
{
    size_t len = 4 * strlen(src) + 1;
    char *dst = malloc(len);
    return dst ? kt_sanitize(dst, len, src) : NULL;
}
