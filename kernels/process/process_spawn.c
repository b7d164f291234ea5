/* process_spawn.c - kt_process_run: posix_spawnp in its own process group, stdout and stderr
 * read through pipes, the exit noticed on a pidfd (polling every millisecond without one),
 * the group killed at the timeout, wait4 for the rusage. */
#include "process.h"
#include "process_helper.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The parent's environment with 'extra' ("NAME=value") added, replacing same-named entries.
 * The strings are borrowed; only the array is allocated. */
static char **merged_env(char *const *extra, size_t n_extra)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + n_extra + 1, sizeof(*env));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(environ[i], "=");
        int replaced = 0;
        for (size_t j = 0; j < n_extra && !replaced; j++)
            replaced = strncmp(extra[j], environ[i], len) == 0 && extra[j][len] == '=';
        if (!replaced)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < n_extra; j++)
        env[k++] = extra[j];
    env[k] = NULL;
    return env;
}

/* Appends up to 'n' bytes to the stdout buffer, keeping at most KT_PROCESS_STDOUT_MAX. */
static void keep_stdout(kt_process_result *r, const char *buf, size_t n)
{
    size_t room = KT_PROCESS_STDOUT_MAX - r->out_len;
    if (n > room) {
        n = room;
        r->out_truncated = 1;
    }
    memcpy(r->out + r->out_len, buf, n);
    r->out_len += n;
    r->out[r->out_len] = '\0';
}

/* Keeps the last KT_PROCESS_STDERR_TAIL bytes of stderr. */
static void keep_stderr(kt_process_result *r, const char *buf, size_t n)
{
    size_t cap = KT_PROCESS_STDERR_TAIL, have = strlen(r->err_tail);
    if (n >= cap) {
        memcpy(r->err_tail, buf + n - cap, cap);
        r->err_tail[cap] = '\0';
        return;
    }
    if (have + n > cap) {
        size_t drop = have + n - cap;
        memmove(r->err_tail, r->err_tail + drop, have - drop);
        have -= drop;
    }
    memcpy(r->err_tail + have, buf, n);
    r->err_tail[have + n] = '\0';
}

/* Reads what 'fd' has; returns 0 at end of file (or an error), 1 while it stays open. */
static int drain(int fd, kt_process_result *r, int is_stdout)
{
    char buf[65536];
    for (;;) {
        ssize_t got = read(fd, buf, sizeof(buf));
        if (got > 0) {
            if (is_stdout)
                keep_stdout(r, buf, (size_t)got);
            else
                keep_stderr(r, buf, (size_t)got);
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 1;
        return 0;
    }
}

/* Starts the command, through 'helper' (its report on fd 3 = 'report_fd') unless NULL. */
static int spawn(pid_t *pid, const kt_process_spec *spec, int out_fd, int err_fd,
                 const char *helper, int report_fd)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    char **env = merged_env(spec->env, spec->n_env);
    size_t argc = 0;
    while (spec->argv[argc])
        argc++;
    char **argv = helper ? calloc(argc + 2, sizeof(*argv)) : NULL;
    if (!env || (helper && !argv)) {
        free(env);
        return kt_error_code(KT_ENOMEM, "out of memory");
    }
    if (helper) {
        argv[0] = (char *)helper;
        memcpy(argv + 1, spec->argv, argc * sizeof(*argv));
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    if (helper)
        posix_spawn_file_actions_adddup2(&fa, report_fd, 3);
    if (spec->cwd)
        posix_spawn_file_actions_addchdir_np(&fa, spec->cwd);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    int rc = helper ? posix_spawn(pid, helper, &fa, &attr, argv, env)
                    : posix_spawnp(pid, spec->argv[0], &fa, &attr, spec->argv, env);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    free(env);
    return rc; /* an errno value, 0 when started */
}

/* Waits for the child and both pipes, killing the group at the deadline (INFINITY: none). */
static void supervise(kt_process_result *r, pid_t pid, int out_fd, int err_fd, double start_ns,
                      double deadline_ns, volatile sig_atomic_t *cancel, struct rusage *ru,
                      int *status)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int out_open = 1, err_open = 1, reaped = 0;
    while (!reaped) {
        struct pollfd fds[3];
        int n = 0, out_i = -1, err_i = -1;
        if (out_open) {
            out_i = n;
            fds[n++] = (struct pollfd){out_fd, POLLIN, 0};
        }
        if (err_open) {
            err_i = n;
            fds[n++] = (struct pollfd){err_fd, POLLIN, 0};
        }
        if (pidfd >= 0)
            fds[n++] = (struct pollfd){pidfd, POLLIN, 0};
        double now = mono_ns();
        int wait_ms = pidfd >= 0 ? -1 : 1;
        if (cancel && *cancel >= 2 && !r->cancelled) {
            kill(-pid, SIGKILL);
            r->cancelled = 1;
        }
        if (isfinite(deadline_ns)) {
            double left_ms = ceil((deadline_ns - now) / 1e6);
            if (left_ms <= 0 && !r->timed_out) {
                kill(-pid, SIGKILL);
                r->timed_out = 1;
            }
            if (!r->timed_out && (wait_ms < 0 || left_ms < wait_ms))
                wait_ms = (int)left_ms;
        }
        if (poll(fds, (nfds_t)n, wait_ms) < 0 && errno != EINTR)
            break;
        if (out_i >= 0 && fds[out_i].revents)
            out_open = drain(out_fd, r, 1);
        if (err_i >= 0 && fds[err_i].revents)
            err_open = drain(err_fd, r, 0);
        pid_t got = wait4(pid, status, WNOHANG, ru);
        if (got == pid) {
            r->wall_ns = mono_ns() - start_ns;
            reaped = 1;
        }
    }
    /* what the command wrote before it exited; a process it left behind keeps the pipes */
    drain(out_fd, r, 1);
    drain(err_fd, r, 0);
    if (pidfd >= 0)
        close(pidfd);
}

