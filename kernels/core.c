/* core.c - params, tensors and the counting wrappers around a backend vtable. */
#include "kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *kt_phase_name(kt_phase phase)
{
    return phase == KT_PHASE_PREFILL ? "prefill" : "decode";
}

const char *kt_role_name(kt_role role)
{
    switch (role) {
    case KT_ROLE_QKV:
        return "qkv";
    case KT_ROLE_O:
        return "o";
    case KT_ROLE_GATE_UP:
        return "gate_up";
    case KT_ROLE_DOWN:
        return "down";
    default:
        return "none";
    }
}

unsigned kt_role_model_fields(kt_role role)
{
    switch (role) {
    case KT_ROLE_QKV:
        return KT_MODEL_HIDDEN | KT_MODEL_HEADS | KT_MODEL_KV_HEADS | KT_MODEL_HEAD_DIM;
    case KT_ROLE_O:
        return KT_MODEL_HIDDEN | KT_MODEL_HEADS | KT_MODEL_HEAD_DIM;
    case KT_ROLE_GATE_UP:
    case KT_ROLE_DOWN:
        return KT_MODEL_HIDDEN | KT_MODEL_INTERMEDIATE;
    default:
        return 0;
    }
}

const char *kt_distribution_name(kt_distribution d)
{
    switch (d) {
    case KT_DIST_UNIFORM:
        return "uniform";
    case KT_DIST_LLM:
        return "llm";
    default:
        return "normal";
    }
}

int kt_param_index(const kt_param_def *defs, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(defs[i].name, name) == 0)
            return i;
    return -1;
}

int kt_param_choice_index(const char *choices, const char *choice)
{
    size_t len = strlen(choice);
    int index = 0;
    for (const char *p = choices; p && *p; index++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncmp(p, choice, n) == 0)
            return index;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

const char *kt_param_choice_name(char *buf, size_t len, const char *choices, int index)
{
    buf[0] = '\0';
    const char *p = choices;
    for (int i = 0; p && i < index; i++) {
        p = strchr(p, '|');
        if (p)
            p++;
    }
    if (!p || len == 0)
        return buf;
    const char *bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    if (n >= len)
        n = len - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

void kt_param_defaults(kt_param_value *values, const kt_param_def *defs, int n)
{
    for (int i = 0; i < n; i++)
        values[i].num = defs[i].def;
}

int64_t kt_tensor_elems(const kt_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->dims[i];
    return n;
}

size_t kt_tensor_bytes(const kt_tensor *t)
{
    return (size_t)kt_tensor_elems(t) * kt_dtype_size(t->dtype);
}

void kt_device_info_add(kt_device_info *info, const char *key, const char *fmt, ...)
{
    if (info->n >= KT_INFO_MAX)
        return;
    snprintf(info->items[info->n].key, sizeof(info->items[0].key), "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(info->items[info->n].value, sizeof(info->items[0].value), fmt, ap);
    va_end(ap);
    info->n++;
}

const char *kt_backend_name(const kt_backend *b)
{
    return b->iface->name;
}

int kt_backend_open_iface(kt_backend **out, const kt_backend_iface *iface, int threads,
                          uint64_t seed)
{
    kt_backend *b = calloc(1, sizeof(*b));
    if (!b)
        return kt_error_code(KT_ENOMEM, "out of memory");
    b->iface = iface;
    b->threads = threads > 0 ? threads : 1;
    int err = iface->init(&b->ctx, b->threads, seed);
    if (err < 0) {
        free(b);
        return err;
    }
    *out = b;
    return KT_OK;
}

void kt_backend_close(kt_backend *b)
{
    if (!b)
        return;
    b->iface->shutdown(b->ctx);
    free(b);
}

int kt_backend_alloc(kt_backend *b, void **ptr, size_t bytes)
{
    int err = b->iface->alloc(b->ctx, ptr, bytes ? bytes : 1);
    if (err < 0)
        return err;
    b->bytes_current += bytes;
    if (b->bytes_current > b->bytes_peak)
        b->bytes_peak = b->bytes_current;
    return KT_OK;
}

void kt_backend_free(kt_backend *b, void *ptr, size_t bytes)
{
    if (!ptr)
        return;
    b->iface->free(b->ctx, ptr);
    b->bytes_current = bytes > b->bytes_current ? 0 : b->bytes_current - bytes;
}

int kt_backend_upload(kt_backend *b, void *dst, const void *src, size_t bytes)
{
    return b->iface->upload(b->ctx, dst, src, bytes);
}

int kt_backend_download(kt_backend *b, void *dst, const void *src, size_t bytes)
{
    return b->iface->download(b->ctx, dst, src, bytes);
}

int kt_backend_flush_cache(kt_backend *b)
{
    return b->iface->flush_cache(b->ctx);
}

int kt_backend_timer_start(kt_backend *b)
{
    return b->iface->timer_start(b->ctx);
}

double kt_backend_timer_tick_ns(kt_backend *b)
{
    if (b->iface->timer_tick_ns)
        return b->iface->timer_tick_ns(b->ctx);
    double tick = INFINITY;
    for (int i = 0; i < 200; i++) {
        kt_timing t;
        if (b->iface->timer_start(b->ctx) < 0 || b->iface->timer_stop(b->ctx, &t) < 0)
            return NAN;
        if (t.time_ns > 0 && t.time_ns < tick)
            tick = t.time_ns;
    }
    return isfinite(tick) ? tick : 0.0;
}

int kt_backend_timer_stop(kt_backend *b, kt_timing *out)
{
    return b->iface->timer_stop(b->ctx, out);
}

int kt_backend_synchronize(kt_backend *b)
{
    return b->iface->synchronize(b->ctx);
}

void kt_backend_reset_peak(kt_backend *b)
{
    b->bytes_peak = b->bytes_current;
}

int kt_backend_place_threads(kt_backend *b, int compact)
{
    return b->iface->place_threads ? b->iface->place_threads(compact) : KT_OK;
}
