/* bench_ffd_model.h - what FFD's benchmarks share: the byte-count model of FFD's ceiling over
 * dense, the choice of catalog models, and their setup (catalog, cpu backend, op inputs). */
#ifndef KT_BENCH_FFD_MODEL_H
#define KT_BENCH_FFD_MODEL_H

#include "kernel.h"
#include "spec/catalog.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* FFD's bytes per token and KV head relative to dense: the scan reads d/4 code bytes and the
 * block's scales (4d bytes per block); a kept block adds V and its keys: the stored ones
 * (keys: stored, the default) or the fp8 residual (d bytes, keys: fp8). */
static inline double ffd_byte_bound(double kept, int64_t d, size_t size, int64_t block)
{
    double dense = 2.0 * (double)d * (double)size;
    double ffd =
        (double)d / 4 + 4.0 * (double)d / (double)block + kept * (2.0 * (double)d * (double)size);
    return dense / ffd;
}

/* A decode point of catalog model 'md''s heads: batch 1, 'context' tokens, id MODEL/b1/tCONTEXT. */
static inline kt_point bench_decode_point(const kt_model *md, int64_t context)
{
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    pt.model = *md;
    pt.batch_size = 1;
    pt.context_length = context;
    snprintf(pt.id, sizeof(pt.id), "%s/b1/t%lld", md->name, (long long)context);
    return pt;
}

/* Whether catalog model 'name' is in the comma-separated list 'models' (NULL: all). */
static inline int ffd_bench_model_selected(const char *models, const char *name)
{
    if (!models)
        return 1;
    size_t n = strlen(name);
    for (const char *p = models; (p = strstr(p, name)); p += n)
        if ((p == models || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

/* Loads the catalog into 'cat', opens the cpu backend with 'threads' into '*b' and fills 'in'
 * with attention_decode's default input params; 0, or -1 after a message naming 'prog'. */
static inline int ffd_bench_open(kt_catalog *cat, kt_backend **b, kt_param_value *in, int threads,
                                 const char *prog)
{
    const kt_op *op = kt_op_find("attention_decode");
    kt_param_defaults(in, op->input_params, op->n_input_params);
    kt_diag diag;
    kt_diag_init(&diag);
    int err = kt_catalog_load(cat, &diag);
    kt_diag_free(&diag);
    if (err < 0 || kt_backend_open(b, "cpu", threads, 1) < 0) {
        fprintf(stderr, "%s: cannot load the catalog or open the cpu backend\n", prog);
        if (err >= 0)
            kt_catalog_free(cat);
        return -1;
    }
    return 0;
}

#endif
