/* Built against a future major version of the plugin ABI. */
#define KT_PLUGIN_HOST 1 /* no automatic tag: this file writes its own */
#include "bad_plugin.h"

__attribute__((visibility("default"))) const uint32_t kt_plugin_abi_version = (99u << 16) | 2u;

int kt_plugin_init(kt_plugin_registrar *r)
{
    (void)r;
    return KT_OK;
}
