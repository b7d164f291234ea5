/* py_runtime.c - CPython embedded in this process (py_runtime.h): start-up, imports, calls,
 * and exceptions made into one-line messages (the tensors are py_tensor.c's).
 *
 * The Python side of the bridge is the small module HELPER below, run once at start-up: the
 * DLPack producer object (from_dlpack wants an object with __dlpack__), numpy's writable view,
 * the file loader, the arity check, memory ranges, copies and the traceback tail. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "python/py_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char HELPER[] =
    "import os, sys, traceback, importlib.util, inspect\n"
    "class Buf:\n"
    "    __slots__ = ('c', 'd')\n"
    "    def __init__(self, c, d): self.c = c; self.d = d\n"
    "    def __dlpack__(self, stream=None): return self.c\n"
    "    def __dlpack_device__(self): return self.d\n"
    "def load(path, name, source=None, origin=None):\n"
    "    if source is not None:\n"
    "        import types\n"
    "        m = types.ModuleType(name)\n"
    "        m.__file__ = origin\n"
    "        import linecache\n"
    "        linecache.cache[origin] = (len(source), None, source.splitlines(True), origin)\n"
    "        exec(compile(source, origin, 'exec'), m.__dict__)\n"
    "        return m\n"
    "    spec = importlib.util.spec_from_file_location(name, path)\n"
    "    if spec is None: raise ImportError(f'{path}: not a Python file')\n"
    "    m = importlib.util.module_from_spec(spec)\n"
    "    d = os.path.dirname(os.path.abspath(path))\n"
    "    sys.path.insert(0, d)\n"
    "    try: spec.loader.exec_module(m)\n"
    "    finally:\n"
    "        if d in sys.path: sys.path.remove(d)\n"
    "    return m\n"
    "def arity(fn, n):\n"
    "    try: sig = inspect.signature(fn)\n"
    "    except (TypeError, ValueError): return ''\n"
    "    try: sig.bind(*range(n)); return ''\n"
    "    except TypeError as e:\n"
    "        return f'{getattr(fn, \"__name__\", \"it\")}{sig} cannot be called with {n} "
    "positional arguments ({e})'\n"
    "def np_view(mv, dtype, shape, strides):\n"
    "        import numpy\n"
    "        a = numpy.frombuffer(mv, dtype=dtype)\n"
    "        it = a.itemsize\n"
    "        return numpy.lib.stride_tricks.as_strided(a, shape=shape, strides=[s * it for s in "
    "strides], writeable=True)\n"
    "def span(o):\n"
    "    m = type(o).__module__.split('.')[0]\n"
    "    if m == 'numpy' and hasattr(o, 'dtype') and hasattr(o, 'shape'):\n"
    "        import numpy\n"
    "        return numpy.byte_bounds(numpy.asarray(o))\n"
    "    if m == 'torch' and hasattr(o, 'data_ptr'):\n"
    "        p, it = o.data_ptr(), o.element_size()\n"
    "        if o.numel() == 0: return (p, p)\n"
    "        st = list(zip(o.shape, o.stride()))\n"
    "        lo = p + sum((n - 1) * s for n, s in st if s < 0) * it\n"
    "        hi = p + (sum((n - 1) * s for n, s in st if s > 0) + 1) * it\n"
    "        return (lo, hi)\n"
    "    raise TypeError(f'a {type(o).__name__}, not a numpy array or a torch tensor')\n"
    "def copy_into(dst, src):\n"
    "    if type(dst).__module__.split('.')[0] == 'torch':\n"
    "        import torch\n"
    "        dst.copy_(src if isinstance(src, torch.Tensor) else torch.as_tensor(src))\n"
    "    else:\n"
    "        import numpy\n"
    "        numpy.copyto(dst, numpy.asarray(src), casting='unsafe')\n"
    "def tail(t, v, tb):\n"
    "    def cut(s, n): s = ' '.join(str(s).split()); return s if len(s) <= n else s[:n-3]+'...'\n"
    "    last = ''.join(traceback.format_exception_only(t, v)).strip().splitlines()\n"
    "    frames = [f for f in traceback.extract_tb(tb)\n"
    "              if f.filename != '<ktrial>' and not f.filename.startswith('<frozen')]\n"
    "    frames = frames[-2:]\n"
    "    lines = [cut(f'File \"{os.path.basename(f.filename)}\", line {f.lineno}, in {f.name}: "
    "{f.line or \"\"}', 110) for f in frames]\n"
    "    lines.append(cut(last[-1] if last else t.__name__, 160))\n"
    "    return 'traceback: ' + ' | '.join(lines)\n";

static PyObject *helper; /* the module HELPER made */
static int loaded[2];    /* the frameworks imported, by kt_py_framework */

