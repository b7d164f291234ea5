/* provenance_filter.c - secrets and oversized untracked files kept out of git.diff. */
#include "archive/provenance_filter.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int kt_secret_name(const char *path)
{
    static const char *const patterns[] = {".env",    ".env.*",       "*.pem",        "*.key",
                                           "id_*",    ".netrc",       ".pgpass",      ".npmrc",
                                           ".pypirc", "credentials*", "*credentials", "*.p12",
                                           "*.pfx",   "*.keystore",   "*.secret",     "secrets.*"};
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++)
        if (fnmatch(patterns[i], base, 0) == 0)
            return 1;
    return 0;
}

static void note(kt_diff_filter *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(kt_diff_filter *f, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line))
        n = sizeof(line) - 1;
    char *more = realloc(f->notes, f->notes_len + (size_t)n + 1);
    if (!more) {
        f->failed = 1;
        return;
    }
    memcpy(more + f->notes_len, line, (size_t)n + 1);
    f->notes = more;
    f->notes_len += (size_t)n;
}

/* SHA-256 of a file read in blocks (never whole into memory); 0 or -1. */
static int file_sha256(char out[65], int fd)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char buf[1 << 16], md[32];
    unsigned int md_len = 0;
    int rc = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 ? 0 : -1;
    ssize_t n;
    while (rc == 0 && (n = read(fd, buf, sizeof(buf))) > 0)
        rc = EVP_DigestUpdate(ctx, buf, (size_t)n) == 1 ? 0 : -1;
    if (rc == 0 && (n < 0 || EVP_DigestFinal_ex(ctx, md, &md_len) != 1))
        rc = -1;
    EVP_MD_CTX_free(ctx);
    for (unsigned i = 0; rc == 0 && i < md_len; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return rc;
}

int kt_diff_filter_skip(kt_diff_filter *f, const char *path, int untracked)
{
    if (kt_secret_name(path)) {
        note(f, "# ktrial: not copied: %s (named like a secret)\n", path);
        return 1;
    }
    if (!untracked)
        return 0;
    char full[4096];
    snprintf(full, sizeof(full), "%s%s", f->workdir, path);
    int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return 0; /* links, folders: libgit2 records what they are, not content */
    }
    size_t size = (size_t)st.st_size;
    const char *why = size > KT_UNTRACKED_FILE_CAP ? "over the 1 MiB per-file cap"
                      : f->untracked_bytes + size > KT_UNTRACKED_TOTAL_CAP
                          ? "over the 16 MiB cap of all untracked files"
                          : NULL;
    if (!why) {
        f->untracked_bytes += size;
        close(fd);
        return 0;
    }
    char sha[65] = "unreadable";
    if (file_sha256(sha, fd) != 0)
        snprintf(sha, sizeof(sha), "unreadable");
    close(fd);
    note(f, "# ktrial: not copied: %s (%zu bytes, sha256 %s): %s\n", path, size, sha, why);
    return 1;
}
