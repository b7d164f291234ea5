/* command_table.c - the commands' names, positional arguments and help, from the one list in
 * command_table.h. */
#include "cli/command_table.h"

#include <string.h>

#define KT_COMMAND_ROW(name, usage, help) {#name, usage, help},

static const kt_command commands[] = {KT_COMMAND_TABLE(KT_COMMAND_ROW)};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

const kt_command *kt_command_find(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

const kt_command *kt_commands(size_t *n)
{
    *n = N_COMMANDS;
    return commands;
}
