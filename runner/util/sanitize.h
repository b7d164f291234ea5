/* sanitize.h - text from specs and result files made safe for a terminal: control
 * characters (C0 and DEL) are written as escapes, so a '\n' cannot forge a diagnostic line
 * and an ESC cannot drive the terminal. Well-formed UTF-8 passes unchanged; a byte that is
 * not part of a well-formed sequence is escaped too, so the text is valid UTF-8 (JSON). */
#ifndef KT_SANITIZE_H
#define KT_SANITIZE_H

#include <stddef.h>

/* Writes 'src' into 'dst' ('len' bytes, always NUL-terminated) with '\n', '\r', '\t' as
 * those two-character escapes and any other control byte, or byte outside well-formed UTF-8,
 * as \xHH; a cut falls between characters. Returns 'dst'. */
char *kt_sanitize(char *dst, size_t len, const char *src);
/* The same into a malloc'd string (NULL when out of memory). */
char *kt_sanitize_dup(const char *src);
/* Drops a UTF-8 sequence cut short at the end of 'text' (an snprintf into a buffer too
 * small), so that well-formed text stays well-formed. */
void kt_utf8_trim(char *text);

#endif
