/* pymodule_arm.c - the pymodule kind of arm: the arms of a KernelBench-layout problem (op
 * pymodule), torch modules called through the embedded interpreter (kernels/python/). The
 * Python half (kt_pymodule.py, compiled into ktrial) makes the seeded inputs, the weights and
 * the float64 reference and does the checks; this half starts the interpreter in the forked
 * worker, times each call on the backend's clock around nothing but module(*inputs), and turns
 * what Python found into the arm results: a reason of a failed check (named by the check) or an
 * exception (ending with the traceback's last lines) fails the arm, the baseline's the point. */
#include "arm/pymodule/pymodule_arm.h"

#include "python/py_runtime.h"
#include "result/point.h"
#include "spec/pymodule_spec.h"
#include "util/sanitize.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KT_HAVE_PYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif

extern const char kt_embedded_pymodule_py[];

struct kt_arm_set {
    kt_arm_env env;
    const kt_spec *spec;
    kt_point_result *out;
    int n_sets;
    kt_pyobj *session; /* kt_pymodule.Session */
    int failed[1 + 16];
};

static kt_arm_result *arm_result(kt_arm_set *s, int arm)
{
    return arm == 0 ? &s->out->baseline : &s->out->cands[arm - 1].arm;
}

/* Fails 'arm' for the reason (one line of valid UTF-8): a candidate's result, or the point
 * through its error for the baseline. Returns what the arm operations return: -1 or -2. */
