/* py_tensor.c - ktrial's buffers as tensors of the embedded interpreter (py_runtime.h): torch
 * through a DLPack capsule, numpy through a writable view of the same memory; and what a
 * returned value covers, copying it, and its items. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "python/py_internal.h"

#include <dlpack/dlpack.h>
#include <stdlib.h>

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
    PyObject *fn = kt_py_helper("np_view");
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
    PyObject *cls = kt_py_helper("Buf");
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

int kt_py_memory_range(kt_pyobj *o, uintptr_t *lo, uintptr_t *hi)
{
    PyObject *h = kt_py_helper("span");
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
    PyObject *h = kt_py_helper("copy_into");
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
