/* folder.c - choosing and locking the run folder (see folder.h). */
#include "run/folder.h"

#include "archive/archive.h"
#include "run/exit_code.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The folder's lock, held until ktrial exits: a second run on it is refused. */
static int lock_folder(kt_run *st)
{
    int fd = kt_archive_lock(st->dir);
    if (fd == KT_ARCHIVE_BUSY) {
        fprintf(stderr, "error: %s; use another folder\n", kt_error_last());
        return KT_EXIT_DATAERR;
    }
    if (fd < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    return 0;
}

/* Nothing in 'dir' but the lock. */
static int folder_empty(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int empty = d != NULL;
    while (d && empty && (e = readdir(d)))
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                strcmp(e->d_name, KT_ARCHIVE_LOCK) == 0;
    if (d)
        closedir(d);
    return empty;
}

/* A run writes result.json (status running) before its first point and points.jsonl after
 * it: a run stopped during its first point has only the first. */
static int folder_holds_run(const char *dir)
{
    static const char *const files[] = {"points.jsonl", "result.json"};
    char probe[PATH_MAX];
    struct stat sb;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(probe, sizeof(probe), "%s/%s", dir, files[i]);
        if (lstat(probe, &sb) == 0)
            return 1;
    }
    return 0;
}

void kt_run_stamp(char *out, size_t len, time_t t)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y%m%dT%H%M%SZ", &tm);
}

int kt_run_choose_folder(kt_run *st)
{
    if (st->opt.resume_dir) {
        snprintf(st->dir, sizeof(st->dir), "%s", st->opt.resume_dir);
        struct stat sb;
        int missing = stat(st->dir, &sb) != 0;
        if (missing || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "error: cannot resume '%s': %s\n", st->dir,
                    !missing          ? "not a folder"
                    : errno == ENOENT ? "no such folder"
                                      : strerror(errno));
            return KT_EXIT_DATAERR;
        }
        return lock_folder(st);
    }
    if (!kt_archive_name_ok(st->spec->name)) { /* the schema checks it too: never trust one */
        fprintf(stderr, "error: spec name '%s' is not [a-z0-9._-]+ (not '.' or '..')\n",
                st->spec->name);
        return KT_EXIT_DATAERR;
    }
    if (st->opt.out_dir) {
        snprintf(st->dir, sizeof(st->dir), "%s", st->opt.out_dir);
    } else {
        char stamp[32];
        kt_run_stamp(stamp, sizeof(stamp), st->started);
        snprintf(st->dir, sizeof(st->dir), "results/%s-%s-%s%s", stamp, st->spec->name,
                 st->git.available ? st->git.short_id : "nogit",
                 st->git.available && st->git.dirty ? "-dirty" : "");
    }
    if (kt_archive_mkdirs(st->dir) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    int rc = lock_folder(st);
    if (rc)
        return rc;
    if (folder_holds_run(st->dir)) {
        fprintf(stderr, "error: '%s' already holds a run; continue it with --resume '%s'\n",
                st->dir, st->dir);
        return KT_EXIT_DATAERR;
    }
    if (!folder_empty(st->dir)) {
        fprintf(stderr,
                "error: '%s' is not empty and holds no run; give -o a new or empty folder\n",
                st->dir);
        return KT_EXIT_DATAERR;
    }
    return 0;
}
