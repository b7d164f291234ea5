/* py_runtime.h - CPython embedded in the calling process, and ktrial's buffers handed to it
 * through DLPack without a copy. The layer every Python arm kind stands on (python: arms,
 * the torch variants, op: pymodule).
 *
 * Contract:
 *   - Built only where the Python headers were found (KT_HAVE_PYTHON); without them every
 *     function here returns KT_EUNSUPPORTED with the reason kt_py_missing_reason() gives.
 *   - kt_py_start starts the interpreter in the calling process, once; call it only in a
 *     process that will not fork a ktrial worker afterwards (the per-point worker after its
 *     fork, or a throwaway probe child), never in the ktrial parent. It imports the
 *     framework (numpy, or torch and numpy) and sets its threads (torch.set_num_threads; for
 *     numpy the BLAS thread variables are set before the import). On return the GIL is
 *     released: every other call below must sit between kt_py_enter and kt_py_leave, from
 *     any thread.
 *   - Objects are CPython's own (kt_pyobj is PyObject): a function returning one returns a new
 *     reference, which the caller drops with kt_py_decref (holding the GIL).
 *   - Errors: a Python exception becomes a kt_error message "WHAT: Type: message
 *     (traceback: LAST | LINES)", one line, ending with the last lines of the traceback; the
 *     exception is cleared. Functions return KT_OK or a negative code with the message set.
 */
#ifndef KT_PY_RUNTIME_H
#define KT_PY_RUNTIME_H

#include "kernel.h"

#include <stddef.h>
#include <stdint.h>

typedef struct _object kt_pyobj; /* PyObject */

typedef enum { KT_PY_NUMPY = 0, KT_PY_TORCH } kt_py_framework;

/* "numpy" | "torch"; parses a name into '*out' (KT_OK or KT_EINVAL). */
const char *kt_py_framework_name(kt_py_framework fw);
int kt_py_framework_parse(kt_py_framework *out, const char *name);

/* 1 when this build embeds Python; else 0 and kt_py_missing_reason() says why. */
int kt_py_built(void);
const char *kt_py_missing_reason(void);

/* Starts the interpreter (once per process), imports 'fw' and sets its threads (>= 1).
 * Calling it again with another framework imports that one too. GIL released on return. */
int kt_py_start(kt_py_framework fw, int threads);

/* 1 when module 'name' can be found (importlib.util.find_spec, without importing it); starts
 * the interpreter when it is not. */
int kt_py_has_module(const char *name);

/* The GIL around every call below (nests; any thread). */
typedef struct kt_py_gil {
    int state;
} kt_py_gil;
kt_py_gil kt_py_enter(void);
void kt_py_leave(kt_py_gil g);

void kt_py_decref(kt_pyobj *o);
void kt_py_incref(kt_pyobj *o);

/* Imports the file at 'path' as a fresh module called 'name' (not put in sys.modules under the
 * file's own name, so two arms' files of one name do not clash); its folder goes first on
 * sys.path while it runs, so it may import its neighbours. */
int kt_py_import_file(kt_pyobj **module, const char *path, const char *name);
/* The same from source text ('origin' names it in tracebacks). */
int kt_py_import_source(kt_pyobj **module, const char *source, const char *origin,
                        const char *name);
/* module.NAME, which must be callable. */
int kt_py_attr_callable(kt_pyobj **fn, kt_pyobj *module, const char *name);
/* KT_OK when 'fn' can be called with 'nargs' positional arguments (inspect.signature). */
int kt_py_check_arity(kt_pyobj *fn, int nargs);

/* One buffer of ktrial's, as DLPack describes it: 'strides' in elements (NULL: row-major
 * contiguous); device 0 the host, 1 a CUDA device 'device_id'. */
typedef struct kt_py_buffer {
    void *data;
    kt_dtype dtype;
    int ndim;
    const int64_t *shape;
    const int64_t *strides;
    int device;
    int device_id;
} kt_py_buffer;

/* A tensor of 'fw' over 'b', sharing its memory: no copy, writes go to ktrial's buffer. torch
 * gets it through DLPack (torch.from_dlpack of a DLManagedTensor capsule, host or CUDA);
 * numpy through the buffer protocol (numpy 1.24's from_dlpack arrays are read-only), host
 * memory only. numpy has no bfloat16: KT_EUNSUPPORTED. */
int kt_py_wrap(kt_pyobj **out, const kt_py_buffer *b, kt_py_framework fw);

/* fn(*args): 'args' a tuple built with kt_py_tuple. '*result' gets the return value (new
 * reference; may be None). 'what' heads the message of an exception. */
int kt_py_call(kt_pyobj **result, kt_pyobj *fn, kt_pyobj *args, const char *what);
/* A tuple of 'n' objects (references stolen) or a list when 'list' is 1. */
int kt_py_tuple(kt_pyobj **out, kt_pyobj *const *items, int n, int list);
/* A dict from names to int64 or double values (kt_py_dict_set_*). */
int kt_py_dict(kt_pyobj **out);
int kt_py_dict_set_int(kt_pyobj *dict, const char *key, int64_t value);
int kt_py_dict_set_str(kt_pyobj *dict, const char *key, const char *value);
int kt_py_dict_set_float(kt_pyobj *dict, const char *key, double value);

/* The address range [*lo, *hi) of the memory a numpy array or torch tensor covers; KT_EINVAL
 * with the reason when 'o' is neither (a returned value of another type). */
int kt_py_memory_range(kt_pyobj *o, uintptr_t *lo, uintptr_t *hi);
/* dst[...] = src (numpy.copyto / Tensor.copy_), broadcasting and casting as they do. */
int kt_py_copy_into(kt_pyobj *dst, kt_pyobj *src, const char *what);
/* For an object that is a tuple or list: its length and items (borrowed); else 1 and 'o'. */
int kt_py_items(kt_pyobj *o, kt_pyobj **items, int max);
/* 1 when 'o' is None. */
int kt_py_is_none(kt_pyobj *o);

/* torch.cuda.synchronize(): a torch arm's work on the device, on whatever streams torch used,
 * finished before its call returns. */
int kt_py_device_synchronize(void);

/* Sets the kt_error message from the pending Python exception (see the contract); returns
 * KT_ERROR. */
int kt_py_error(const char *what);

#endif
