/* sanitize.h - text from specs and result files made safe for a terminal: control
 * characters (C0 and DEL) are written as escapes, so a '\n' cannot forge a diagnostic line
 * and an ESC cannot drive the terminal. Bytes >= 0x80 (UTF-8) pass unchanged. */
#ifndef KT_SANITIZE_H
#define KT_SANITIZE_H

#include <stddef.h>

/* Writes 'src' into 'dst' ('len' bytes, always NUL-terminated) with '\n', '\r', '\t' as
 * those two-character escapes and any other control byte as \xHH. Returns 'dst'. */
char *kt_sanitize(char *dst, size_t len, const char *src);
/* The same into a malloc'd string (NULL when out of memory). */
char *kt_sanitize_dup(const char *src);

#endif
