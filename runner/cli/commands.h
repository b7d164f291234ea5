/* commands.h - the command table's entries and the exit codes they return. */
#ifndef KT_COMMANDS_H
#define KT_COMMANDS_H

#include <stddef.h>

/* Exit codes (sysexits.h numbering for the errors); documented in README.md. */
enum {
    KT_EXIT_KEEP = 0,         /* every candidate kept, or success */
    KT_EXIT_REJECT = 1,       /* some candidate rejected; compare found a regression */
    KT_EXIT_INCONCLUSIVE = 2, /* nothing rejected, something undecided */
    KT_EXIT_USAGE = 64,
    KT_EXIT_DATAERR = 65,
    KT_EXIT_UNAVAILABLE = 69,
    KT_EXIT_SOFTWARE = 70,
    KT_EXIT_IOERR = 74,
    KT_EXIT_INTERRUPTED = 130
};

struct kt_run_result;
/* The exit code of a finished run: 70 when a point could not be measured, else by verdict. */
int kt_run_exit_code(const struct kt_run_result *run);
/* The options a resume of a run must repeat, as it was run: " --shard I/N --quick" (each only
 * where it applies), or "". Returns 'buf'. */
const char *kt_resume_flags(char *buf, size_t len, int shard_index, int shard_count, int quick);

typedef struct kt_command {
    const char *name;
    int (*fn)(int argc, char **argv); /* argv[0] is the command name */
    const char *usage;                /* the positional arguments: "SPEC..." */
    const char *help;                 /* one line */
} kt_command;

int cmd_kernels(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_env(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_slurm(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_history(int argc, char **argv);

/* The table, for 'help' and --help handling inside commands. */
const kt_command *kt_command_find(const char *name);
/* Prints "usage: ktrial NAME USAGE" and the help line to stdout. */
void kt_command_print_help(const kt_command *cmd);
/* True when argv (past argv[0]) holds -h or --help. */
int kt_wants_help(int argc, char **argv);
/* Prints "usage: ktrial NAME USAGE" to stderr and returns KT_EXIT_USAGE. */
int kt_usage_error(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
