/* command_archive.c - copies command outputs and failure details into the run folder. */
#include "archive/command_archive.h"
#include "archive/archive.h"
#include "kernel.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEPT_BYTES ((size_t)1 << 30)

int kt_command_archive_keep(const char *run_dir, const char *point_id, const char *arm,
                            const char *name, const char *src, const char *text)
{
    char dir[PATH_MAX];
    char *data = NULL;
    size_t len = text ? strlen(text) : 0;
    int rc = -1;
    if (strstr(point_id, "..") || strstr(arm, "/") || strstr(name, "/")) {
        kt_error_set("refusing to keep '%s/%s/%s' outside the run folder", point_id, arm, name);
        return -1;
    }
    int n = snprintf(dir, sizeof(dir), "%s/outputs/%s/%s", run_dir, point_id, arm);
    if (n < 0 || (size_t)n >= sizeof(dir)) {
        kt_error_set("the path of outputs for '%s' is too long", point_id);
        return -1;
    }
    if (kt_archive_mkdirs(dir) != 0)
        return -1;
    if (src && kt_read_file(&data, &len, src, MAX_KEPT_BYTES) != 0)
        goto done;
    rc = kt_archive_write(dir, name, src ? data : text, len);
done:
    free(data);
    return rc;
}

/* Calls 'each' with every plain entry name of 'dir' but "." and ".."; a missing 'dir' has
 * none. Stops at the first failure. */
static int each_entry(const char *dir, int (*each)(const char *name, void *ctx), void *ctx)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            rc = each(e->d_name, ctx);
    closedir(d);
    return rc;
}

typedef struct gather {
    const char *run_dir, *from_dir, *point_id, *arm;
} gather;

static int gather_file(const char *name, void *ctx)
{
    const gather *g = ctx;
    char src[PATH_MAX];
    int n =
        snprintf(src, sizeof(src), "%s/outputs/%s/%s/%s", g->from_dir, g->point_id, g->arm, name);
    if (n < 0 || (size_t)n >= sizeof(src))
        return kt_error_set("the path of outputs for '%s' is too long", g->point_id);
    return kt_command_archive_keep(g->run_dir, g->point_id, g->arm, name, src, NULL);
}

static int gather_arm(const char *arm, void *ctx)
{
    gather g = *(const gather *)ctx;
    char dir[PATH_MAX];
    g.arm = arm;
    snprintf(dir, sizeof(dir), "%s/outputs/%s/%s", g.from_dir, g.point_id, arm);
    return each_entry(dir, gather_file, &g);
}

int kt_command_archive_gather(const char *run_dir, const char *from_dir, const char *point_id)
{
    char dir[PATH_MAX];
    gather g = {run_dir, from_dir, point_id, NULL};
    int n = snprintf(dir, sizeof(dir), "%s/outputs/%s", from_dir, point_id);
    if (n < 0 || (size_t)n >= sizeof(dir))
        return kt_error_set("the path of outputs for '%s' is too long", point_id);
    return each_entry(dir, gather_arm, &g);
}
