/* version.c - build identity, from definitions the build system passes in. */
#include "util/version.h"
#include "kt_build_commit.h"
#include "kt_build_info.h"

const char *kt_version(void)
{
    return KT_VERSION;
}

const char *kt_build_commit(void)
{
    return KT_BUILD_COMMIT;
}

int kt_build_dirty(void)
{
    return KT_BUILD_DIRTY;
}

const char *kt_build_type(void)
{
    return KT_BUILD_TYPE;
}

const char *kt_build_compiler(void)
{
    return KT_C_COMPILER;
}

const char *kt_build_flags(void)
{
    return KT_C_FLAGS;
}

const char *kt_build_cuda_compiler(void)
{
#ifdef KT_CUDA_COMPILER
    return KT_CUDA_COMPILER;
#else
    return 0;
#endif
}

const char *kt_build_source_dir(void)
{
    return KT_SOURCE_DIR;
}
