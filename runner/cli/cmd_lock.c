/* cmd_lock.c - 'ktrial lock SPEC': fix an experiment's limits before it runs. Writes SPEC.lock
 * beside the spec (run/limits.h: the sha256 of its decision-relevant parts, one per key path,
 * the time and the git commit), to be committed before any run; 'run' then refuses the spec
 * once those parts change. A lock that still matches is left as it is; --check only compares. */
#include "cli/commands.h"
#include "cli/options.h"
#include "run/exit_code.h"
#include "run/limits.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int cmd_lock(int argc, char **argv)
{
    kt_opt_parser p;
    const kt_option *opt;
    const char *v, *spec_path = NULL;
    int more, check = 0;
    kt_opt_init(&p, "lock", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--check")) {
            check = 1;
            continue;
        }
        if (spec_path)
            return kt_usage_error("lock", "unexpected argument '%s' (one spec)", v);
        spec_path = v;
    }
    if (more < 0)
        return KT_EXIT_USAGE;
    if (!spec_path)
        return kt_usage_error("lock", "no spec given");
    kt_diag diag;
    kt_spec *spec = NULL;
    kt_spec_options so = {NULL, 1}; /* a lock fixes limits; the budget is checked at run */
    kt_diag_init(&diag);
    if (kt_spec_load(&spec, spec_path, &so, &diag) < 0 || diag.n_errors) {
        kt_diag_print(&diag, stderr);
        kt_diag_free(&diag);
        kt_spec_free(spec);
        return KT_EXIT_DATAERR;
    }
    kt_diag_free(&diag);
    char path[PATH_MAX], *changed = NULL;
    cJSON *old = NULL, *now = kt_limits_lock_new(spec, time(NULL));
    int rc = KT_EXIT_KEEP, have = -1;
    if (!now || kt_limits_lock_path(path, sizeof(path), spec_path) < 0 ||
        (have = kt_limits_lock_read(&old, path)) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        rc = have < 0 && now ? KT_EXIT_DATAERR : KT_EXIT_SOFTWARE;
        goto done;
    }
    size_t n = have == 0 ? kt_limits_lock_diff(&changed, old, now) : 1;
    if (check && n) {
        if (have == 0)
            fprintf(stderr, "error: '%s' no longer matches its lock '%s': changed %s\n", spec_path,
                    path, changed ? changed : "?");
        else
            fprintf(stderr, "error: '%s' has no lock ('%s')\n", spec_path, path);
        rc = KT_EXIT_DATAERR;
        goto done;
    }
    if (have == 0 && n == 0) {
        char when[33];
        printf("%s: unchanged since it was locked at %s; '%s' left as it is\n", spec_path,
               kt_json_get_str(old, "locked_utc", when, sizeof(when)), path);
        goto done;
    }
    if (kt_limits_lock_write(path, now) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        rc = KT_EXIT_IOERR;
        goto done;
    }
    char sha[65];
    printf("locked: %s (sha256 %.16s, %d keys)\n", path,
           kt_json_get_str(now, "sha256", sha, sizeof(sha)),
           cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(now, "keys")));
    if (have == 0)
        printf("relocked: changed %s\n", changed ? changed : "?");
    printf("commit it before the first run: git add %s\n", path);
done:
    free(changed);
    cJSON_Delete(old);
    cJSON_Delete(now);
    kt_spec_free(spec);
    return rc;
}
