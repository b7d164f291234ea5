/* folder.h - the run folder: which it is (-o DIR, --resume DIR, or a new one under results/),
 * and its lock, held until ktrial exits so that a second run on it is refused. */
#ifndef KT_RUN_FOLDER_H
#define KT_RUN_FOLDER_H

#include "run/run.h"

#include <stddef.h>
#include <time.h>

/* Sets st->dir and locks it: --resume's folder (which must exist), else -o's or a new
 * results/<stamp>-<name>-<commit>[-dirty], created, which must hold no run and nothing else.
 * 0, or the exit code after printing the error. */
int kt_run_choose_folder(kt_run *st);

/* 't' as a folder name's stamp, UTC: "20260102T030405Z". */
void kt_run_stamp(char *out, size_t len, time_t t);

#endif
