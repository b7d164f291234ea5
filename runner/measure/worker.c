/* worker.c - a child process per point, supervised through a pipe. */
#include "measure/worker.h"
#include "fork_pipe.h"
#include "util/json.h"
#include "result/result_json.h"
#include "util/memory.h"

#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct worker_ctx {
    int fd;
    volatile sig_atomic_t *interrupted;
} worker_ctx;

static volatile sig_atomic_t child_interrupted;

static void child_on_signal(int sig)
{
    (void)sig;
    child_interrupted = 1;
}

size_t kt_worker_frame_line(char *out, size_t cap, const char *fmt, va_list ap)
{
    if (cap < 2)
        return 0;
    int n = vsnprintf(out, cap, fmt, ap);
    if (n < 0)
        n = 0;
    size_t len = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
    while (len > 0 && out[len - 1] == '\n')
        len--;
    for (size_t i = 0; i < len; i++) /* one message, one line, whatever the text held */
        if (out[i] == '\n' || out[i] == '\r')
            out[i] = ' ';
    if (len > cap - 2)
        len = cap - 2; /* cut, but keep the newline that ends the frame */
    out[len++] = '\n';
    out[len] = '\0';
    return len;
}

static void send_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void send_line(int fd, const char *fmt, ...)
{
    char buf[KT_WORKER_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    size_t n = kt_worker_frame_line(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0 && write(fd, buf, n) < 0)
        return; /* the supervisor is gone; nothing left to tell */
}

static void child_step(void *ctx, int arm, const char *what)
{
    send_line(((worker_ctx *)ctx)->fd, "step %d %s\n", arm, what);
}

static void child_progress(void *ctx, int reps, int max_reps)
{
    send_line(((worker_ctx *)ctx)->fd, "progress %d %d\n", reps, max_reps);
}

/* The child: open the backend, run the point, send its JSON. Never returns. */
static void child_main(int fd, const kt_spec *spec, const kt_point *point,
                       const kt_worker_options *opts, const int *skip, char (*skip_reason)[320])
{
    /* "ktrial-worker" in ps and top, and in /proc/PID/comm for whoever watches the run */
    prctl(PR_SET_NAME, "ktrial-worker", 0, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    /* a crash must kill the worker, whatever handlers the parent had installed */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    sa.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
        sigaction(fatal[i], &sa, NULL);
    sa.sa_handler = child_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    worker_ctx ctx = {fd, &child_interrupted};
    kt_trial_hooks hooks = {child_step,  child_progress,   &ctx,
                            skip,        skip_reason,      (volatile int *)&child_interrupted,
                            opts->quick, opts->no_profile, KT_SPEND_DEFAULT};
    kt_backend *backend = NULL;
    if (kt_backend_open(&backend, opts->backend, opts->threads, kt_point_seed(spec, point)) < 0) {
        send_line(fd, "error %s\n", kt_error_last());
        _exit(3);
    }
    if (spec->threads_affinity == KT_SPEC_AFFINITY_COMPACT)
        kt_backend_place_threads(backend, 1); /* this worker process only */
    kt_point_result res;
    if (kt_trial_run_point(&res, spec, point, backend, &hooks) < 0) {
        send_line(fd, "error %s\n", kt_error_last());
        _exit(3);
    }
    if (child_interrupted)
        snprintf(res.stop_reason, sizeof(res.stop_reason), "interrupted");
    cJSON *json = kt_point_result_to_json(&res, spec);
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    if (!text) {
        send_line(fd, "error out of memory\n");
        _exit(3);
    }
    size_t len = strlen(text);
    send_line(fd, "result %zu\n", len);
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, text + off, len - off);
        if (n <= 0)
            _exit(4);
        off += (size_t)n;
    }
    kt_backend_close(backend);
    _exit(0);
}

typedef struct supervision {
    int last_arm;
    char last_step[32];
    char error[KT_WORKER_LINE_MAX];
    char *result; /* the JSON text once complete */
    int hung;
    int measuring;   /* warmup or timed pairs reached: the start-up is over */
    int interrupted; /* stopped by the supervisor after Ctrl-C */
    double limit_s;  /* the watchdog limit that applied when it fired */
    int stopped;     /* found stopped (SIGSTOP from outside) when the hang timeout came */
} supervision;

/* Seconds after the first Ctrl-C that a worker in its timed pairs gets to send its result. */
#define KT_INTERRUPT_GRACE_S 3.0

