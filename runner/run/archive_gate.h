/* archive_gate.h - the check every reader of an archive runs before it uses it (show, report,
 * compare, merge): archive/archive_check.h's, its problems printed, and the archive refused
 * (exit 65) unless --force. */
#ifndef KT_RUN_ARCHIVE_GATE_H
#define KT_RUN_ARCHIVE_GATE_H

#include "archive/archive_check.h"

/* Loads and checks the archive at 'path' into 'a' (kt_archive_close it in every case). Prints
 * each problem on stderr, as errors or, with 'force', warnings. Returns 0 when the archive may
 * be used, else the exit code (65) after saying what failed. */
int kt_archive_gate(kt_archive *a, const char *path, int force);

#endif
