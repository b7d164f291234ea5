/* py_runtime.c - CPython embedded in this process (py_runtime.h): start-up, imports, DLPack
 * tensors over ktrial's buffers, calls, and exceptions made into one-line messages.
 *
 * The Python side of the bridge is the small module HELPER below, run once at start-up: the
 * DLPack producer object (from_dlpack wants an object with __dlpack__), numpy's writable view,
 * the file loader, the arity check, memory ranges, copies and the traceback tail. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "python/py_runtime.h"

#include <dlpack/dlpack.h>
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

static PyObject *helper_fn(const char *name)
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
    PyObject *fn = helper ? helper_fn("tail") : NULL;
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
    PyObject *fn = helper_fn("load");
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
    PyObject *h = helper_fn("arity");
    PyObject *r = h ? PyObject_CallFunction(h, "Oi", fn, nargs) : NULL;
    Py_XDECREF(h);
    if (!r)
        return kt_py_error("inspect.signature");
    const char *s = PyUnicode_AsUTF8(r);
    int err = s && s[0] ? kt_error_code(KT_EINVAL, "%s", s) : KT_OK;
    Py_DECREF(r);
    return err;
}

/* One DLManagedTensor and the shape and strides it points at, freed by its deleter. */
typedef struct dl_owned {
    DLManagedTensor m;
    int64_t shape[8];
    int64_t strides[8];
} dl_owned;

static void dl_delete(DLManagedTensor *m)
{
    free(m->manager_ctx);
}

static void capsule_gone(PyObject *cap)
{
    /* renamed "used_dltensor" once a framework took it; still ours otherwise */
    if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (m && m->deleter)
            m->deleter(m);
    }
}

static int dl_type(DLDataType *t, kt_dtype dtype, kt_py_framework fw)
{
    t->lanes = 1;
    t->bits = (uint8_t)(kt_dtype_size(dtype) * 8);
    if (dtype == KT_DTYPE_FP32 || dtype == KT_DTYPE_FP16)
        t->code = kDLFloat;
    else if (dtype == KT_DTYPE_BF16 && fw == KT_PY_TORCH)
        t->code = kDLBfloat;
    else
        return kt_error_code(KT_EUNSUPPORTED, "%s has no %s arrays%s", kt_py_framework_name(fw),
                             kt_dtype_name(dtype),
                             dtype == KT_DTYPE_BF16 ? " (use framework: torch)" : "");
    return KT_OK;
}

/* numpy 1.24's from_dlpack makes read-only arrays, which an arm could not write its outputs
 * into: a numpy arm gets a writable array over the same memory through the buffer protocol
 * (numpy.frombuffer over a memoryview), still without a copy. */
static int wrap_numpy(kt_pyobj **out, const kt_py_buffer *b, const dl_owned *d)
{
    int64_t extent = 1;
    for (int i = 0; i < b->ndim; i++) {
        if (d->shape[i] == 0)
            extent = 0;
        if (d->strides[i] < 0)
            return kt_error_code(KT_EUNSUPPORTED, "numpy arms take no negative strides");
    }
    for (int i = 0; extent && i < b->ndim; i++)
        extent += (d->shape[i] - 1) * d->strides[i];
    PyObject *mv = PyMemoryView_FromMemory(
        b->data, (Py_ssize_t)(extent * (int64_t)kt_dtype_size(b->dtype)), PyBUF_WRITE);
    PyObject *shape = PyTuple_New(b->ndim), *strides = PyTuple_New(b->ndim);
    for (int i = 0; shape && strides && i < b->ndim; i++) {
        PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong((long long)d->shape[i]));
        PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong((long long)d->strides[i]));
    }
    PyObject *fn = helper_fn("np_view");
    const char *dtype = b->dtype == KT_DTYPE_FP16 ? "float16" : "float32";
    *out = fn && mv && shape && strides
               ? PyObject_CallFunction(fn, "OsOO", mv, dtype, shape, strides)
               : NULL;
    Py_XDECREF(fn);
    Py_XDECREF(mv);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    return *out ? KT_OK : kt_py_error("a numpy array over the buffer");
}

