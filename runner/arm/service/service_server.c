/* service_server.c - a service arm's server process: spawned from the arm's setup argv with
 * '{port}' a free loopback port, in a process group of its own (so a signal reaches everything
 * it starts, and a Ctrl-C at the terminal reaches ktrial alone, which then stops it), stdout
 * and stderr to a log in the point's work folder, and a parent-death signal so that a killed
 * ktrial leaves no server behind. Ready is its probe answering 2xx within ready.timeout_s;
 * stopping is its teardown (if any), then SIGTERM to the group, then SIGKILL. */
#include "arm/service/service_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* A port the kernel just gave out on 127.0.0.1 (bound, read, closed). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* The sum of VmHWM (peak resident set) of the processes of group 'pgid', KiB. */
static double group_hwm_kib(pid_t pgid)
{
    double sum = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], line[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int pgrp = -1;
        char *close_paren = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
        fclose(f);
        if (!close_paren || sscanf(close_paren + 2, "%*c %*d %d", &pgrp) != 1 || pgrp != pgid)
            continue;
        snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
        f = fopen(path, "r");
        while (f && fgets(line, sizeof(line), f)) {
            double kib;
            if (sscanf(line, "VmHWM: %lf", &kib) == 1)
                sum += kib;
        }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return sum;
}

void kt_svc_sample_rss(svc *s, int arm)
{
    svc_arm *a = &s->arms[arm];
    if (a->srv.pid <= 0)
        return;
    double kib = group_hwm_kib(a->srv.pid);
    if (kib > a->peak_rss_kib)
        a->peak_rss_kib = kib;
}

