/* cmd_verify.c - 'ktrial verify ARCHIVE...': every archive checked as the readers check it
 * (archive/archive_check.h: the seal against the files, every verdict decided again from the
 * pairs and samples under the archived spec, the candidates and the run aggregated again), each
 * disagreement listed on a line of its own, as git fsck lists what it finds. Exit 0 only when
 * every archive agrees with itself, else 65. */
#include "archive/archive_check.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "run/exit_code.h"
#include "util/json.h"

#include <stdio.h>

/* Checks one archive; prints its problems or one line saying what agreed. Returns its count
 * of problems (1 when it cannot be read). */
static size_t verify_one(const char *path, int quiet)
{
    kt_archive a;
    if (kt_archive_check(&a, path) < 0) {
        printf("%s: cannot be read as a ktrial result: %s\n", path, kt_error_last());
        kt_archive_close(&a);
        return 1;
    }
    for (size_t i = 0; i < a.problems.n; i++)
        printf("%s: %s\n", a.dir, a.problems.lines[i]);
    size_t n = a.problems.n;
    if (n == 0 && !quiet) {
        const cJSON *files = kt_json_at_path(a.doc, "seal.files");
        printf("%s: ok: %zu point%s and %zu candidate verdict%s decided again from the pairs, "
               "%d sealed file%s unchanged\n",
               a.dir, a.run.n_points, a.run.n_points == 1 ? "" : "s", a.run.n_cands,
               a.run.n_cands == 1 ? "" : "s", cJSON_GetArraySize(files),
               cJSON_GetArraySize(files) == 1 ? "" : "s");
    }
    kt_archive_close(&a);
    return n;
}

int cmd_verify(int argc, char **argv)
{
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    int more, quiet = 0, n = 0;
    size_t problems = 0, failed = 0;
    kt_opt_init(&p, "verify", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--quiet")) {
            quiet = 1;
        } else {
            size_t found = verify_one(v, quiet);
            problems += found;
            failed += found > 0;
            n++;
        }
    }
    if (more < 0)
        return KT_EXIT_USAGE;
    if (n == 0)
        return kt_usage_error("verify", "no archive given");
    if (failed)
        fprintf(stderr, "error: %zu of %d archive%s fail%s verification (%zu problem%s)\n", failed,
                n, n == 1 ? "" : "s", failed == 1 ? "s" : "", problems, problems == 1 ? "" : "s");
    return failed ? KT_EXIT_DATAERR : 0;
}
