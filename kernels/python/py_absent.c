/* py_absent.c - py_runtime.h in a build without the Python headers: every function refuses
 * with the reason (how to get Python built in), so the callers need no #ifdef. */
#include "python/py_runtime.h"

static const char WHY[] = "this ktrial was built without Python (install libpython3-dev and "
                          "libdlpack-dev, and configure with -DKT_PYTHON=ON)";

#define REFUSE() kt_error_code(KT_EUNSUPPORTED, "%s", WHY)

int kt_py_built(void)
{
    return 0;
}

const char *kt_py_missing_reason(void)
{
    return WHY;
}

int kt_py_start(kt_py_framework fw, int threads)
{
    (void)fw;
    (void)threads;
    return REFUSE();
}

int kt_py_has_module(const char *name)
{
    (void)name;
    return 0;
}

kt_py_gil kt_py_enter(void)
{
    kt_py_gil g = {0};
    return g;
}

void kt_py_leave(kt_py_gil g)
{
    (void)g;
}

void kt_py_decref(kt_pyobj *o)
{
    (void)o;
}

void kt_py_incref(kt_pyobj *o)
{
    (void)o;
}

int kt_py_device_synchronize(void)
{
    return REFUSE();
}

int kt_py_import_file(kt_pyobj **module, const char *path, const char *name)
{
    (void)path;
    (void)name;
    *module = NULL;
    return REFUSE();
}

int kt_py_import_source(kt_pyobj **module, const char *source, const char *origin, const char *name)
{
    (void)source;
    (void)origin;
    (void)name;
    *module = NULL;
    return REFUSE();
}

int kt_py_attr_callable(kt_pyobj **fn, kt_pyobj *module, const char *name)
{
    (void)module;
    (void)name;
    *fn = NULL;
    return REFUSE();
}

int kt_py_check_arity(kt_pyobj *fn, int nargs)
{
    (void)fn;
    (void)nargs;
    return REFUSE();
}

int kt_py_wrap(kt_pyobj **out, const kt_py_buffer *b, kt_py_framework fw)
{
    (void)b;
    (void)fw;
    *out = NULL;
    return REFUSE();
}

int kt_py_call(kt_pyobj **result, kt_pyobj *fn, kt_pyobj *args, const char *what)
{
    (void)fn;
    (void)args;
    (void)what;
    *result = NULL;
    return REFUSE();
}

int kt_py_tuple(kt_pyobj **out, kt_pyobj *const *items, int n, int list)
{
    (void)items;
    (void)n;
    (void)list;
    *out = NULL;
    return REFUSE();
}

int kt_py_dict(kt_pyobj **out)
{
    *out = NULL;
    return REFUSE();
}

int kt_py_dict_set_int(kt_pyobj *dict, const char *key, int64_t value)
{
    (void)dict;
    (void)key;
    (void)value;
    return REFUSE();
}

int kt_py_dict_set_str(kt_pyobj *dict, const char *key, const char *value)
{
    (void)dict;
    (void)key;
    (void)value;
    return REFUSE();
}

int kt_py_dict_set_float(kt_pyobj *dict, const char *key, double value)
{
    (void)dict;
    (void)key;
    (void)value;
    return REFUSE();
}

int kt_py_memory_range(kt_pyobj *o, uintptr_t *lo, uintptr_t *hi)
{
    (void)o;
    *lo = *hi = 0;
    return REFUSE();
}

int kt_py_copy_into(kt_pyobj *dst, kt_pyobj *src, const char *what)
{
    (void)dst;
    (void)src;
    (void)what;
    return REFUSE();
}

int kt_py_items(kt_pyobj *o, kt_pyobj **items, int max)
{
    (void)o;
    (void)items;
    (void)max;
    return 0;
}

int kt_py_is_none(kt_pyobj *o)
{
    (void)o;
    return 0;
}

int kt_py_error(const char *what)
{
    return kt_error_set("%s: %s", what, WHY);
}
