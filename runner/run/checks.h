/* checks.h - what the engine checks before it takes a folder, each printing its own error:
 * the backend (built in, available, and the notes on libraries and 'auto'), the git state
 * (--require-clean, a binary older than the code), --quick's cap, the memory a point needs,
 * and the machine's load at the start. */
#ifndef KT_RUN_CHECKS_H
#define KT_RUN_CHECKS_H

#include "run/run.h"
#include "util/diag.h"

/* Prints and empties 'diag' (the spec's warnings, git's notes). */
void kt_run_flush_diag(kt_diag *diag);

/* The spec's backend is built in and available here. 0, or the exit code. */
int kt_run_check_backend(const kt_spec *spec);

/* Collects st->git from the spec's folder (notes into 'diag', printed), warns of a stale
 * binary, and refuses a dirty tree under --require-clean. 0, or the exit code. */
int kt_run_check_git(kt_run *st, kt_diag *diag);

/* --quick's cap still lets a point decide. 0, or the exit code. */
int kt_run_check_quick(const kt_run *st);

/* The largest point of the shard fits the memory left (a warning under --force). 0, or the
 * exit code. */
int kt_run_check_memory(const kt_run *st);

/* The warning of a machine busy at the start, for a load average 'load' on 'cores' online
 * cores with 'threads' of the run's own (0: the arms' programs choose): written to 'buf' with
 * what it means for the verdicts and what to do, and its length returned; 0 (and "") when the
 * load is within the cores the run leaves free plus one. */
size_t kt_run_load_message(char *buf, size_t len, double load, long cores, int threads);

/* Warns when the machine is busy at the start, or the spec asks for more threads than cores. */
void kt_run_warn_load(const kt_spec *spec);

#endif
