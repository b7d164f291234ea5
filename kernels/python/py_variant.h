/* py_variant.h - a Python function as a variant of an op: the provider behind a spec's
 * 'python: file.py:function' arms and the built-in torch variants.
 *
 * A Python variant is an ordinary kt_variant, so the kernel arm prepares, calls and checks it
 * through the same seam as a built-in or a C plugin: every timed call's outputs are poisoned
 * before and scanned after, a sample of calls compared with float64. What differs:
 *   - prepare starts CPython in the calling process (the per-point worker; py_runtime.h),
 *     imports the file once per process and wraps the call's buffers as tensors of the arm's
 *     framework (cached by address: the outputs alternate between two buffers);
 *   - run is fn(inputs, outputs, problem): two lists of tensors in the op's order and a dict of
 *     the problem's sizes; a Python exception fails the call with the traceback's tail;
 *   - what fn returns (a tensor, or a tuple or list of one per output; None when it wrote in
 *     place) is kept, and kt_variant_finish, after the timer stopped, checks it and copies it
 *     into the outputs: a returned value that shares memory with an input, or with a value
 *     returned by one of the last calls, fails with "check aliasing: ...".
 * Python arms are not in the registry: the spec's arm holds the variant made here.
 */
#ifndef KT_PY_VARIANT_H
#define KT_PY_VARIANT_H

#include "kernel.h"
#include "python/py_runtime.h"

#define KT_PY_MAX_ARMS 32 /* Python arms one process can hold */

/* Where a Python variant's function comes from: a file, or source text compiled into ktrial
 * (the torch variants), and the framework its tensors belong to. */
typedef struct kt_py_def {
    const char *path;   /* the file, or NULL with 'source' */
    const char *source; /* source text, or NULL */
    const char *origin; /* the name of 'source' in tracebacks */
    const char *function;
    kt_py_framework framework;
} kt_py_def;

/* A variant of 'op' on 'backend' called 'name' that calls 'def' (copied). NULL with the
 * reason set when KT_PY_MAX_ARMS are made already. */
const kt_variant *kt_py_variant_make(const char *op, const char *backend, const char *name,
                                     const kt_py_def *def);

/* The variant's parts, for variants with a fixed def (the torch variants). */
int kt_py_variant_prepare(const kt_py_def *def, void **state, const kt_call *call);
int kt_py_variant_run(void *state, const kt_call *call);
void kt_py_variant_release(void *state, kt_backend *backend);
/* The untimed end of a call: checks and copies what the last run returned (see above). */
int kt_py_variant_finish(void *state, const kt_call *call);
/* Whether 'v' is a Python variant (its run is kt_py_variant_run). */
int kt_py_is_variant(const kt_variant *v);

/* The framework of Python variant 'v' (kt_py_is_variant). */
kt_py_framework kt_py_variant_framework(const kt_variant *v);

/* Checks in a throwaway child (fork; the interpreter never starts in this process) that
 * 'def' imports, defines its function and that it takes (inputs, outputs, problem). KT_OK,
 * or KT_EINVAL with the reason (the import error's traceback tail, "defines no function
 * 'f'", the signature). */
int kt_py_probe(const kt_py_def *def);

/* 1 when Python module 'name' is importable here (looked for in a throwaway child, without
 * importing it), else 0 with the reason set. */
int kt_py_module_available(const char *name);

/* The bridge's own cost per call: the median time of a call of an empty Python function
 * fn(inputs, outputs, problem) over 'n_tensors' tensors of 'fw', in ns, measured in a
 * throwaway child. NAN with the reason set when Python (or 'fw') is not there. */
double kt_py_bridge_cost_ns(kt_py_framework fw, int n_tensors);

#endif