int kt_py_wrap(kt_pyobj **out, const kt_py_buffer *b, kt_py_framework fw)
{
    *out = NULL;
    if (b->ndim < 0 || b->ndim > 8)
        return kt_error_code(KT_EINVAL, "a tensor of %d dimensions", b->ndim);
    dl_owned *d = calloc(1, sizeof(*d));
    if (!d)
        return kt_error_code(KT_ENOMEM, "out of memory");
    int err = dl_type(&d->m.dl_tensor.dtype, b->dtype, fw);
    if (err < 0) {
        free(d);
        return err;
    }
    int64_t step = 1;
    for (int i = b->ndim - 1; i >= 0; i--) {
        d->shape[i] = b->shape[i];
        d->strides[i] = b->strides ? b->strides[i] : step;
        step *= b->shape[i];
    }
    if (fw == KT_PY_NUMPY) {
        if (b->device) {
            free(d);
            return kt_error_code(KT_EUNSUPPORTED, "numpy cannot reach device memory (use "
                                                  "framework: torch)");
        }
        err = wrap_numpy(out, b, d);
        free(d);
        return err;
    }
    DLTensor *t = &d->m.dl_tensor;
    t->data = b->data;
    t->device.device_type = b->device ? kDLCUDA : kDLCPU;
    t->device.device_id = b->device ? b->device_id : 0;
    t->ndim = b->ndim;
    t->shape = d->shape;
    t->strides = d->strides;
    d->m.manager_ctx = d;
    d->m.deleter = dl_delete;
    PyObject *cap = PyCapsule_New(&d->m, "dltensor", capsule_gone);
    if (!cap) {
        free(d);
        return kt_py_error("DLPack capsule");
    }
    PyObject *cls = helper_fn("Buf");
    PyObject *buf = cls ? PyObject_CallFunction(cls, "O(ii)", cap, (int)t->device.device_type,
                                                t->device.device_id)
                        : NULL;
    Py_XDECREF(cls);
    Py_DECREF(cap);
    PyObject *mod = buf ? PyImport_ImportModule(kt_py_framework_name(fw)) : NULL;
    *out = mod ? PyObject_CallMethod(mod, "from_dlpack", "O", buf) : NULL;
    Py_XDECREF(mod);
    Py_XDECREF(buf);
    if (!*out) {
        char what[64];
        snprintf(what, sizeof(what), "%s.from_dlpack", kt_py_framework_name(fw));
        return kt_py_error(what);
    }
    return KT_OK;
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

int kt_py_memory_range(kt_pyobj *o, uintptr_t *lo, uintptr_t *hi)
{
    PyObject *h = helper_fn("span");
    PyObject *r = h ? PyObject_CallFunctionObjArgs(h, o, NULL) : NULL;
    Py_XDECREF(h);
    unsigned long long a = 0, b = 0;
    int ok = r && PyArg_ParseTuple(r, "KK", &a, &b);
    Py_XDECREF(r);
    if (!ok) {
        kt_py_error("the returned value");
        return KT_EINVAL;
    }
    *lo = (uintptr_t)a;
    *hi = (uintptr_t)b;
    return KT_OK;
}

int kt_py_copy_into(kt_pyobj *dst, kt_pyobj *src, const char *what)
{
    PyObject *h = helper_fn("copy_into");
    PyObject *r = h ? PyObject_CallFunctionObjArgs(h, dst, src, NULL) : NULL;
    Py_XDECREF(h);
    if (!r)
        return kt_py_error(what);
    Py_DECREF(r);
    return KT_OK;
}

int kt_py_items(kt_pyobj *o, kt_pyobj **items, int max)
{
    if (PyTuple_Check(o) || PyList_Check(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < n && i < max; i++)
            items[i] = PySequence_Fast_GET_ITEM(o, i);
        return (int)n;
    }
    if (max > 0)
        items[0] = o;
    return 1;
}

int kt_py_is_none(kt_pyobj *o)
{
    return o == Py_None;
}
