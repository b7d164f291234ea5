/* signals.c - the run's signal handlers: before the run has a folder, and while it measures
 * (see signals.h). Each handler writes its line with write(2), which is async-signal-safe. */
#include "run/signals.h"

#include <string.h>
#include <unistd.h>

volatile sig_atomic_t kt_run_got_signal;

/* Acknowledged at once (write(2) is async-signal-safe): the first stops the run after the
 * current pair, the second stops the worker now. */
static void on_signal(int sig)
{
    (void)sig;
    static const char first[] = "\ninterrupt: finishing the current pair; Ctrl-C again to stop "
                                "now\n";
    static const char second[] = "\ninterrupt: stopping the worker now\n";
    if (kt_run_got_signal == 0) {
        kt_run_got_signal = 1;
        if (write(STDERR_FILENO, first, sizeof(first) - 1) < 0)
            return;
    } else if (kt_run_got_signal == 1) {
        kt_run_got_signal = 2;
        if (write(STDERR_FILENO, second, sizeof(second) - 1) < 0)
            return;
    }
}

/* ktrial's own pid: the forked children of the plan's calibration inherit the handler below,
 * and a Ctrl-C reaches the whole process group, so only ktrial itself speaks. */
static volatile pid_t run_pid;

/* Before the run has a folder (the spec's check, which prices the plan by calling each arm,
 * can take a while): say that nothing was written, then die by the signal as before. */
static void on_signal_before_run(int sig)
{
    static const char msg[] = "\ninterrupt: stopped before the run began; nothing was written\n";
    if (getpid() == run_pid && write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        /* nothing to do: the exit below says it by the signal */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void set_signals(void (*handler)(int), struct sigaction *old_int, struct sigaction *old_term)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigaction(SIGINT, &sa, old_int);
    sigaction(SIGTERM, &sa, old_term);
}

void kt_run_signals_before_run(struct sigaction *old_int, struct sigaction *old_term)
{
    run_pid = getpid();
    set_signals(on_signal_before_run, old_int, old_term);
}

void kt_run_signals_during_run(void)
{
    set_signals(on_signal, NULL, NULL);
}

void kt_run_signals_restore(const struct sigaction *old_int, const struct sigaction *old_term)
{
    sigaction(SIGINT, old_int, NULL);
    sigaction(SIGTERM, old_term, NULL);
}
