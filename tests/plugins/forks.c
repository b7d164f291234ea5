/* A gemm variant that computes like the built-in blas variant and, in its first run, forks a
 * helper that never ends (as a library that starts a daemon would): the helper keeps every
 * file the worker had open, the worker's pipe to ktrial among them, and adds its pid to
 * 'forked.pid' in the working folder (one from the plan's calibration of the arm, one from
 * the point's worker). None may hold the run up or outlive it. */
#include "bad_plugin.h"

#include <stdio.h>
#include <unistd.h>

static const kt_variant *built_in; /* blas, found through the first call's lookup */

static const kt_variant *blas(const kt_call *call)
{
    return built_in = call->lookup->variant("gemm", "cpu", "blas");
}

static int prepare(void **state, const kt_call *call)
{
    return blas(call)->prepare(state, call);
}

static int run(void *state, const kt_call *call)
{
    static int forked;
    if (!forked++ && fork() == 0) {
        FILE *f = fopen("forked.pid", "a");
        if (f) {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        }
        for (;;)
            pause();
    }
    return blas(call)->run(state, call);
}

static void release(void *state, kt_backend *backend)
{
    built_in->release(state, backend);
}

static const kt_variant v = {.op = "gemm",
                             .name = "forks",
                             .backend = "cpu",
                             .doc = "forks a helper that never ends",
                             .prepare = prepare,
                             .run = run,
                             .release = release};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &v);
}