/* 1 when 'pid' is stopped (state T or t in /proc/PID/stat). */
static int process_stopped(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren && (paren[2] == 'T' || paren[2] == 't');
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Consumes complete lines (and the result payload) from 'buf'; returns bytes consumed. */
static size_t parse_messages(supervision *s, char *buf, size_t len, const kt_worker_options *opts)
{
    size_t used = 0;
    while (used < len) {
        char *nl = memchr(buf + used, '\n', len - used);
        if (!nl)
            break;
        *nl = '\0';
        char *line = buf + used;
        size_t line_len = (size_t)(nl - line) + 1;
        int arm, reps, max;
        size_t payload;
        char what[32];
        if (sscanf(line, "step %d %31s", &arm, what) == 2) {
            s->last_arm = arm;
            snprintf(s->last_step, sizeof(s->last_step), "%s", what);
            int was = s->measuring;
            s->measuring |= strcmp(what, "warmup") == 0 || strcmp(what, "repetitions") == 0;
            if (s->measuring && !was && opts->on_measuring)
                opts->on_measuring(opts->ctx);
        } else if (sscanf(line, "progress %d %d", &reps, &max) == 2) {
            if (opts->on_progress)
                opts->on_progress(opts->ctx, reps, max);
        } else if (strncmp(line, "error ", 6) == 0) {
            snprintf(s->error, sizeof(s->error), "%s", line + 6);
        } else if (sscanf(line, "result %zu", &payload) == 1) {
            if (len - used - line_len < payload) {
                *nl = '\n'; /* wait for the whole payload */
                break;
            }
            s->result = strndup(nl + 1, payload);
            used += line_len + payload;
            continue;
        }
        used += line_len;
    }
    return used;
}

/* Runs one attempt; returns the child's wait status (or -1 when it could not start). */
static int supervise(supervision *s, const kt_spec *spec, const kt_point *point,
                     const kt_worker_options *opts, const int *skip, char (*skip_reason)[320])
{
    pid_t pid;
    int fd;
    int rc = kt_fork_pipe(&pid, &fd, "a worker");
    if (rc < 0)
        return rc;
    if (pid == 0)
        child_main(fd, spec, point, opts, skip, skip_reason);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    double last_message = now_s(), interrupt_at = 0;
    int forwarded = 0;
    while (buf) {
        int level = opts->interrupted ? (int)*opts->interrupted : 0;
        if (level && !forwarded) {
            kill(pid, SIGINT);
            forwarded = 1;
            interrupt_at = now_s();
        }
        /* a second Ctrl-C, a worker still starting up (nothing measured yet), or one that
         * does not finish its pair in time: stop it now */
        if (level >= 2 || (level && !s->measuring) ||
            (level && now_s() - interrupt_at > KT_INTERRUPT_GRACE_S)) {
            s->interrupted = 1;
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        int ready = poll(&pfd, 1, 100);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0 && kt_fork_pipe_ended(pid))
            break; /* all it wrote is read; a process the kernel forked holds the pipe */
        if (ready == 0) {
            double limit = !s->measuring && opts->startup_timeout_s > 0 ? opts->startup_timeout_s
                                                                        : opts->hang_timeout_s;
            if (now_s() - last_message > limit) {
                s->hung = 1;
                s->limit_s = limit;
                s->stopped = process_stopped(pid);
                kill(pid, SIGKILL);
                break;
            }
            continue;
        }
        if (len == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger)
                break;
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        last_message = now_s();
        len += (size_t)n;
        size_t used = parse_messages(s, buf, len, opts);
        memmove(buf, buf + used, len - used);
        len -= used;
    }
    free(buf);
    close(fd);
    return kt_fork_pipe_wait(pid);
}

/* oom_kill of this process's cgroup (v2 memory.events); -1 when unknown. */
static long oom_kills(void)
{
    char line[512], path[640];
    long n = -1;
    FILE *f;
    if (kt_cgroup_file(path, sizeof(path), "memory.events") < 0 || !(f = fopen(path, "r")))
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "oom_kill %ld", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* A death no candidate caused: a kill signal nobody in ktrial sent (the OOM killer, an
 * admin), or a stop. Says which in 'out'; 0 when the death looks like the worker's own. */
static int killed_from_outside(char *out, size_t len, int status, const supervision *s,
                               long oom_before)
{
    if (s->hung && s->stopped) {
        snprintf(out, len, "killed from outside: the worker was stopped (SIGSTOP) during %s",
                 s->last_step);
        return 1;
    }
    if (s->hung || s->interrupted || !WIFSIGNALED(status))
        return 0; /* a worker ktrial itself stopped (watchdog, Ctrl-C) is not an outside kill */
    int sig = WTERMSIG(status);
    if (sig != SIGKILL && sig != SIGTERM && sig != SIGHUP && sig != SIGINT)
        return 0; /* faults (SEGV, BUS, FPE, ILL, ABRT) are the code's own */
    long oom_after = oom_kills();
    if (sig == SIGKILL && oom_before >= 0 && oom_after > oom_before)
        snprintf(out, len,
                 "killed from outside: the OOM killer (cgroup memory.events oom_kill %ld -> "
                 "%ld) during %s; check the memory estimate of ktrial run --plan",
                 oom_before, oom_after, s->last_step);
    else
        snprintf(out, len, "killed from outside: signal %d (%s) during %s, not by ktrial", sig,
                 strsignal(sig), s->last_step);
    return 1;
}

static void describe_death(char *out, size_t len, int status, const supervision *s,
                           const kt_worker_options *opts)
{
    if (s->interrupted)
        snprintf(out, len, "interrupted during %s", s->last_step);
    else if (s->hung && !s->measuring && opts->startup_timeout_s > 0)
        snprintf(out, len,
                 "hung: no progress for %.3g s during %s (start-up), killed; the limit is "
                 "trials.max_startup_seconds: raise it in the spec if this problem needs longer",
                 s->limit_s, s->last_step);
    else if (s->hung)
        snprintf(out, len, "hung: no progress for %.3g s during %s, killed", s->limit_s,
                 s->last_step);
    else if (WIFSIGNALED(status))
        snprintf(out, len, "crashed with signal %d (%s) during %s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), s->last_step);
    else
        snprintf(out, len, "worker exited with status %d during %s%s%s", WEXITSTATUS(status),
                 s->last_step, s->error[0] ? ": " : "", s->error);
}

int kt_worker_run_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                        const kt_worker_options *opts)
{
    size_t K = spec->n_candidates;
    int *skip = calloc(K ? K : 1, sizeof(int));
    char(*reasons)[320] = calloc(K ? K : 1, sizeof(*reasons));
    int rc = KT_OK;
    if (!skip || !reasons) {
        rc = kt_error_code(KT_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t attempt = 0; attempt <= K + 1; attempt++) {
        supervision s;
        memset(&s, 0, sizeof(s));
        s.last_arm = -1;
        snprintf(s.last_step, sizeof(s.last_step), "start-up");
        long oom_before = oom_kills();
        int status = supervise(&s, spec, point, opts, skip, reasons);
        if (status < 0 && !s.result) {
            rc = status;
            goto done;
        }
        if (s.result) {
            cJSON *json = cJSON_Parse(s.result);
            free(s.result);
            rc = json && kt_point_result_from_json(out, json) == 0
                     ? KT_OK
                     : kt_error_set("the worker sent a malformed result");
            cJSON_Delete(json);
            goto done;
        }
        char death[320];
        describe_death(death, sizeof(death), status, &s, opts);
        int outside = killed_from_outside(death, sizeof(death), status, &s, oom_before);
        if (outside || s.last_arm <= 0 || (size_t)s.last_arm > K || skip[s.last_arm - 1] ||
            (opts->interrupted && *opts->interrupted)) {
            /* the baseline, the harness, or an interrupted worker: the point is lost */
            memset(out, 0, sizeof(*out));
            out->point = *point;
            if (outside)
                snprintf(out->error, sizeof(out->error), "%s", death);
            else
                snprintf(out->error, sizeof(out->error), "%s %s",
                         s.last_arm == 0 ? "baseline" : "worker", death);
            snprintf(out->stop_reason, sizeof(out->stop_reason), "%s",
                     outside         ? "killed"
                     : s.interrupted ? "interrupted"
                                     : "failed");
            out->n_cands = K;
            out->cands = calloc(K ? K : 1, sizeof(*out->cands));
            if (out->cands)
                kt_point_result_mark_unmeasured(out, spec, point);
            goto done;
        }
        skip[s.last_arm - 1] = 1;
        snprintf(reasons[s.last_arm - 1], sizeof(reasons[0]), "%s", death);
    }
    rc = kt_error_set("the worker kept failing at '%s'", point->id);
done:
    free(skip);
    free(reasons);
    return rc;
}

int kt_measure_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                     const kt_worker_options *opts, kt_arm_keep_fn keep)
{
    if (kt_arm_kind_of(spec)->isolated)
        return kt_worker_run_point(out, spec, point, opts);
    kt_trial_hooks hooks = {0};
    hooks.on_progress = opts->on_progress;
    hooks.ctx = opts->ctx;
    hooks.interrupted = opts->interrupted;
    hooks.quick = opts->quick;
    hooks.no_profile = opts->no_profile;
    return kt_trial_run_point_keeping(out, spec, point, NULL, &hooks, keep);
}
