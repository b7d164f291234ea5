/* main.c - the command table and the dispatcher. */
#include "cli/commands.h"
#include "cli/options.h"
#include "decide/sequential.h"
#include "measure/calibrate_arm.h"
#include "measure/calibrate_rates.h"
#include "util/suggest.h"
#include "util/version.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int cmd_help(int argc, char **argv);

/* Usage holds the positional arguments; the options come from options_table.c. */
static const kt_command commands[] = {
    {"run", cmd_run, "SPEC", "run an experiment, archive it, and exit with its verdict"},
    {"validate", cmd_validate, "SPEC...", "check specs without running them"},
    {"models", cmd_models, "", "list the model catalog"},
    {"kernels", cmd_kernels, "",
     "list ops, variants per backend, and their params (or what a plugin provides)"},
    {"show", cmd_show, "RESULT", "print the summary of an archived run"},
    {"compare", cmd_compare, "OLD NEW", "compare two runs of one experiment at two code states"},
    {"merge", cmd_merge, "SHARD_DIR...",
     "merge the shards of one run into one archive with one verdict"},
    {"slurm", cmd_slurm, "SPEC",
     "write (and submit) a Slurm job array that runs the shards, and a job that merges them"},
    {"report", cmd_report, "RESULT...",
     "write a self-contained HTML report (tables, forest plot, distributions) of archives"},
    {"history", cmd_history, "[RESULTS_DIR]",
     "an experiment's speedups across commits, with the changes marked"},
    {"env", cmd_env, "", "print the provenance a run would record"},
    {"help", cmd_help, "[COMMAND]", "show help for ktrial or one command"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

const kt_command *kt_command_find(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* "usage: ktrial NAME POSITIONAL [-o DIR] [--flag]...", the options from the table (a required
 * one without brackets). */
static void print_usage_line(FILE *out, const kt_command *cmd)
{
    size_t n;
    const kt_option *rows = kt_options_of(cmd->name, &n);
    fprintf(out, "usage: ktrial %s%s%s", cmd->name, cmd->usage[0] ? " " : "", cmd->usage);
    for (size_t i = 0; i < n; i++) {
        int required = kt_opt_required(&rows[i]);
        fprintf(out, " %s%s%s%s%s", required ? "" : "[",
                rows[i].alias ? rows[i].alias : rows[i].name, rows[i].arg ? " " : "",
                rows[i].arg ? rows[i].arg : "", required ? "" : "]");
    }
    fputc('\n', out);
}

void kt_command_print_help(const kt_command *cmd)
{
    print_usage_line(stdout, cmd);
    printf("\n%s\n", cmd->help);
    kt_options_print(stdout, cmd->name);
}

int kt_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

int kt_usage_error(const char *name, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    const kt_command *cmd = kt_command_find(name);
    if (cmd)
        print_usage_line(stderr, cmd);
    return KT_EXIT_USAGE;
}

static void print_overview(FILE *out)
{
    fprintf(out, "usage: ktrial <command> [options]\n\n"
                 "decide, with evidence, whether a candidate kernel should replace a baseline\n\n"
                 "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "   %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\n'ktrial help <command>' or 'ktrial <command> --help' for a command's options\n"
                 "exit codes: 0 keep/success, 1 reject/regression, 2 inconclusive, 64 usage,\n"
                 "65 bad input, 69 backend or memory unavailable, 70 internal failure, 74 i/o\n"
                 "error, 130 interrupted\n");
}

static int unknown_command(const char *name)
{
    const char *names[N_COMMANDS];
    for (size_t i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i].name;
    fprintf(stderr, "ktrial: '%s' is not a ktrial command. See 'ktrial --help'.\n", name);
    const char *guess = kt_suggest(name, names, N_COMMANDS);
    if (guess)
        fprintf(stderr, "\nThe most similar command is\n\t%s\n", guess);
    return KT_EXIT_USAGE;
}

/* An option before any command: only ktrial's own, which get the "did you mean" that a
 * command's options get. */
static int unknown_option(const char *name)
{
    static const char *const own[] = {"--help", "--version"};
    const char *guess = kt_suggest(name, own, sizeof(own) / sizeof(own[0]));
    if (guess)
        return kt_usage_error("help", "unknown option '%s'; did you mean '%s'?", name, guess);
    return kt_usage_error("help", "unknown option '%s'", name);
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2 || kt_wants_help(argc, argv)) {
        print_overview(stdout);
        return KT_EXIT_KEEP;
    }
    const kt_command *cmd = kt_command_find(argv[1]);
    if (!cmd)
        return unknown_command(argv[1]);
    kt_command_print_help(cmd);
    return KT_EXIT_KEEP;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stderr);
        return KT_EXIT_USAGE;
    }
    const char *name = argv[1];
    kt_plan_use_arm_costs(kt_calibration_arms); /* plans measure the arms on this host */
    kt_plan_use_rates(kt_calibration_get);      /* ... and the inputs' and references' rates */
    kt_spec_use_design_check(kt_design_check);  /* validation asks whether the looks decide */
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_overview(stdout);
        return KT_EXIT_KEEP;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("ktrial %s (commit %s%s)\n", kt_version(), kt_build_commit(),
               kt_build_dirty() ? ", dirty" : "");
        return KT_EXIT_KEEP;
    }
    if (name[0] == '-')
        return unknown_option(name);
    const kt_command *cmd = kt_command_find(name);
    if (!cmd)
        return unknown_command(name);
    if (kt_wants_help(argc - 1, argv + 1) && cmd->fn != cmd_help) {
        kt_command_print_help(cmd);
        return KT_EXIT_KEEP;
    }
    return cmd->fn(argc - 1, argv + 1);
}
