/* py_framework.c - the names of the Python frameworks a Python arm may use, in every build
 * (a spec names them whether or not this build embeds Python). */
#include "python/py_runtime.h"

#include <string.h>

const char *kt_py_framework_name(kt_py_framework fw)
{
    return fw == KT_PY_TORCH ? "torch" : "numpy";
}

int kt_py_framework_parse(kt_py_framework *out, const char *name)
{
    if (strcmp(name, "numpy") == 0)
        *out = KT_PY_NUMPY;
    else if (strcmp(name, "torch") == 0)
        *out = KT_PY_TORCH;
    else
        return kt_error_code(KT_EINVAL, "framework '%s' is not torch or numpy", name);
    return KT_OK;
}
