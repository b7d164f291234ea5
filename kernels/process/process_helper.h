/* process_helper.h - the exec helper kt_exec, through which kt_process_run starts a command
 * so that its peak RSS is the command's own (process_helper.c says why). */
#ifndef KT_PROCESS_HELPER_H
#define KT_PROCESS_HELPER_H

#include "process.h"

/* The helper's path, or NULL where there is none (KT_EXEC_HELPER empty, or not installed
 * beside this program). */
const char *kt_process_helper(void);

/* Reads the helper's report from 'fd' (the read end of its fd 3, after it exited) into 'r':
 * wall time, CPU times, peak RSS and floor of the command, or spawn_failed with the errno of
 * a failed exec. Returns 1 when a report was read, 0 when none (the helper was killed). */
int kt_process_helper_read(kt_process_result *r, int fd);

#endif
