/* command_archive.h - what command trials keep in the run folder for review:
 * outputs/<point>/<arm>/<task>.<ext> (the first output of each task, and every failing one)
 * and <task>.<call>.failure.txt (the command, its status and the tail of its stderr). */
#ifndef KT_COMMAND_ARCHIVE_H
#define KT_COMMAND_ARCHIVE_H

/* Copies 'src' (or writes 'text' when 'src' is NULL) to
 * 'run_dir'/outputs/'point_id'/'arm'/'name', creating the folders. Returns 0 or -1 with
 * kt_error_last() set. */
int kt_command_archive_keep(const char *run_dir, const char *point_id, const char *arm,
                            const char *name, const char *src, const char *text);

/* Copies what 'from_dir' (a shard's run folder) kept for 'point_id' into 'run_dir' (the
 * merged one): every outputs/'point_id'/<arm>/<file>. A shard without them is not an error.
 * Returns 0 or -1 with kt_error_last() set. */
int kt_command_archive_gather(const char *run_dir, const char *from_dir, const char *point_id);

#endif
