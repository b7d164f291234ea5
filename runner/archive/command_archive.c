/* command_archive.c - copies command outputs and failure details into the run folder. */
#include "archive/command_archive.h"
#include "archive/archive.h"
#include "kernel.h"

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
