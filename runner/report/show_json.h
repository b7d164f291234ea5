/* show_json.h - 'ktrial show --json': an archived run's state and verdicts as one document
 * (schemas/show.schema.json). */
#ifndef KT_SHOW_JSON_H
#define KT_SHOW_JSON_H

#include "report/summary.h"

#include <stdio.h>

/* Prints the document of the run in 'dir' ('run' read from its result.json, 'facts' its
 * state, 'exit_code' the recorded one or -1, 'decided' 0 for a run that never reached a
 * decision) to 'out'. Returns 0 or -1 with the message set. */
int kt_show_json(FILE *out, const char *dir, const kt_run_result *run,
                 const kt_summary_facts *facts, int exit_code, int decided);

#endif
