/* A gemm variant whose run never returns: a REJECT of that candidate ("hung"), and no
 * process of it left behind when ktrial itself is killed. */
#include "bad_plugin.h"

#include <unistd.h>

static int run(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    for (;;)
        pause();
    return KT_OK;
}

static const kt_variant v = {
    .op = "gemm", .name = "hang", .backend = "cpu", .doc = "never returns from run", .run = run};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &v);
}
