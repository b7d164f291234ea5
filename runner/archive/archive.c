/* archive.c - writing the run folder so that nothing already written is lost. */
#include "archive/archive.h"
#include "kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

/* The folder as a directory fd (the folder itself may be a link the user gave); on failure
 * the message says what could not be done ('verb') to 'dir/name'. */
static int open_dir(const char *dir, const char *verb, const char *name)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        kt_error_set("cannot %s '%s/%s': %s", verb, dir, name, strerror(errno));
    return dfd;
}

int kt_archive_write(const char *dir, const char *name, const void *data, size_t len)
{
    char tmp[NAME_MAX + 1];
    int dfd = open_dir(dir, "write", name);
    if (dfd < 0)
        return -1;
    snprintf(tmp, sizeof(tmp), ".%.200s.tmp.%ld", name, (long)getpid());
    /* a fresh file or nothing: a planted link or file at the temporary name is an error */
    unlinkat(dfd, tmp, 0); /* our own leftover after a crash with a reused pid */
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    int e = errno;
    if (fd < 0) {
        close(dfd);
        return kt_error_set("cannot write '%s/%s': %s", dir, name, strerror(e));
    }
    int rc = write_all(fd, data, len) != 0 || fsync(fd) != 0 ? -1 : 0;
    e = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    /* rename replaces a link at 'name' itself, never what it points to */
    if (rc == 0 && renameat(dfd, tmp, dfd, name) != 0) {
        rc = -1;
        e = errno;
    }
    if (rc != 0) {
        unlinkat(dfd, tmp, 0);
        kt_error_set("cannot write '%s/%s': %s", dir, name, strerror(e));
    }
    close(dfd);
    return rc;
}

int kt_archive_append(const char *dir, const char *name, const void *data, size_t len)
{
    int dfd = open_dir(dir, "write", name);
    if (dfd < 0)
        return -1;
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0666);
    int e = errno;
    close(dfd);
    if (fd < 0)
        return kt_error_set("cannot write '%s/%s': %s%s", dir, name, strerror(e),
                            e == ELOOP ? " (a symbolic link; the archive never follows one)" : "");
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return kt_error_set("cannot write '%s/%s': not a regular file", dir, name);
    }
    int rc = 0;
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        e = errno;
        /* never leave a partial line: cut the file back to what it was */
        if (ftruncate(fd, st.st_size) == 0)
            fsync(fd);
        rc = kt_error_set("cannot write '%s/%s': %s", dir, name, strerror(e ? e : EIO));
    }
    if (close(fd) != 0 && rc == 0)
        rc = kt_error_set("cannot write '%s/%s': %s", dir, name, strerror(errno));
    return rc;
}

int kt_archive_truncate(const char *dir, const char *name, size_t len)
{
    int dfd = open_dir(dir, "truncate", name);
    if (dfd < 0)
        return -1;
    int fd = openat(dfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(dfd);
    if (fd < 0)
        return kt_error_set("cannot truncate '%s/%s': %s", dir, name, strerror(e));
    int rc = ftruncate(fd, (off_t)len) != 0 || fsync(fd) != 0 ? -1 : 0;
    e = errno;
    close(fd);
    return rc ? kt_error_set("cannot truncate '%s/%s': %s", dir, name, strerror(e)) : 0;
}

int kt_archive_lock(const char *dir)
{
    int dfd = open_dir(dir, "lock", KT_ARCHIVE_LOCK);
    if (dfd < 0)
        return -1;
    int fd = openat(dfd, KT_ARCHIVE_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    int e = errno;
    close(dfd);
    if (fd < 0)
        return kt_error_set("cannot lock '%s': %s", dir, strerror(e));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        e = errno;
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        if (e == EWOULDBLOCK)
            return kt_error_code(KT_ARCHIVE_BUSY, "'%s' is in use by another ktrial run%s%s%s", dir,
                                 pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "");
        return kt_error_set("cannot lock '%s': %s", dir, strerror(e));
    }
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        /* the lock holds without the pid; the pid is only for the message */
    }
    return fd; /* held until the process exits */
}

int kt_archive_lock_held(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    int fd = openat(dfd, KT_ARCHIVE_LOCK, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    close(dfd);
    if (fd < 0)
        return 0;
    int held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}
