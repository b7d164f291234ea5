/* bad_plugin.h - pieces shared by the test plugins: each .c here is one way a plugin can go
 * wrong (or right), built as lib<target>.so by cmake/plugins.cmake. */
#ifndef KT_TEST_BAD_PLUGIN_H
#define KT_TEST_BAD_PLUGIN_H

#include <ktrial/plugin.h>

#include <stdint.h>

static const kt_param_def test_params[] = {
    {"block", KT_PARAM_INT, 16, 1, 256, NULL, "unused"},
};

static inline void test_crash(void)
{
    *(volatile int *)(uintptr_t)0 = 1; /* a real SIGSEGV, not raise() */
}

#endif
