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

/* The length of the well-formed UTF-8 sequence of a code point >= U+0080 at 'p' (2 to 4),
 * or 0 when 'p' does not start one (a stray continuation byte, an overlong form, a
 * surrogate, a sequence cut short). */
static size_t utf8_len(const unsigned char *p)
{
    size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
    if (p[0] < 0xc2 || p[0] > 0xf4)
        return 0;
    /* the second byte's range excludes overlong forms, surrogates and code points past
     * U+10FFFF (RFC 3629, table 3-7 of the Unicode standard) */
    unsigned char lo = p[0] == 0xe0 ? 0xa0 : p[0] == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = p[0] == 0xed ? 0x9f : p[0] == 0xf4 ? 0x8f : 0xbf;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

char *kt_sanitize(char *dst, size_t len, const char *src)
{
    size_t n = 0;
    if (len == 0)
        return dst;
    for (const unsigned char *p = (const unsigned char *)src; *p;) {
        char esc[5];
        size_t e = escape(esc, *p), seq = *p >= 0x80 ? utf8_len(p) : 1;
        if (!seq)
            e = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", *p);
        size_t need = e ? e : seq;
        if (n + need >= len)
            break; /* cut before a whole escape or character, never inside one */
        memcpy(dst + n, e ? (const void *)esc : (const void *)p, need);
        n += need;
        p += seq ? seq : 1;
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

void kt_utf8_trim(char *text)
{
    size_t len = strlen(text), start = len;
    while (start > 0 && len - start < 4 && ((unsigned char)text[start - 1] & 0xc0) == 0x80)
        start--; /* back over the continuation bytes to the lead byte */
    if (start > 0 && (unsigned char)text[start - 1] >= 0xc0 &&
        utf8_len((const unsigned char *)text + start - 1) != len - start + 1)
        text[start - 1] = '\0'; /* a sequence cut short */
}
