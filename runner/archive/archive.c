/* archive.c - writing the run folder so that nothing already written is lost. */
#include "archive/archive.h"
#include "kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int kt_archive_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int kt_archive_mkdirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return kt_error_set("path too long: '%s'", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return kt_error_set("cannot create '%s': %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return kt_error_set("cannot create '%s': %s", buf, strerror(errno));
    return 0;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int kt_archive_write(const char *dir, const char *name, const void *data, size_t len)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%ld", dir, name, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return kt_error_set("cannot write '%s': %s", path, strerror(errno));
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return kt_error_set("cannot write '%s': %s", path, strerror(e));
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return kt_error_set("cannot write '%s': %s", path, strerror(e));
    }
    return 0;
}

int kt_archive_append(const char *dir, const char *name, const void *data, size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0)
        return kt_error_set("cannot write '%s': %s", path, strerror(errno));
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return kt_error_set("cannot write '%s': %s", path, strerror(e));
    }
    if (close(fd) != 0)
        return kt_error_set("cannot write '%s': %s", path, strerror(errno));
    return 0;
}

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
