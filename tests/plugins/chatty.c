/* A gemm variant that computes like the built-in blas variant and prints to stdout wherever
 * it runs: the library's constructor, kt_plugin_init (in the probe and in ktrial itself),
 * prepare, run and release (in the plan's calibration and the point's worker). None of it
 * may reach ktrial's stdout, which 'run --json' and 'kernels --json' fill with JSON. */
#include "bad_plugin.h"

#include <stdio.h>

/* flushed at once: ktrial's children end with _exit, which drops stdio's buffers */
static void say(const char *what)
{
    printf("chatty: %s\n", what);
    fflush(stdout);
}

__attribute__((constructor)) static void loaded(void)
{
    say("loaded");
}

static int prepare(void **state, const kt_call *call)
{
    say("prepare");
    return test_blas_prepare(state, call);
}

static int run(void *state, const kt_call *call)
{
    say("run");
    return test_blas_run(state, call);
}

static void release(void *state, kt_backend *backend)
{
    say("release");
    test_blas_release(state, backend);
}

static const kt_variant v = {.op = "gemm",
                             .name = "chatty",
                             .backend = "cpu",
                             .doc = "prints to stdout",
                             .prepare = prepare,
                             .run = run,
                             .release = release};

int kt_plugin_init(kt_plugin_registrar *r)
{
    say("kt_plugin_init");
    return r->add_variant(r, &v);
}
