/* commands.h - the commands' entry points (listed in command_table.h), the exit codes they
 * return, and their usage lines (printed by options.c). */
#ifndef KT_COMMANDS_H
#define KT_COMMANDS_H

#include "cli/command_table.h"
#include "run/exit_code.h"

#include <stddef.h>

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

/* Prints "usage: ktrial NAME USAGE" and the help line to stdout. */
void kt_command_print_help(const kt_command *cmd);
/* True when argv (past argv[0]) holds -h or --help. */
int kt_wants_help(int argc, char **argv);
/* Prints "usage: ktrial NAME USAGE" to stderr and returns KT_EXIT_USAGE. */
int kt_usage_error(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
