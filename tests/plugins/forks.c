/* A gemm variant that computes like the built-in blas variant and, in its first run, forks a
 * helper that never ends (as a library that starts a daemon would): the helper keeps every
 * file the worker had open, the worker's pipe to ktrial among them, and adds its pid to
 * 'forked.pid' in the working folder (one from the plan's calibration of the arm, one from
 * the point's worker). None may hold the run up or outlive it. */
#include "bad_plugin.h"

#include <stdio.h>
#include <unistd.h>

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
    return test_blas_run(state, call);
}

static const kt_variant v = {.op = "gemm",
                             .name = "forks",
                             .backend = "cpu",
                             .doc = "forks a helper that never ends",
                             .prepare = test_blas_prepare,
                             .run = run,
                             .release = test_blas_release};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &v);
}