int kt_py_built(void)
{
    return 1;
}

const char *kt_py_missing_reason(void)
{
    return "";
}

PyObject *kt_py_helper(const char *name)
{
    return PyObject_GetAttrString(helper, name);
}

int kt_py_error(const char *what)
{
    PyObject *t = NULL, *v = NULL, *tb = NULL;
    PyErr_Fetch(&t, &v, &tb);
    if (!t)
        return kt_error_set("%s: failed without a Python exception", what);
    PyErr_NormalizeException(&t, &v, &tb);
    PyObject *fn = helper ? kt_py_helper("tail") : NULL;
    PyObject *s =
        fn ? PyObject_CallFunctionObjArgs(fn, t, v ? v : Py_None, tb ? tb : Py_None, NULL) : NULL;
    const char *text = s ? PyUnicode_AsUTF8(s) : NULL;
    if (text)
        kt_error_set("%s: %s", what, text);
    else
        kt_error_set("%s: %s", what, ((PyTypeObject *)t)->tp_name);
    PyErr_Clear();
    Py_XDECREF(s);
    Py_XDECREF(fn);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    return KT_ERROR;
}

kt_py_gil kt_py_enter(void)
{
    kt_py_gil g = {(int)PyGILState_Ensure()};
    return g;
}

void kt_py_leave(kt_py_gil g)
{
    PyGILState_Release((PyGILState_STATE)g.state);
}

void kt_py_decref(kt_pyobj *o)
{
    Py_XDECREF(o);
}

void kt_py_incref(kt_pyobj *o)
{
    Py_XINCREF(o);
}

int kt_py_device_synchronize(void)
{
    PyObject *cuda = PyImport_ImportModule("torch.cuda");
    PyObject *r = cuda ? PyObject_CallMethod(cuda, "synchronize", NULL) : NULL;
    Py_XDECREF(cuda);
    if (!r)
        return kt_py_error("torch.cuda.synchronize");
    Py_DECREF(r);
    return KT_OK;
}

static int import_framework(kt_py_framework fw, int threads)
{
    PyObject *m = PyImport_ImportModule(fw == KT_PY_TORCH ? "torch" : "numpy");
    if (!m)
        return kt_py_error(fw == KT_PY_TORCH ? "import torch" : "import numpy");
    PyObject *r = fw == KT_PY_TORCH ? PyObject_CallMethod(m, "set_num_threads", "i", threads)
                                    : (Py_INCREF(Py_None), Py_None);
    Py_DECREF(m);
    if (!r)
        return kt_py_error("torch.set_num_threads");
    Py_DECREF(r);
    loaded[fw] = 1;
    return KT_OK;
}

/* The interpreter and the bridge's module, once per process; the GIL released on return. */
static int start_interpreter(int threads)
{
    if (!Py_IsInitialized()) {
        char n[16];
        snprintf(n, sizeof(n), "%d", threads);
        /* numpy's BLAS reads these when it is loaded; torch is told below */
        setenv("OPENBLAS_NUM_THREADS", n, 1);
        setenv("OMP_NUM_THREADS", n, 1);
        setenv("MKL_NUM_THREADS", n, 1);
        Py_InitializeEx(0); /* 0: no signal handlers; ktrial keeps its own */
        if (!Py_IsInitialized())
            return kt_error_set("cannot start the Python interpreter");
        PyObject *code = Py_CompileString(HELPER, "<ktrial>", Py_file_input);
        helper = code ? PyImport_ExecCodeModule("_ktrial_bridge", code) : NULL;
        Py_XDECREF(code);
        int err = helper ? KT_OK : kt_py_error("the bridge's own module");
        PyEval_SaveThread();
        if (err < 0)
            return err;
    }
    return helper ? KT_OK : kt_error_set("the bridge's own module failed to load");
}

int kt_py_start(kt_py_framework fw, int threads)
{
    if (threads < 1)
        threads = 1;
    int err = start_interpreter(threads);
    if (err < 0 || loaded[fw])
        return err;
    kt_py_gil g = kt_py_enter();
    err = import_framework(fw, threads);
    kt_py_leave(g);
    return err;
}

