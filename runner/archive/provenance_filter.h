/* provenance_filter.h - what of a dirty work tree git.diff may copy: files named like
 * secrets never (named only), untracked files above a size cap only as path, size and
 * sha256. Private to provenance_git.c. */
#ifndef KT_PROVENANCE_FILTER_H
#define KT_PROVENANCE_FILTER_H

#include <stddef.h>

#define KT_UNTRACKED_FILE_CAP  ((size_t)1 << 20)  /* bytes of one untracked file copied */
#define KT_UNTRACKED_TOTAL_CAP ((size_t)16 << 20) /* bytes of all untracked files copied */

typedef struct kt_diff_filter {
    const char *workdir;
    size_t untracked_bytes; /* copied so far */
    char *notes;            /* "# ktrial: ..." lines for the files left out (malloc'd) */
    size_t notes_len;
    int failed; /* out of memory */
} kt_diff_filter;

/* 1 when the last path component looks like a secret: .env, .env.*, *.pem, *.key, id_*,
 * .netrc, .pgpass, .npmrc, .pypirc, credentials*, *.p12, *.pfx, *.keystore. */
int kt_secret_name(const char *path);
/* Whether the delta for 'path' (untracked or not) may be copied: 0 yes, 1 leave it out
 * (a note is added to 'f'). */
int kt_diff_filter_skip(kt_diff_filter *f, const char *path, int untracked);

#endif
