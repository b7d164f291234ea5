/* process.h - the process backend: runs one command as a child process, never through a
 * shell, and reports what it cost.
 *
 * kt_process_run spawns argv[0] (looked up on PATH) with posix_spawnp in a process group of
 * its own, so a timeout kills the command and everything it started, through the exec helper
 * kt_exec where it is found (process_helper.h), which reports the rusage of the command itself
 * (user and system CPU time, and a peak RSS that is the command's alone), and keeps the first
 * KT_PROCESS_STDOUT_MAX bytes of stdout and the last KT_PROCESS_STDERR_TAIL bytes of stderr.
 * The op 'command' and its variant 'exec' make the backend visible to the registry; the
 * command trials (runner/arm/command/) call kt_process_run directly. */
#ifndef KT_PROCESS_H
#define KT_PROCESS_H

#include "../kernel.h"

#include <signal.h>
#include <stddef.h>

#define KT_PROCESS_STDOUT_MAX  (1 << 20)
#define KT_PROCESS_STDERR_TAIL 4096

extern const kt_backend_iface kt_backend_process;
extern const kt_backend_caps kt_backend_process_caps;
extern const kt_op kt_op_command;
extern const kt_variant kt_variant_process_exec;
extern const kt_op kt_op_service;
extern const kt_variant kt_variant_process_serve;

/* What to run: argv (NULL-terminated), extra environment entries "NAME=value" added to (and
 * overriding) the parent's, a working directory (NULL: the parent's), a timeout (<= 0: none). */
typedef struct kt_process_spec {
    char *const *argv;
    char *const *env;
    size_t n_env;
    const char *cwd;
    double timeout_s;
    /* when it reaches 2 (a second Ctrl-C), the group is killed at once; may be NULL */
    volatile sig_atomic_t *cancel;
    /* 1: once the command exits, what it left running in its process group is killed (a
     * timed call is its whole group: a process left behind would run on into the next calls);
     * 0: left alone (a setup that starts a server) */
    int end_group;
} kt_process_spec;

typedef struct kt_process_result {
    int exited; /* 1: exited with exit_code; 0: killed by term_signal */
    int exit_code;
    int term_signal;
    int timed_out;        /* 1 when ktrial killed the group after timeout_s */
    int spawn_failed;     /* 1 when the command could not be started (errno in exit_code) */
    int cancelled;        /* 1 when *cancel reached 2 and the group was killed */
    int left_behind;      /* 1 when processes of its group ran on after it exited (killed
                           * with end_group) */
    double wall_ns;       /* spawn to reaped, CLOCK_MONOTONIC */
    double user_s, sys_s; /* CPU time of the command (wait4's rusage) */
    double max_rss_kib;   /* its own peak resident set; NaN: not measured (no kt_exec) */
    double rss_floor_kib; /* the least that peak can read (kt_exec's own resident set) */
    char *out;            /* stdout, NUL-terminated, at most KT_PROCESS_STDOUT_MAX bytes */
    size_t out_len;
    int out_truncated;
    char err_tail[KT_PROCESS_STDERR_TAIL + 1]; /* the last bytes of stderr */
} kt_process_result;

/* Runs 'spec' to completion (or its timeout). Returns 0 when the command was started and
 * reaped, whatever its exit status (read 'out'); a negative code when the harness failed
 * (pipes, memory). Free with kt_process_result_free. */
int kt_process_run(kt_process_result *out, const kt_process_spec *spec);
void kt_process_result_free(kt_process_result *r);
/* True when the command exited 0 and was not killed. */
int kt_process_ok(const kt_process_result *r);
/* "exit status 3", "killed by signal 11 (Segmentation fault)", "timed out after 2 s", ... */
void kt_process_describe(char *buf, size_t len, const kt_process_result *r, double timeout_s);

#endif
