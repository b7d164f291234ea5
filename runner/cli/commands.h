/* commands.h - the commands' entry points (declared from command_table.h's rows), the exit
 * codes they return, and their usage lines (printed by options.c). */
#ifndef KT_COMMANDS_H
#define KT_COMMANDS_H

#include "cli/command_table.h"
#include "run/exit_code.h"

#include <stddef.h>

/* int cmd_NAME(int argc, char **argv) for every row of command_table.h; argv[0] is the name. */
#define KT_DECLARE_COMMAND(name, usage, help) int cmd_##name(int argc, char **argv);
KT_COMMAND_TABLE(KT_DECLARE_COMMAND)
#undef KT_DECLARE_COMMAND

/* Prints "usage: ktrial NAME USAGE" and the help line to stdout. */
void kt_command_print_help(const kt_command *cmd);
/* True when argv (past argv[0]) holds -h or --help. */
int kt_wants_help(int argc, char **argv);
/* Prints "usage: ktrial NAME USAGE" to stderr and returns KT_EXIT_USAGE. */
int kt_usage_error(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