int kt_py_has_module(const char *name)
{
    if (start_interpreter(1) < 0)
        return 0;
    kt_py_gil g = kt_py_enter();
    PyObject *util = PyImport_ImportModule("importlib.util");
    PyObject *spec = util ? PyObject_CallMethod(util, "find_spec", "s", name) : NULL;
    int found = spec && spec != Py_None;
    PyErr_Clear();
    Py_XDECREF(spec);
    Py_XDECREF(util);
    kt_py_leave(g);
    return found;
}

static int load(kt_pyobj **module, PyObject *args, const char *what)
{
    PyObject *fn = kt_py_helper("load");
    *module = fn ? PyObject_CallObject(fn, args) : NULL;
    Py_XDECREF(fn);
    Py_XDECREF(args);
    return *module ? KT_OK : kt_py_error(what);
}

int kt_py_import_file(kt_pyobj **module, const char *path, const char *name)
{
    char what[320];
    snprintf(what, sizeof(what), "cannot import '%s'", path);
    return load(module, Py_BuildValue("(ss)", path, name), what);
}

int kt_py_import_source(kt_pyobj **module, const char *source, const char *origin, const char *name)
{
    char what[320];
    snprintf(what, sizeof(what), "cannot import '%s'", origin);
    return load(module, Py_BuildValue("(Ozss)", Py_None, name, source, origin), what);
}

int kt_py_attr_callable(kt_pyobj **fn, kt_pyobj *module, const char *name)
{
    *fn = NULL;
    if (!PyObject_HasAttrString(module, name))
        return kt_error_code(KT_EINVAL, "defines no function '%s'", name);
    PyObject *f = PyObject_GetAttrString(module, name);
    if (!f)
        return kt_py_error("getattr");
    if (!PyCallable_Check(f)) {
        int err =
            kt_error_code(KT_EINVAL, "'%s' is a %s, not a function", name, Py_TYPE(f)->tp_name);
        Py_DECREF(f);
        return err;
    }
    *fn = f;
    return KT_OK;
}

int kt_py_check_arity(kt_pyobj *fn, int nargs)
{
    PyObject *h = kt_py_helper("arity");
    PyObject *r = h ? PyObject_CallFunction(h, "Oi", fn, nargs) : NULL;
    Py_XDECREF(h);
    if (!r)
        return kt_py_error("inspect.signature");
    const char *s = PyUnicode_AsUTF8(r);
    int err = s && s[0] ? kt_error_code(KT_EINVAL, "%s", s) : KT_OK;
    Py_DECREF(r);
    return err;
}

int kt_py_call(kt_pyobj **result, kt_pyobj *fn, kt_pyobj *args, const char *what)
{
    *result = PyObject_CallObject(fn, args);
    return *result ? KT_OK : kt_py_error(what);
}

int kt_py_tuple(kt_pyobj **out, kt_pyobj *const *items, int n, int list)
{
    PyObject *o = list ? PyList_New(n) : PyTuple_New(n);
    if (!o) {
        for (int i = 0; i < n; i++)
            Py_XDECREF(items[i]);
        return kt_py_error("a tuple");
    }
    for (int i = 0; i < n; i++) {
        if (list)
            PyList_SET_ITEM(o, i, items[i]);
        else
            PyTuple_SET_ITEM(o, i, items[i]);
    }
    *out = o;
    return KT_OK;
}

int kt_py_dict(kt_pyobj **out)
{
    *out = PyDict_New();
    return *out ? KT_OK : kt_py_error("a dict");
}

static int dict_set(kt_pyobj *dict, const char *key, PyObject *v)
{
    int rc = v ? PyDict_SetItemString(dict, key, v) : -1;
    Py_XDECREF(v);
    return rc == 0 ? KT_OK : kt_py_error("a dict item");
}

int kt_py_dict_set_int(kt_pyobj *dict, const char *key, int64_t value)
{
    return dict_set(dict, key, PyLong_FromLongLong((long long)value));
}

int kt_py_dict_set_str(kt_pyobj *dict, const char *key, const char *value)
{
    return dict_set(dict, key, PyUnicode_FromString(value));
}

int kt_py_dict_set_float(kt_pyobj *dict, const char *key, double value)
{
    return dict_set(dict, key, PyFloat_FromDouble(value));
}
