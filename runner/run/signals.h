/* signals.h - Ctrl-C and SIGTERM during a run. Before the run has a folder a signal stops
 * ktrial at once, saying nothing was written; from then on the first stops the run after the
 * current pair (the run stays resumable) and the second stops the worker now. */
#ifndef KT_RUN_SIGNALS_H
#define KT_RUN_SIGNALS_H

#include <signal.h>

/* 0 none yet, 1 after the first signal, 2 after the second (read by the trial loops). */
extern volatile sig_atomic_t kt_run_got_signal;

/* Installs the handler for the time before the run has a folder; the handlers it replaces
 * go to 'old_int' and 'old_term'. */
void kt_run_signals_before_run(struct sigaction *old_int, struct sigaction *old_term);

/* Installs the handler that stops the run between pairs. */
void kt_run_signals_during_run(void);

/* Puts back the handlers kt_run_signals_before_run replaced. */
void kt_run_signals_restore(const struct sigaction *old_int, const struct sigaction *old_term);

#endif
