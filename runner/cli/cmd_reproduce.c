/* cmd_reproduce.c - 'ktrial reproduce ARCHIVE': rebuild the code state the archive recorded
 * (its commit and git.diff, through libgit2, with the recorded build options), run its spec
 * again on this machine and compare the two runs; the work is run/reproduce.c's. Exit 0 when
 * reproduced, 1 when the runs differ. */
#include "cli/commands.h"
#include "cli/options.h"
#include "run/reproduce.h"

#include <string.h>

int cmd_reproduce(int argc, char **argv)
{
    kt_reproduce_options o;
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    int more;
    memset(&o, 0, sizeof(o));
    kt_opt_init(&p, "reproduce", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--output"))
            o.out_dir = v;
        else if (kt_opt_is(opt, "--keep"))
            o.keep = 1;
        else if (!o.archive)
            o.archive = v;
        else
            return kt_usage_error("reproduce", "unexpected argument '%s' (one archive)", v);
    }
    if (more < 0)
        return KT_EXIT_USAGE;
    if (!o.archive)
        return kt_usage_error("reproduce", "no archive given");
    return kt_reproduce(&o);
}
