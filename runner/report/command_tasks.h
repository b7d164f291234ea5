/* command_tasks.h - what 'ktrial show' adds for command trials. */
#ifndef KT_COMMAND_TASKS_H
#define KT_COMMAND_TASKS_H

#include <cjson/cJSON.h>
#include <stdio.h>

/* For a result of op 'command' with outputs: per candidate and point, the (at most five) tasks
 * whose outputs differ most from their reference, worst first, with the kept output's path
 * under 'dir'. Prints nothing for other results. */
void kt_print_command_tasks(FILE *out, const cJSON *doc, const char *dir);

#endif
