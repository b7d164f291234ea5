/* py_probe.c - what the ktrial parent asks of Python without starting it: whether a Python
 * arm's function imports and takes (inputs, outputs, problem), and the bridge's cost per call.
 * Each runs in a throwaway child (kt_fork_pipe) that starts the interpreter, answers one line
 * through the pipe ("ok VALUE" or "error MESSAGE") and exits; a child that crashes or hangs is
 * an error with what happened. */
#include "python/py_variant.h"

#include "fork_pipe.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_TIMEOUT_S 120 /* importing torch on a loaded machine takes seconds */

static void answer(int fd, const char *what, const char *text)
{
    char line[1200];
    int n = snprintf(line, sizeof(line), "%s %s\n", what, text);
    if (n > 0 && write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
        _exit(2); /* the parent is gone */
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs 'body' in a child; its "ok" text goes to 'value'. KT_OK, or KT_EINVAL with the reason. */
static int in_child(int (*body)(void *arg, char *value, size_t len), void *arg, char *value,
                    size_t len, const char *what)
{
    pid_t pid;
    int fd, err = kt_fork_pipe(&pid, &fd, what);
    if (err < 0)
        return err;
    if (pid == 0) {
        char out[1024] = "";
        kt_error_clear();
        if (body(arg, out, sizeof(out)) < 0)
            answer(fd, "error", kt_error_last());
        else
            answer(fd, "ok", out);
        fflush(NULL);
        _exit(0);
    }
    char buf[1400];
    size_t got = 0;
    double start = now_s();
    int hung = 0;
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int ready = poll(&pfd, 1, 250);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0 && now_s() - start > PROBE_TIMEOUT_S) {
            kill(pid, SIGKILL);
            hung = 1;
            break;
        }
        if (ready == 0)
            continue;
        ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || (got += (size_t)n) == sizeof(buf) - 1)
            break;
    }
    buf[got] = '\0';
    close(fd);
    int status = kt_fork_pipe_wait(pid);
    char *nl = strchr(buf, '\n');
    if (nl)
        *nl = '\0';
    if (hung)
        return kt_error_code(KT_EINVAL, "no answer from Python after %d s; killed",
                             PROBE_TIMEOUT_S);
    if (strncmp(buf, "ok ", 3) == 0) {
        snprintf(value, len, "%s", buf + 3);
        return KT_OK;
    }
    if (strncmp(buf, "error ", 6) == 0)
        return kt_error_code(KT_EINVAL, "%s", buf + 6);
    if (WIFSIGNALED(status))
        return kt_error_code(KT_EINVAL, "Python crashed with signal %d (%s)", WTERMSIG(status),
                             strsignal(WTERMSIG(status)));
    return kt_error_code(KT_EINVAL, "Python exited without an answer");
}

static int probe_body(void *arg, char *value, size_t len)
{
    (void)value;
    (void)len;
    const kt_py_def *def = arg;
    int err = kt_py_start(def->framework, 1);
    if (err < 0)
        return err;
    kt_py_gil g = kt_py_enter();
    kt_pyobj *module = NULL, *fn = NULL;
    err = def->path ? kt_py_import_file(&module, def->path, "kt_probe")
                    : kt_py_import_source(&module, def->source, def->origin, "kt_probe");
    if (err == KT_OK)
        err = kt_py_attr_callable(&fn, module, def->function);
    if (err == KT_OK)
        err = kt_py_check_arity(fn, 3);
    kt_py_decref(fn);
    kt_py_decref(module);
    kt_py_leave(g);
    return err;
}

int kt_py_probe(const kt_py_def *def)
{
    if (!kt_py_built())
        return kt_error_code(KT_EUNSUPPORTED, "%s", kt_py_missing_reason());
    char value[8];
    return in_child(probe_body, (void *)def, value, sizeof(value), "to probe a Python arm");
}

typedef struct cost_arg {
    kt_py_framework fw;
    int n_tensors;
} cost_arg;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of 2000 calls of kt_py_variant_run over an empty function (after 200 unmeasured
 * ones), on 'n_tensors' fp32 tensors of 64 elements, the last one the output. */
static int cost_body(void *arg, char *value, size_t len)
{
    const cost_arg *a = arg;
    static const kt_py_def def = {NULL, "def empty(inputs, outputs, problem):\n    pass\n",
                                  "<bridge cost>", "empty", KT_PY_NUMPY};
    kt_py_def d = def;
    d.framework = a->fw;
    static float bufs[KT_MAX_TENSORS][64];
    void *ptrs[KT_MAX_TENSORS];
    kt_problem p;
    memset(&p, 0, sizeof(p));
    p.n_inputs = a->n_tensors - 1;
    p.n_outputs = 1;
    for (int i = 0; i < a->n_tensors; i++) {
        p.tensors[i] = (kt_tensor){"t", 1, {64, 0, 0, 0}, KT_DTYPE_FP32};
        ptrs[i] = bufs[i];
    }
    kt_call call;
    memset(&call, 0, sizeof(call));
    call.problem = &p;
    call.inputs = (const void *const *)ptrs;
    call.outputs = (void *const *)(ptrs + p.n_inputs);
    call.threads = 1;
    void *state = NULL;
    int err = kt_py_variant_prepare(&d, &state, &call);
    enum { WARM = 200, CALLS = 2000 };
    static double ns[CALLS];
    for (int i = 0; err == KT_OK && i < WARM + CALLS; i++) {
        double t0 = now_s();
        err = kt_py_variant_run(state, &call);
        if (i >= WARM)
            ns[i - WARM] = (now_s() - t0) * 1e9;
    }
    kt_py_variant_release(state, NULL);
    if (err < 0)
        return err;
    qsort(ns, CALLS, sizeof(ns[0]), cmp_double);
    snprintf(value, len, "%.1f", (ns[CALLS / 2 - 1] + ns[CALLS / 2]) / 2);
    return KT_OK;
}

double kt_py_bridge_cost_ns(kt_py_framework fw, int n_tensors)
{
    if (!kt_py_built())
        return kt_error_code(KT_EUNSUPPORTED, "%s", kt_py_missing_reason()), NAN;
    if (n_tensors < 2 || n_tensors > KT_MAX_TENSORS)
        return kt_error_code(KT_EINVAL, "%d tensors", n_tensors), NAN;
    cost_arg a = {fw, n_tensors};
    char value[64];
    if (in_child(cost_body, &a, value, sizeof(value), "to measure the Python bridge") < 0)
        return NAN;
    return strtod(value, NULL);
}

static int module_body(void *arg, char *value, size_t len)
{
    snprintf(value, len, "%d", kt_py_has_module(arg));
    return KT_OK;
}

int kt_py_module_available(const char *name)
{
    char value[8] = "0";
    if (!kt_py_built())
        return kt_error_code(KT_EUNSUPPORTED, "%s", kt_py_missing_reason()), 0;
    if (in_child(module_body, (void *)name, value, sizeof(value), "to look for a module") < 0)
        return 0;
    if (value[0] != '1')
        return kt_error_code(KT_EUNSUPPORTED, "Python module '%s' is not installed%s", name,
                             strcmp(name, "torch") == 0 ? " (apt-get install python3-torch)" : ""),
               0;
    return 1;
}
