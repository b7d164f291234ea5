/* main.c - the dispatcher: ktrial's own options (--help, --version), the 'help' command, and
 * the call of each command of command_table.h. */
#include "archive/archive_check.h"
#include "cli/commands.h"
#include "cli/docgen.h"
#include "cli/options.h"
#include "decide/sequential.h"
#include "measure/calibrate_arm.h"
#include "measure/calibrate_rates.h"
#include "util/suggest.h"
#include "util/version.h"

#include <stdio.h>
#include <string.h>

/* The entry point of each command of command_table.h. */
static const struct {
    const char *name;
    int (*fn)(int argc, char **argv); /* argv[0] is the command name */
} dispatch[] = {
#define KT_DISPATCH_ROW(name, usage, help) {#name, cmd_##name},
    KT_COMMAND_TABLE(KT_DISPATCH_ROW)
#undef KT_DISPATCH_ROW
};

static void print_overview(FILE *out)
{
    fprintf(out, "usage: ktrial <command> [options]\n\n"
                 "decide, with evidence, whether a candidate kernel should replace a baseline\n\n"
                 "commands:\n");
    size_t n;
    const kt_command *commands = kt_commands(&n);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "   %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\n'ktrial help <command>' or 'ktrial <command> --help' for a command's options\n"
                 "exit codes: 0 keep/success, 1 reject/regression, 2 inconclusive, 64 usage,\n"
                 "65 bad input, 69 backend or memory unavailable, 70 internal failure, 74 i/o\n"
                 "error, 130 interrupted\n");
}

static int unknown_command(const char *name)
{
    size_t n;
    const kt_command *commands = kt_commands(&n);
    const char *names[sizeof(dispatch) / sizeof(dispatch[0])];
    for (size_t i = 0; i < n; i++)
        names[i] = commands[i].name;
    fprintf(stderr, "ktrial: '%s' is not a ktrial command. See 'ktrial --help'.\n", name);
    const char *guess = kt_suggest(name, names, n);
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

int cmd_help(int argc, char **argv)
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
    kt_archive_check_use_exit_codes(kt_run_ended_exit_code); /* readers check exit codes */
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_overview(stdout);
        return KT_EXIT_KEEP;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("ktrial %s (commit %s%s)\n", kt_version(), kt_build_commit(),
               kt_build_dirty() ? ", dirty" : "");
        return KT_EXIT_KEEP;
    }
    /* unlisted: what the build installs as ktrial(1) and the completion scripts */
    if (strcmp(name, "--man") == 0) {
        kt_docgen_man(stdout);
        return KT_EXIT_KEEP;
    }
    if (strcmp(name, "--completion") == 0) {
        if (argc == 3 && kt_docgen_completion(stdout, argv[2]) == 0)
            return KT_EXIT_KEEP;
        return kt_usage_error("help", "--completion takes a shell: bash or zsh");
    }
    if (name[0] == '-')
        return unknown_option(name);
    const kt_command *cmd = kt_command_find(name);
    if (!cmd)
        return unknown_command(name);
    if (kt_wants_help(argc - 1, argv + 1) && strcmp(cmd->name, "help") != 0) {
        kt_command_print_help(cmd);
        return KT_EXIT_KEEP;
    }
    size_t i = 0;
    while (strcmp(dispatch[i].name, cmd->name) != 0) /* every command has its row */
        i++;
    return dispatch[i].fn(argc - 1, argv + 1);
}
