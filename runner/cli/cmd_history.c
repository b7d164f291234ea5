/* cmd_history.c - 'ktrial history [RESULTS_DIR] --experiment NAME [-o FILE] [--json]'. */
#include "cli/commands.h"
#include "cli/options.h"
#include "report/writers.h"
#include "util/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_history(int argc, char **argv)
{
    const char *dir = "results", *experiment = NULL, *out = NULL;
    int json = 0, dir_given = 0;
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    int more;
    kt_opt_init(&p, "history", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--experiment")) {
            experiment = v;
        } else if (kt_opt_is(opt, "--output")) {
            out = v;
        } else if (kt_opt_is(opt, "--json")) {
            json = 1;
        } else if (!dir_given) {
            dir = v;
            dir_given = 1;
        } else {
            return kt_usage_error("history", "unexpected argument '%s'", v);
        }
    }
    if (more < 0)
        return KT_EXIT_USAGE;
    if (!experiment)
        return kt_usage_error("history", "--experiment NAME is required");
    kt_history h;
    if (kt_history_load(&h, dir, experiment) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_DATAERR;
    }
    int rc = 0;
    kt_output o = {.history = &h, .experiment = experiment};
    if (h.skipped) /* it may be of this experiment: say that it was left out */
        fprintf(stderr, "warning: %zu archive%s under '%s' left out, unreadable (first %s)\n",
                h.skipped, h.skipped == 1 ? "" : "s", dir, h.first_skip);
    if (h.unfinished)
        fprintf(stderr,
                "note: %zu archive%s of '%s' left out, not complete (interrupted, over budget, "
                "killed or still running)\n",
                h.unfinished, h.unfinished == 1 ? "" : "s", experiment);
    if (h.n == 0) {
        fprintf(stderr, "error: no complete archive of experiment '%s' under '%s'\n", experiment,
                dir);
        rc = KT_EXIT_DATAERR;
    } else if (out) {
        if (kt_write_file("history-html", out, &o, 0) < 0) {
            fprintf(stderr, "error: %s\n", kt_error_last());
            rc = KT_EXIT_IOERR;
        } else {
            printf("history: %s (%zu archives)\n", out, h.n);
        }
    } else {
        kt_write(json ? "history-json" : "history", stdout, &o);
    }
    kt_history_free(&h);
    return rc;
}
