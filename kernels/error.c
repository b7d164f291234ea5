/* error.c - the calling thread's last error message (libgit2 style: set once where the
 * failure happens, read by whoever reports it). A leaf: every other file may depend on it. */
#include "kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];

/* Formats into a buffer of its own, then copies: a message built from the previous one
 * (kt_error_set("point '%s': %s", id, kt_error_last())) reads it whole instead of
 * overwriting it as it goes (vsnprintf with an argument that overlaps its output is
 * undefined). */
static void error_vset(const char *fmt, va_list ap)
{
    char next[sizeof(last_error)];
    vsnprintf(next, sizeof(next), fmt, ap);
    memcpy(last_error, next, sizeof(last_error));
}

int kt_error_set(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(fmt, ap);
    va_end(ap);
    return KT_ERROR;
}

int kt_error_code(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(fmt, ap);
    va_end(ap);
    return code;
}

const char *kt_error_last(void)
{
    return last_error;
}

void kt_error_clear(void)
{
    last_error[0] = '\0';
}

const char *kt_error_or_code(int code)
{
    static const char *const names[] = {"KT_OK",     "KT_ERROR",        "KT_ENODEV", "KT_ENOMEM",
                                        "KT_EINVAL", "KT_EUNSUPPORTED", "KT_EIO"};
    if (last_error[0])
        return last_error;
    const char *name = code <= 0 && code > -(int)(sizeof(names) / sizeof(names[0]))
                           ? names[-code]
                           : "not a KT_E* code";
    snprintf(last_error, sizeof(last_error), "returned %d (%s) without a message", code, name);
    return last_error;
}
