/* cublaslt_load.c - fills kt_lt from libcublasLt.so.<major> with dlopen and dlsym, once per
 * process (pthread_once); a missing library or symbol is an error message, never a crash. */
#include "cublaslt_load.h"

#include "../kernel.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

kt_cublaslt_table kt_lt;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[512]; /* empty: loaded */

static void load(void)
{
    void *lib = dlopen(KT_CUBLASLT_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(load_error, sizeof(load_error), "%s", dlerror());
        return;
    }
    kt_cublaslt_table t;
    void *sym;
#define KT_LT_RESOLVE(name)                                                                        \
    dlerror();                                                                                     \
    sym = dlsym(lib, "cublasLt" #name);                                                            \
    if (!sym) {                                                                                    \
        const char *why = dlerror();                                                               \
        snprintf(load_error, sizeof(load_error), "%s",                                             \
                 why ? why : "cublasLt" #name ": symbol is NULL");                                 \
        dlclose(lib);                                                                              \
        return;                                                                                    \
    }                                                                                              \
    *(void **)&t.name = sym;
    KT_CUBLASLT_FUNCTIONS(KT_LT_RESOLVE)
#undef KT_LT_RESOLVE
    kt_lt = t; /* the library stays open for the life of the process */
}

int kt_cublaslt_load(void)
{
    pthread_once(&load_once, load);
    if (load_error[0])
        return kt_error_set("cannot load %s: %s", KT_CUBLASLT_SONAME, load_error);
    return KT_OK;
}
