/* kt_plugin_init dereferences NULL: a validation error (65), ktrial itself survives. */
#include "bad_plugin.h"

int kt_plugin_init(kt_plugin_registrar *r)
{
    (void)r;
    test_crash();
    return KT_OK;
}
