/* process_helper.c - where the exec helper kt_exec is (kernels/process/exec/kt_exec.c), and
 * reading its report. kt_process_run starts a command through it so that the command's peak
 * RSS is its own: Linux folds the peak of the address space that exec replaces (ktrial's,
 * when ktrial spawns the command itself) into the new program's. Without the helper the
 * peak is not measured (NaN), never ktrial's figure passed off as the command's. */
#include "process_helper.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char helper[PATH_MAX];
static pthread_once_t helper_once = PTHREAD_ONCE_INIT;

/* KT_EXEC_HELPER when set (empty: no helper), else kt_exec next to this program (the build
 * folder) or in ../libexec/ktrial/ from it (an installed ktrial). */
static void find_helper(void)
{
    const char *env = getenv("KT_EXEC_HELPER");
    if (env) {
        if (env[0] && access(env, X_OK) == 0)
            snprintf(helper, sizeof(helper), "%s", env);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return;
    *slash = '\0';
    static const char *const places[] = {"%s/kt_exec", "%s/../libexec/ktrial/kt_exec"};
    for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), places[i], self);
        if (strlen(path) < sizeof(helper) && access(path, X_OK) == 0) {
            snprintf(helper, sizeof(helper), "%s", path);
            return;
        }
    }
}

const char *kt_process_helper(void)
{
    pthread_once(&helper_once, find_helper);
    return helper[0] ? helper : NULL;
}

int kt_process_helper_read(kt_process_result *r, int fd)
{
    char line[256];
    ssize_t n, got = 0;
    while (got < (ssize_t)sizeof(line) - 1 &&
           (n = read(fd, line + got, sizeof(line) - 1 - (size_t)got)) > 0)
        got += n;
    line[got > 0 ? got : 0] = '\0';
    long long wall, user_us, sys_us;
    long rss, floor;
    int err;
    if (sscanf(line, "exec-failed %d", &err) == 1) {
        r->spawn_failed = 1;
        r->exit_code = err;
        return 1;
    }
    if (sscanf(line, "ok %lld %lld %lld %ld %ld", &wall, &user_us, &sys_us, &rss, &floor) != 5)
        return 0;
    r->wall_ns = (double)wall;
    r->user_s = (double)user_us * 1e-6;
    r->sys_s = (double)sys_us * 1e-6;
    r->max_rss_kib = (double)rss;
    /* the fold at exec uses the kernel's approximate counters of the forked copy: a peak
     * can read a little under the helper's own resident set */
    r->rss_floor_kib = floor > 0 && floor < rss ? (double)floor : (double)rss;
    return 1;
}
