/* cmd_report.c - 'ktrial report RESULT... [-o FILE]': the HTML report of one or more
 * archives of one experiment. */
#include "cli/commands.h"
#include "cli/options.h"
#include "report/writers.h"
#include "util/json.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_report(int argc, char **argv)
{
    const char *out = NULL;
    kt_report_input *in = calloc((size_t)argc, sizeof(*in));
    size_t n = 0;
    int rc = 0;
    if (!in) {
        fprintf(stderr, "error: out of memory\n");
        return KT_EXIT_SOFTWARE;
    }
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    int more = 0, force = 0;
    kt_opt_init(&p, "report", argc, argv);
    while (rc == 0 && (more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--output")) {
            out = v;
        } else if (kt_opt_is(opt, "--force")) {
            force = 1;
        } else if (kt_report_load(&in[n++], v) < 0) {
            fprintf(stderr, "error: '%s': %s\n", v, kt_error_last());
            rc = KT_EXIT_DATAERR;
        }
    }
    /* an archive that fails its check is refused, as show refuses it, unless --force */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        kt_problems_print(stderr, in[i].dir, &in[i].problems, force);
        if (in[i].problems.n && !force)
            rc = KT_EXIT_DATAERR;
    }
    if (rc == 0 && more < 0)
        rc = KT_EXIT_USAGE;
    if (rc == 0 && n == 0)
        rc = kt_usage_error("report", "no result given");
    for (size_t i = 1; rc == 0 && i < n; i++) {
        char a[128], b[128];
        kt_json_get_str(kt_json_at_path(in[0].doc, "spec.parsed"), "name", a, sizeof(a));
        kt_json_get_str(kt_json_at_path(in[i].doc, "spec.parsed"), "name", b, sizeof(b));
        if (strcmp(a, b) != 0) {
            fprintf(stderr,
                    "error: '%s' is experiment '%s' but '%s' is '%s'; a report shows "
                    "one experiment\n",
                    in[0].dir, a, in[i].dir, b);
            rc = KT_EXIT_DATAERR;
        }
    }
    char path[PATH_MAX + 16];
    if (rc == 0) {
        if (out)
            snprintf(path, sizeof(path), "%s", out);
        else if (n == 1)
            snprintf(path, sizeof(path), "%s/report.html", in[0].dir);
        else
            snprintf(path, sizeof(path), "report.html");
        kt_output o = {.archives = in, .n_archives = n};
        if (kt_write_file("html", path, &o, 0) < 0) {
            fprintf(stderr, "error: %s\n", kt_error_last());
            rc = KT_EXIT_IOERR;
        } else {
            printf("report: %s (%zu archive%s)\n", path, n, n == 1 ? "" : "s");
        }
    }
    for (size_t i = 0; i < n; i++)
        kt_report_input_free(&in[i]);
    free(in);
    return rc;
}