static int fail(kt_arm_set *s, int arm, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(kt_arm_set *s, int arm, const char *fmt, ...)
{
    char raw[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    kt_arm_result *res = arm_result(s, arm);
    s->failed[arm] = 1;
    if (!res->failed) {
        res->failed = 1;
        kt_sanitize(res->failure, sizeof(res->failure), raw);
    }
    if (arm == 0 && !s->out->error[0]) {
        char why[sizeof(s->out->error)];
        snprintf(why, sizeof(why), "baseline '%s' failed: %s", s->spec->baseline.name, raw);
        kt_sanitize(s->out->error, sizeof(s->out->error), why);
    }
    return arm == 0 ? -2 : -1;
}

/* The point's arm set, before anything of Python. */
static kt_arm_set *new_set(kt_arm_set **out, int *n_sets, const kt_arm_env *env)
{
    kt_arm_set *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->env = *env;
    s->spec = env->spec;
    s->out = env->out;
    *out = s;
    *n_sets = 0;
    return s;
}

static void step(kt_arm_set *s, int arm, const char *what)
{
    if (s->env.on_step)
        s->env.on_step(s->env.ctx, arm, what);
}

void kt_pymodule_describe(kt_arm_set *s, int arm)
{
    kt_arm_result *res = arm_result(s, arm);
    const kt_pymodule_spec *p = s->spec->pymodule;
    const kt_pymodule_arm *a = arm == 0 ? &p->baseline : &p->candidates[arm - 1];
    snprintf(res->name, sizeof(res->name), "%s",
             arm == 0 ? s->spec->baseline.name : s->spec->candidates[arm - 1].name);
    snprintf(res->variant, sizeof(res->variant), "%s", a->cls);
    snprintf(res->program, sizeof(res->program), "%s", a->file ? a->file : "");
}

#ifdef KT_HAVE_PYTHON

/* Calls session.NAME(args...) (Py_BuildValue's format); NULL with kt_error set on an
 * exception. */
static PyObject *session_call(kt_arm_set *s, const char *name, const char *fmt, ...)
{
    PyObject *fn = PyObject_GetAttrString((PyObject *)s->session, name);
    if (!fn) {
        kt_py_error(name);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    PyObject *args = fmt ? Py_VaBuildValue(fmt, ap) : PyTuple_New(0);
    va_end(ap);
    if (args && !PyTuple_Check(args)) {
        PyObject *t = PyTuple_Pack(1, args);
        Py_DECREF(args);
        args = t;
    }
    PyObject *r = args ? PyObject_Call(fn, args, NULL) : NULL;
    Py_XDECREF(args);
    Py_DECREF(fn);
    if (!r)
        kt_py_error(name);
    return r;
}

/* (reason, (elems, nonfinite, max_abs, max_rel, rel_l2, cosine, inputs_modified)) into 'n';
 * the reason into 'why' ("" when every check held). */
static void read_check(PyObject *t, kt_numerics *n, char *why, size_t len)
{
    why[0] = '\0';
    PyObject *reason = PyTuple_GetItem(t, 0), *num = PyTuple_GetItem(t, 1);
    const char *text = reason ? PyUnicode_AsUTF8(reason) : NULL;
    snprintf(why, len, "%s", text ? text : "");
    memset(n, 0, sizeof(*n));
    if (!num || PyTuple_Size(num) < 7)
        return;
    n->elems = PyLong_AsLongLong(PyTuple_GetItem(num, 0));
    n->nonfinite = PyLong_AsLongLong(PyTuple_GetItem(num, 1));
    n->max_abs = PyFloat_AsDouble(PyTuple_GetItem(num, 2));
    n->max_rel = PyFloat_AsDouble(PyTuple_GetItem(num, 3));
    n->rel_l2 = PyFloat_AsDouble(PyTuple_GetItem(num, 4));
    n->cosine = PyFloat_AsDouble(PyTuple_GetItem(num, 5));
    n->inputs_modified = (int)PyLong_AsLong(PyTuple_GetItem(num, 6));
    PyErr_Clear();
}

static PyObject *arms_list(const kt_pymodule_spec *p)
{
    PyObject *list = PyList_New(0);
    for (size_t a = 0; list && a <= p->n_candidates; a++) {
        const kt_pymodule_arm *arm = a == 0 ? &p->baseline : &p->candidates[a - 1];
        PyObject *t = Py_BuildValue("(ss)", arm->file ? arm->file : "", arm->cls);
        if (!t || PyList_Append(list, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(t);
    }
    return list;
}

int kt_pymodule_open(kt_arm_set **out, int *n_sets, const kt_arm_env *env)
{
    kt_arm_set *s = new_set(out, n_sets, env);
    if (!s)
        return kt_error_code(KT_ENOMEM, "out of memory");
    const kt_pymodule_spec *p = s->spec->pymodule;
    int threads = env->backend && env->backend->threads > 0 ? env->backend->threads : 1;
    step(s, -1, "inputs");
    int err = kt_py_start(KT_PY_TORCH, threads);
    if (err < 0) {
        snprintf(s->out->error, sizeof(s->out->error), "cannot start Python: %s", kt_error_last());
        return KT_OK;
    }
    kt_py_gil g = kt_py_enter();
    kt_pyobj *module = NULL, *cls = NULL;
    PyObject *arms = NULL;
    err = kt_py_import_source(&module, kt_embedded_pymodule_py, "kt_pymodule.py", "kt_pymodule");
    if (err == KT_OK)
        err = kt_py_attr_callable(&cls, module, "Session");
    if (err == KT_OK && !(arms = arms_list(p)))
        err = kt_py_error("arms");
    if (err == KT_OK) {
        PyObject *session = PyObject_CallFunction(
            (PyObject *)cls, "ssOKid", p->problem, p->globals_json, arms,
            (unsigned long long)env->seed, s->spec->input_sets, s->spec->numerics.max_rel_l2);
        if (!session)
            err = kt_py_error("problem");
        s->session = (kt_pyobj *)session;
    }
    if (err < 0)
        kt_sanitize(s->out->error, sizeof(s->out->error), kt_error_last());
    else
        *n_sets = s->n_sets = s->spec->input_sets;
    Py_XDECREF(arms);
    kt_py_decref(cls);
    kt_py_decref(module);
    kt_py_leave(g);
    return KT_OK;
}

int kt_pymodule_prepare(kt_arm_set *s, int arm)
{
    kt_arm_result *res = arm_result(s, arm);
    step(s, arm, "prepare");
    kt_py_gil g = kt_py_enter();
    PyObject *r = session_call(s, "prepare", "(i)", arm);
    int rc = 0;
    if (!r) {
        rc = fail(s, arm, "exception: %s", kt_error_last());
    } else {
        res->n_sets = s->n_sets;
        for (int set = 0; set < s->n_sets && rc == 0; set++) {
            char why[512];
            read_check(PyList_GetItem(r, set), &res->numerics[set], why, sizeof(why));
            if (why[0])
                rc = fail(s, arm, "%s (input set %d)", why, set);
        }
        PyObject *note = PyObject_GetAttrString((PyObject *)s->session, "double");
        res->n_metrics = 1;
        snprintf(res->metric_names[0], sizeof(res->metric_names[0]), "float64_reference");
        res->metric_values[0] = note ? PyObject_IsTrue(note) : 0;
        Py_XDECREF(note);
        PyErr_Clear();
    }
    Py_XDECREF(r);
    kt_py_leave(g);
    return rc;
}

/* The late writes 'stage' found in other arms' outputs: each fails its arm. */
static int fail_late(kt_arm_set *s, PyObject *late)
{
    int rc = 0;
    for (Py_ssize_t i = 0; late && i < PyList_Size(late); i++) {
        PyObject *t = PyList_GetItem(late, i);
        int arm = (int)PyLong_AsLong(PyTuple_GetItem(t, 0));
        const char *why = PyUnicode_AsUTF8(PyTuple_GetItem(t, 1));
        if (arm >= 0 && arm <= (int)s->spec->n_candidates && !s->failed[arm]) {
            int r = fail(s, arm, "%s", why ? why : "late-writes");
            rc = r < rc ? r : rc;
        }
    }
    PyErr_Clear();
    return rc;
}

int kt_pymodule_call(kt_arm_set *s, int arm, const kt_arm_at *at, kt_arm_sample *out)
{
    memset(out, 0, sizeof(*out));
    out->usage.wall_s = out->usage.user_s = out->usage.sys_s = out->usage.max_rss_kib = NAN;
    if (s->failed[arm])
        return arm == 0 ? -2 : -1;
    kt_py_gil g = kt_py_enter();
    int rc = 0;
    PyObject *late = session_call(s, "stage", "(iii)", arm, at->set, at->timed ? at->rep : -1);
    PyObject *run = late ? PyObject_GetAttrString((PyObject *)s->session, "run") : NULL;
    if (!late || !run) {
        rc = fail(s, arm, "exception: %s", kt_error_last());
    } else {
        rc = fail_late(s, late);
        int err = rc == 0 ? kt_backend_timer_start(s->env.backend) : 0;
        PyObject *r = rc == 0 && err == 0 ? PyObject_CallNoArgs(run) : NULL;
        if (rc == 0 && err == 0)
            err = kt_backend_timer_stop(s->env.backend, &out->t);
        if (rc == 0 && !r) {
            kt_py_error("call");
            rc = fail(s, arm, "exception: %s", kt_error_last());
        } else if (rc == 0 && err < 0)
            rc = fail(s, arm, "timer: %s", kt_error_last());
        Py_XDECREF(r);
        PyObject *a = rc == 0 ? session_call(s, "after", NULL) : NULL;
        if (rc == 0 && !a)
            rc = fail(s, arm, "reference: %s", kt_error_last());
        Py_XDECREF(a);
    }
    Py_XDECREF(run);
    Py_XDECREF(late);
    kt_py_leave(g);
    return rc;
}

int kt_pymodule_check(kt_arm_set *s, int arm, const kt_arm_at *at, int ref)
{
    (void)ref; /* every call is checked against the float64 reference of its own inputs */
    kt_arm_result *res = arm_result(s, arm);
    kt_py_gil g = kt_py_enter();
    PyObject *r = session_call(s, "check", NULL);
    int rc = 0;
    if (!r) {
        rc = fail(s, arm, "exception: %s", kt_error_last());
    } else {
        kt_numerics n;
        char why[512];
        read_check(r, &n, why, sizeof(why));
        res->checked_calls++;
        res->full_checks++;
        kt_numerics *w = &res->numerics[at->set];
        w->max_abs = fmax(w->max_abs, n.max_abs);
        w->max_rel = fmax(w->max_rel, n.max_rel);
        w->rel_l2 = fmax(w->rel_l2, n.rel_l2);
        w->cosine = fmin(w->cosine, n.cosine);
        if (why[0])
            rc = fail(s, arm, "%s (%s call, input set %d%s)", why, at->timed ? "timed" : "warmup",
                      at->set, at->timed ? ", fresh content" : "");
    }
    Py_XDECREF(r);
    kt_py_leave(g);
    return rc;
}

void kt_pymodule_close(kt_arm_set *s)
{
    if (s->session) {
        kt_py_gil g = kt_py_enter();
        kt_py_decref(s->session);
        kt_py_leave(g);
    }
    free(s);
}

#else /* no Python in this build: the point fails with the reason */

int kt_pymodule_open(kt_arm_set **out, int *n_sets, const kt_arm_env *env)
{
    kt_arm_set *s = new_set(out, n_sets, env);
    if (!s)
        return kt_error_code(KT_ENOMEM, "out of memory");
    snprintf(s->out->error, sizeof(s->out->error), "op pymodule needs Python: %s",
             kt_py_missing_reason());
    return KT_OK;
}

int kt_pymodule_prepare(kt_arm_set *s, int arm)
{
    return fail(s, arm, "op pymodule needs Python: %s", kt_py_missing_reason());
}

int kt_pymodule_call(kt_arm_set *s, int arm, const kt_arm_at *at, kt_arm_sample *out)
{
    (void)at;
    (void)out;
    return kt_pymodule_prepare(s, arm);
}

int kt_pymodule_check(kt_arm_set *s, int arm, const kt_arm_at *at, int ref)
{
    (void)at;
    (void)ref;
    return kt_pymodule_prepare(s, arm);
}

void kt_pymodule_close(kt_arm_set *s)
{
    free(s);
}

#endif

void kt_pymodule_release(kt_arm_set *s, int arm)
{
    step(s, arm, "release");
}
