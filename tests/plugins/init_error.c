/* kt_plugin_init fails with a reason. */
#include "bad_plugin.h"

int kt_plugin_init(kt_plugin_registrar *r)
{
    (void)r;
    return kt_error_code(KT_EINVAL, "the tuning table 'tiles.bin' is missing");
}