int kt_process_run(kt_process_result *out, const kt_process_spec *spec)
{
    int rc = KT_OK, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, report[2] = {-1, -1};
    memset(out, 0, sizeof(*out));
    const char *helper = kt_process_helper();
    out->out = malloc(KT_PROCESS_STDOUT_MAX + 1);
    if (!out->out) {
        rc = kt_error_code(KT_ENOMEM, "out of memory");
        goto done;
    }
    out->out[0] = '\0';
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
        (helper && pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0)) {
        rc = kt_error_code(KT_EIO, "cannot create a pipe: %s", strerror(errno));
        goto done;
    }
    double start = mono_ns();
    pid_t pid;
    int err = spawn(&pid, spec, out_pipe[1], err_pipe[1], helper, report[1]);
    if (err < 0) {
        rc = err;
        goto done;
    }
    if (err > 0) {
        out->spawn_failed = 1;
        out->exit_code = err;
        snprintf(out->err_tail, sizeof(out->err_tail), "cannot start '%s': %s", spec->argv[0],
                 strerror(err));
        goto done;
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (report[1] >= 0)
        close(report[1]);
    out_pipe[1] = err_pipe[1] = report[1] = -1;
    fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
    struct rusage ru;
    int status = 0;
    memset(&ru, 0, sizeof(ru));
    double deadline = spec->timeout_s > 0 ? start + spec->timeout_s * 1e9 : INFINITY;
    supervise(out, pid, out_pipe[0], err_pipe[0], start, deadline, spec->cancel, &ru, &status);
    if (out->timed_out || out->cancelled) {
        kill(-pid, SIGKILL);         /* whatever the group still holds */
    } else if (kill(-pid, 0) == 0) { /* the leader is reaped: these are what it left running */
        out->left_behind = 1;
        if (spec->end_group)
            kill(-pid, SIGKILL);
    }
    out->exited = WIFEXITED(status);
    out->exit_code = out->exited ? WEXITSTATUS(status) : 0;
    out->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    out->user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
    out->sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    /* wait4 on ktrial's own child reads at least ktrial's peak (process_helper.c): only the
     * helper's report of the command itself is a peak of the command */
    out->max_rss_kib = out->rss_floor_kib = NAN;
    if (helper && kt_process_helper_read(out, report[0]) && out->spawn_failed)
        snprintf(out->err_tail, sizeof(out->err_tail), "cannot start '%s': %s", spec->argv[0],
                 strerror(out->exit_code));
done:
    for (int i = 0; i < 2; i++) {
        if (out_pipe[i] >= 0)
            close(out_pipe[i]);
        if (err_pipe[i] >= 0)
            close(err_pipe[i]);
        if (report[i] >= 0)
            close(report[i]);
    }
    return rc;
}

void kt_process_result_free(kt_process_result *r)
{
    free(r->out);
    r->out = NULL;
}

int kt_process_ok(const kt_process_result *r)
{
    return !r->spawn_failed && !r->timed_out && !r->cancelled && r->exited && r->exit_code == 0;
}

void kt_process_describe(char *buf, size_t len, const kt_process_result *r, double timeout_s)
{
    if (r->spawn_failed)
        snprintf(buf, len, "could not start: %s", strerror(r->exit_code));
    else if (r->cancelled)
        snprintf(buf, len, "stopped by a second interrupt (process group killed)");
    else if (r->timed_out)
        snprintf(buf, len, "timed out after %g s (process group killed)", timeout_s);
    else if (!r->exited)
        snprintf(buf, len, "killed by signal %d (%s)", r->term_signal, strsignal(r->term_signal));
    else
        snprintf(buf, len, "exit status %d", r->exit_code);
}
