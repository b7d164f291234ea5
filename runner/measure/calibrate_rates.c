/* calibrate_rates.c - measured input and reference rates, cached per host (see
 * calibrate_rates.h). */
#include "measure/calibrate_rates.h"
#include "fork_pipe.h"
#include "util/read_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cache_path(char *out, size_t len)
{
    const char *file = getenv("KT_CALIBRATION_FILE");
    if (file && file[0]) {
        snprintf(out, len, "%s", file);
        return 0;
    }
    char host[128] = "unknown";
    gethostname(host, sizeof(host) - 1);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0])
        snprintf(out, len, "%s/ktrial/calibration-%s.json", xdg, host);
    else if (home && home[0])
        snprintf(out, len, "%s/.cache/ktrial/calibration-%s.json", home, host);
    else
        return -1;
    return 0;
}

/* The cache is read whole: a cut-off read would not parse, and the next save would then
 * start a new file and lose every other arm. */
#define CACHE_MAX_BYTES (64u << 20)

static cJSON *load_cache(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    if (kt_read_file(&text, &len, path, CACHE_MAX_BYTES) < 0) {
        kt_error_clear(); /* no cache yet, or none to use: the plan measures */
        return NULL;
    }
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    return doc;
}

static void save_cache(const char *path, const char *key, const char *const *fields,
                       const double *values, int n)
{
    cJSON *doc = load_cache(path);
    if (!doc || !cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        doc = cJSON_CreateObject();
    }
    cJSON_DeleteItemFromObjectCaseSensitive(doc, key);
    cJSON *o = cJSON_AddObjectToObject(doc, key);
    for (int i = 0; i < n; i++)
        cJSON_AddNumberToObject(o, fields[i], values[i]);
    cJSON_AddNumberToObject(o, "measured_unix", (double)time(NULL));
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    if (!text)
        return;
    char dir[PATH_MAX], tmp[PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *s = dir + 1; *s; s++) /* mkdir -p of the folder */
        if (*s == '/') {
            *s = '\0';
            mkdir(dir, 0755);
            *s = '/';
        }
    snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (f) {
        int ok = fputs(text, f) >= 0;
        ok &= fclose(f) == 0;
        if (!ok || rename(tmp, path) != 0)
            remove(tmp); /* a cache only: the next plan measures again */
    }
    free(text);
}

int kt_calibration_cache_get(const char *key, const char *const *fields, double *values, int n)
{
    char path[PATH_MAX];
    if (cache_path(path, sizeof(path)) < 0)
        return -1;
    cJSON *doc = load_cache(path);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(doc, key);
    int found = cJSON_IsObject(o);
    for (int i = 0; i < n && found; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, fields[i]);
        found = cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0;
        if (found)
            values[i] = v->valuedouble;
    }
    cJSON_Delete(doc);
    return found ? 0 : -1;
}

void kt_calibration_cache_put(const char *key, const char *const *fields, const double *values,
                              int n)
{
    char path[PATH_MAX];
    if (cache_path(path, sizeof(path)) == 0)
        save_cache(path, key, fields, values, n);
}

static size_t map_len(const kt_tensor *t)
{
    size_t bytes = kt_tensor_bytes(t);
    return bytes ? bytes : 1;
}

/* Fresh pages for every input of 'p' (unmapping those of 'in' first): a point's worker
 * generates into buffers it has just allocated, so the rate must count their page faults. */