/* Reaps the server if it exited; fills 'how'. Returns 1 when it is gone. */
static int reap(svc *s, int arm, int flags, char *how, size_t len)
{
    svc_arm *a = &s->arms[arm];
    int status;
    struct rusage ru;
    pid_t r = wait4(a->srv.pid, &status, flags, &ru);
    if (r != a->srv.pid)
        return 0;
    a->cpu_s += (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    if ((double)ru.ru_maxrss > a->peak_rss_kib)
        a->peak_rss_kib = (double)ru.ru_maxrss;
    if (WIFEXITED(status))
        snprintf(how, len, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(how, len, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    return 1;
}

int kt_svc_alive(svc *s, int arm, const char *when)
{
    svc_arm *a = &s->arms[arm];
    char how[96];
    if (a->srv.pid <= 0)
        return kt_svc_fail(s, arm, KT_REASON_SERVER, "the server is not running %s", when);
    if (!reap(s, arm, WNOHANG, how, sizeof(how)))
        return 0;
    pid_t pgid = a->srv.pid;
    a->srv.pid = 0;
    kill(-pgid, SIGKILL); /* what it left in its group */
    return kt_svc_fail(s, arm, KT_REASON_SERVER, "the server %s %s", how, when);
}

static pid_t spawn(svc *s, int arm, char **argv)
{
    svc_arm *a = &s->arms[arm];
    int log = open(a->srv.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log < 0)
        return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a killed ktrial takes its servers along */
        if (getppid() != parent)
            _exit(127);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, 0);
        dup2(log, 1);
        dup2(log, 2);
        if (chdir(s->ss->dir) != 0)
            _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execvp(argv[0], argv);
        dprintf(2, "ktrial: cannot start '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(log);
    if (pid > 0)
        setpgid(pid, pid); /* also here: no signal may race the child's own setpgid */
    return pid;
}

/* Runs an argv (teardown) to completion, at most 'timeout_s'; its output goes to the log. */
static void run_once(svc *s, int arm, char **argv, double timeout_s)
{
    pid_t pid = spawn(s, arm, argv);
    double end = kt_svc_now() + timeout_s;
    int status;
    while (pid > 0 && waitpid(pid, &status, WNOHANG) == 0) {
        if (kt_svc_now() > end) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        sleep_s(0.01);
    }
}

/* Expands an argv template list into a NULL-terminated array (free with free_argv). */
static char **expand(const kt_argv *tmpl, int port, const char *arm)
{
    char **argv = calloc(tmpl->n + 1, sizeof(char *));
    for (size_t i = 0; argv && i < tmpl->n; i++)
        if (kt_service_expand(&argv[i], tmpl->items[i], port, arm) < 0)
            argv[i] = strdup("");
    return argv;
}

static void free_argv(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

/* Polls the ready probe until 2xx, the timeout, the server's exit, or an interrupt. */
static int wait_ready(svc *s, int arm)
{
    const kt_service_arm *sa = svc_spec_arm(s, arm);
    svc_arm *a = &s->arms[arm];
    double end = a->srv.started_s + sa->ready_timeout_s;
    long status = 0;
    for (;;) {
        if (s->env.interrupted && *s->env.interrupted) {
            snprintf(s->out->error, sizeof(s->out->error), "interrupted");
            return -2;
        }
        if (kt_svc_alive(s, arm, "before it was ready") < 0)
            return arm == 0 ? -2 : -1;
        double left = end - kt_svc_now();
        if (left <= 0)
            break;
        if (kt_loadgen_probe(a->srv.lg, sa->ready_path, left < 1.0 ? left : 1.0, &status) == 0 &&
            status >= 200 && status < 300)
            return 0;
        sleep_s(0.02);
    }
    return kt_svc_fail(s, arm, KT_REASON_SERVER,
                       "never ready: GET %s did not answer 2xx within %g s (last status %ld)",
                       sa->ready_path, sa->ready_timeout_s, status);
}

int kt_svc_start(svc *s, int arm, double *ready_s)
{
    const kt_service_arm *sa = svc_spec_arm(s, arm);
    svc_arm *a = &s->arms[arm];
    a->srv.port = free_port();
    if (a->srv.port < 0)
        return kt_svc_fail(s, arm, KT_REASON_SERVER, "no free loopback port: %s", strerror(errno));
    snprintf(a->srv.log_path, sizeof(a->srv.log_path), "%s/%s.log", s->workdir,
             svc_arm_name(s, arm));
    kt_loadgen_config cfg = {0};
    cfg.host = "127.0.0.1";
    cfg.port = a->srv.port;
    cfg.method = s->ss->method;
    cfg.path = s->ss->path;
    cfg.stream = s->ss->sse ? KT_LOADGEN_STREAM_SSE : KT_LOADGEN_STREAM_NONE;
    cfg.mode = s->ss->closed ? KT_LOADGEN_CLOSED : KT_LOADGEN_OPEN;
    cfg.concurrency = s->ss->concurrency;
    cfg.timeout_s = s->ss->request_timeout_s;
    cfg.allow_remote = s->ss->allow_remote;
    if (kt_loadgen_open(&cfg, &a->srv.lg) < 0)
        return kt_svc_fail(s, arm, KT_REASON_SERVER, "load generator: %s", kt_error_last());
    char **argv = expand(&sa->setup, a->srv.port, svc_arm_name(s, arm));
    if (!argv)
        return kt_svc_fail(s, arm, KT_REASON_SERVER, "out of memory");
    a->srv.started_s = kt_svc_now();
    a->srv.pid = spawn(s, arm, argv);
    free_argv(argv);
    if (a->srv.pid < 0) {
        a->srv.pid = 0;
        return kt_svc_fail(s, arm, KT_REASON_SERVER, "cannot start the server: %s",
                           strerror(errno));
    }
    int rc = wait_ready(s, arm);
    if (rc < 0)
        return rc;
    *ready_s = kt_svc_now() - a->srv.started_s;
    kt_svc_sample_rss(s, arm);
    return 0;
}

void kt_svc_stop(svc *s, int arm)
{
    const kt_service_arm *sa = svc_spec_arm(s, arm);
    svc_arm *a = &s->arms[arm];
    char how[96];
    if (a->srv.pid > 0) {
        kt_svc_sample_rss(s, arm);
        if (sa->teardown.n) {
            char **argv = expand(&sa->teardown, a->srv.port, svc_arm_name(s, arm));
            if (argv)
                run_once(s, arm, argv, 30.0);
            free_argv(argv);
        }
        pid_t pgid = a->srv.pid;
        kill(-pgid, SIGTERM);
        double end = kt_svc_now() + 5.0;
        int gone = 0;
        while (!(gone = reap(s, arm, WNOHANG, how, sizeof(how))) && kt_svc_now() < end)
            sleep_s(0.01);
        kill(-pgid, SIGKILL); /* the rest of its group, or itself past the grace period */
        if (!gone)
            reap(s, arm, 0, how, sizeof(how));
        a->srv.pid = 0;
    }
    kt_loadgen_close(a->srv.lg);
    a->srv.lg = NULL;
}
