/* Includes the header but never defines kt_plugin_init. */
#include "bad_plugin.h"

__attribute__((visibility("default"))) int kt_plugin_setup(void)
{
    return 0;
}