static int map_inputs(void **in, const kt_problem *p)
{
    for (int i = 0; i < p->n_inputs; i++) {
        if (in[i])
            munmap(in[i], map_len(&p->tensors[i]));
        in[i] = mmap(NULL, map_len(&p->tensors[i]), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (in[i] == MAP_FAILED) {
            in[i] = NULL;
            return -1;
        }
    }
    return 0;
}

/* In the child: generate (into fresh pages, in the spec's distribution) and reference on the
 * calibration point, best of three. */
static int measure(kt_calibration *out, const kt_op *op, kt_dtype dtype, kt_distribution dist)
{
    kt_point pt = kt_calibration_point();
    /* the op's defaults: shape and generate read input params (plugin.h passes them always) */
    kt_param_value params[KT_MAX_PARAMS];
    memset(params, 0, sizeof(params));
    kt_param_defaults(params, op->input_params, op->n_input_params);
    kt_problem p;
    if (kt_op_shape(op, &p, &pt, dtype, params) < 0)
        return -1;
    void *in[KT_MAX_TENSORS] = {0};
    double *ref[KT_MAX_TENSORS] = {0};
    double in_elems = 0;
    int rc = 0;
    for (int i = 0; i < p.n_inputs; i++)
        in_elems += (double)kt_tensor_elems(&p.tensors[i]);
    for (int o = 0; o < p.n_outputs && rc == 0; o++) {
        ref[o] = malloc((size_t)kt_tensor_elems(&p.tensors[p.n_inputs + o]) * sizeof(double));
        rc = ref[o] ? 0 : -1;
    }
    double gen = 1e30, refs = 1e30;
    for (int rep = 0; rep < 3 && rc == 0; rep++) {
        if ((rc = map_inputs(in, &p)) < 0)
            break;
        kt_input_config cfg = {dist, 7 + (uint64_t)rep, params};
        double t0 = now_s();
        rc = op->generate(&p, in, &cfg);
        double t1 = now_s();
        if (rc == 0)
            rc = op->reference(&p, (const void *const *)in, ref);
        double t2 = now_s();
        gen = t1 - t0 < gen ? t1 - t0 : gen;
        refs = t2 - t1 < refs ? t2 - t1 : refs;
    }
    for (int i = 0; i < KT_MAX_TENSORS; i++) {
        if (in[i])
            munmap(in[i], map_len(&p.tensors[i]));
        free(ref[i]);
    }
    if (rc != 0 || in_elems <= 0)
        return -1;
    out->gen_s_per_elem = gen / in_elems;
    out->ref_s_per_flop = refs / kt_calibration_work(&p);
    return 0;
}

int kt_calibration_in_child(void *out, size_t len, int (*fn)(void *out, const void *ctx),
                            const void *ctx)
{
    char buf[512];
    pid_t pid;
    int fd;
    if (len > sizeof(buf) || kt_fork_pipe(&pid, &fd, "a calibration") < 0)
        return -1;
    if (pid == 0) {
        int ok = fn(buf, ctx) == 0 && write(fd, buf, len) == (ssize_t)len;
        _exit(ok ? 0 : 1);
    }
    ssize_t n = 0;
    while (n < (ssize_t)len) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int ready = poll(&pfd, 1, 100);
        if (ready == 0 && kt_fork_pipe_ended(pid))
            break; /* all it wrote is read; a process it forked holds the pipe */
        if (ready < 0 && errno != EINTR)
            break;
        if (ready <= 0)
            continue; /* nothing yet, or EINTR */
        ssize_t got = read(fd, buf + n, len - (size_t)n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += got;
    }
    close(fd);
    int status = kt_fork_pipe_wait(pid);
    if (n != (ssize_t)len || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    memcpy(out, buf, len);
    return 0;
}

/* kt_calibration_in_child's measurement of an op's rates. */
typedef struct op_ctx {
    const kt_op *op;
    kt_dtype dtype;
    kt_distribution dist;
} op_ctx;

static int measure_op(void *out, const void *ctx)
{
    const op_ctx *c = ctx;
    return measure(out, c->op, c->dtype, c->dist);
}

int kt_calibration_get(kt_calibration *out, const kt_op *op, kt_dtype dtype, kt_distribution dist,
                       const char *origin)
{
    static const char *const fields[3] = {"gen_s_per_elem", "ref_s_per_flop", "busy"};
    /* "op/dtype" for the normal law (the key before the law counted), else "op/dtype/law" */
    static const char *const laws[] = {"", "/uniform", "/llm"};
    char key[160];
    double v[3];
    snprintf(key, sizeof(key), "%s/%s%s%s%.16s", op->name, kt_dtype_name(dtype),
             (unsigned)dist < 3 ? laws[dist] : "", origin ? "/plugin=" : "", origin ? origin : "");
    if (kt_calibration_cache_get(key, fields, v, 3) == 0 && v[0] > 0 && v[1] > 0) {
        out->gen_s_per_elem = v[0];
        out->ref_s_per_flop = v[1];
        out->busy = v[2] >= 1.0 ? v[2] : 1.0;
        return 0;
    }
    double busy = kt_calibration_busy();
    op_ctx ctx = {op, dtype, dist};
    if (kt_calibration_in_child(out, sizeof(*out), measure_op, &ctx) < 0)
        return -1;
    out->busy = (busy + kt_calibration_busy()) / 2;
    v[0] = out->gen_s_per_elem;
    v[1] = out->ref_s_per_flop;
    v[2] = out->busy;
    kt_calibration_cache_put(key, fields, v, 3);
    return 0;
}
