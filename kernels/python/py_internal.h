/* py_internal.h - what py_runtime.c and py_tensor.c share: the bridge's own Python module.
 * Include after <Python.h>. */
#ifndef KT_PY_INTERNAL_H
#define KT_PY_INTERNAL_H

#include "python/py_runtime.h"

/* Attribute 'name' of the bridge's module (a new reference), or NULL with the exception set. */
PyObject *kt_py_helper(const char *name);

#endif
