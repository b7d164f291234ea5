/* provenance.c - provenance as JSON: the git state, the host, the build, the device and the
 * run. Every builder returns a new object, or NULL when memory ran out. */
#include "archive/provenance.h"
#include "util/version.h"

#include <cblas.h>
#include <stdint.h>
#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#ifdef KT_HAVE_CUDA
#include "cuda/cublaslt_load.h"

#include <cuda_runtime_api.h>
#endif

/* Adds 'value' as a string, or null when 'value' is NULL; clears '*ok' on failure. */
static void add_str(cJSON *obj, const char *key, const char *value, int *ok)
{
    if (!(value ? cJSON_AddStringToObject(obj, key, value) : cJSON_AddNullToObject(obj, key)))
        *ok = 0;
}

static void add_num(cJSON *obj, const char *key, double value, int *ok)
{
    if (!cJSON_AddNumberToObject(obj, key, value))
        *ok = 0;
}

static void add_bool(cJSON *obj, const char *key, int value, int *ok)
{
    if (!cJSON_AddBoolToObject(obj, key, value != 0))
        *ok = 0;
}

static cJSON *finish(cJSON *obj, int ok)
{
    if (ok)
        return obj;
    cJSON_Delete(obj);
    return NULL;
}

cJSON *kt_provenance_git_json(const kt_git_state *st)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL, a = st->available;
    if (!o)
        return NULL;
    add_bool(o, "available", a, &ok);
    add_str(o, "reason", a ? NULL : st->reason, &ok);
    add_str(o, "workdir", a ? st->workdir : NULL, &ok);
    add_str(o, "commit", a ? st->commit : NULL, &ok);
    add_str(o, "short_commit", a ? st->short_id : NULL, &ok);
    char when[32] = "";
    time_t t = (time_t)st->commit_time;
    struct tm tm;
    if (a && gmtime_r(&t, &tm))
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    add_str(o, "commit_time", when[0] ? when : NULL, &ok);
    add_str(o, "branch", a ? st->branch : NULL, &ok);
    if (a)
        add_bool(o, "detached", st->detached, &ok);
    else
        ok = ok && cJSON_AddNullToObject(o, "detached");
    add_str(o, "describe", a ? st->describe : NULL, &ok);
    add_str(o, "remote_url", a ? st->remote_url : NULL, &ok);
    if (a) {
        add_bool(o, "dirty", st->dirty, &ok);
        add_num(o, "staged", st->staged, &ok);
        add_num(o, "unstaged", st->unstaged, &ok);
        add_num(o, "untracked", st->untracked, &ok);
    } else {
        const char *keys[] = {"dirty", "staged", "unstaged", "untracked"};
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            ok = ok && cJSON_AddNullToObject(o, keys[i]);
    }
    add_str(o, "diff_blob_id", a && st->diff_blob_id[0] ? st->diff_blob_id : NULL, &ok);
    add_num(o, "diff_bytes", a ? (double)st->diff_bytes : 0, &ok);
    add_bool(o, "changed_during_run", st->changed_during_run, &ok);
    return finish(o, ok);
}

/* The value of the first line "KEY <sep> VALUE" of 'path' (spaces around 'sep' and double
 * quotes around VALUE removed), malloc'd; NULL when absent or unreadable. */
static char *read_field(const char *path, const char *key, char sep)
{
    FILE *f = fopen(path, "r");
    char *line = NULL, *value = NULL;
    size_t cap = 0, key_len = strlen(key);
    if (!f)
        return NULL;
    while (!value && getline(&line, &cap, f) >= 0) {
        if (strncmp(line, key, key_len) != 0)
            continue;
        char *p = line + key_len;
        p += strspn(p, " \t");
        if (*p != sep)
            continue;
        p++;
        p += strspn(p, " \t\"");
        size_t n = strcspn(p, "\n");
        while (n > 0 && (p[n - 1] == '"' || p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        value = strndup(p, n);
    }
    free(line);
    fclose(f);
    return value;
}

cJSON *kt_provenance_host_json(void)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;
    char host[256] = "", kernel[2 * sizeof(((struct utsname *)0)->release) + 2] = "";
    struct utsname u;
    if (!o)
        return NULL;
    int have_uname = uname(&u) == 0;
    if (have_uname)
        snprintf(kernel, sizeof(kernel), "%s %s", u.sysname, u.release);
    char *os = read_field("/etc/os-release", "PRETTY_NAME", '=');
    char *cpu = read_field("/proc/cpuinfo", "model name", ':');
    add_str(o, "hostname", gethostname(host, sizeof(host) - 1) == 0 ? host : NULL, &ok);
    add_str(o, "os", os, &ok);
    add_str(o, "kernel", have_uname ? kernel : NULL, &ok);
    add_str(o, "kernel_build", have_uname ? u.version : NULL, &ok);
    add_str(o, "arch", have_uname ? u.machine : NULL, &ok);
    add_str(o, "cpu_model", cpu, &ok);
    add_num(o, "cores", (double)sysconf(_SC_NPROCESSORS_ONLN), &ok);
    add_num(o, "memory_bytes", (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE),
            &ok);
    free(os);
    free(cpu);
    return finish(o, ok);
}

#ifdef KT_HAVE_CUDA
/* Versions of the CUDA runtime (the one built against: a compile-time constant) and cuBLASLt.
 * Nothing here may touch the driver: this runs in the parent before trial workers fork, and
 * CUDA must first initialise in a worker. The driver's version comes from the backend's probe
 * (provenance.device), which asks a child process. */
static void add_cuda_versions(cJSON *o, int *ok)
{
    char buf[32];
    add_str(o, "cuda_compiler", kt_build_cuda_compiler(), ok);
    snprintf(buf, sizeof(buf), "%d.%d", CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
    add_str(o, "cuda_runtime", buf, ok);
    if (kt_cublaslt_load() < 0) { /* loads cuBLASLt; no device work */
        add_str(o, "cublaslt", "unavailable", ok);
        return;
    }
    size_t lt = kt_lt.GetVersion(); /* the library's own constant; no device work */
    snprintf(buf, sizeof(buf), "%zu.%zu.%zu", lt / 10000, (lt / 100) % 100, lt % 100);
    add_str(o, "cublaslt", buf, ok);
}
#endif

cJSON *kt_provenance_build_json(void)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL, major = 0, minor = 0, rev = 0;
    char git2[32];
    if (!o)
        return NULL;
    git_libgit2_version(&major, &minor, &rev);
    snprintf(git2, sizeof(git2), "%d.%d.%d", major, minor, rev);
    add_str(o, "ktrial_version", kt_version(), &ok);
    add_str(o, "ktrial_commit", kt_build_commit(), &ok);
    add_str(o, "build_type", kt_build_type(), &ok);
    add_str(o, "compiler", kt_build_compiler(), &ok);
    const char *flags = kt_build_flags() + strspn(kt_build_flags(), " ");
    size_t flags_len = strlen(flags);
    while (flags_len > 0 && flags[flags_len - 1] == ' ')
        flags_len--;
    char *trimmed = strndup(flags, flags_len);
    add_str(o, "flags", trimmed ? trimmed : flags, &ok);
    free(trimmed);
    add_str(o, "libyaml", yaml_get_version_string(), &ok);
    add_str(o, "libgit2", git2, &ok);
    add_str(o, "cjson", cJSON_Version(), &ok);
    add_str(o, "openblas", openblas_get_config(), &ok);
#ifdef KT_HAVE_CUDA
    add_cuda_versions(o, &ok);
#endif
    return finish(o, ok);
}

cJSON *kt_provenance_device_json(const char *backend, const kt_device_info *info)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;
    if (!o)
        return NULL;
    add_str(o, "backend", backend, &ok);
    add_bool(o, "available", info->available, &ok);
    add_str(o, "reason", info->available ? NULL : info->reason, &ok);
    cJSON *items = cJSON_AddObjectToObject(o, "info");
    ok = ok && items;
    for (int i = 0; ok && i < info->n && i < KT_INFO_MAX; i++)
        add_str(items, info->items[i].key, info->items[i].value, &ok);
    return finish(o, ok);
}

cJSON *kt_provenance_json(const kt_git_state *st)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *parts[3] = {kt_provenance_git_json(st), kt_provenance_host_json(),
                       kt_provenance_build_json()};
    const char *keys[3] = {"git", "host", "build"};
    int ok = o != NULL;
    for (int i = 0; i < 3; i++) {
        if (ok && parts[i] && cJSON_AddItemToObject(o, keys[i], parts[i]))
            continue;
        ok = 0;
        cJSON_Delete(parts[i]);
    }
    return finish(o, ok);
}

void kt_run_id_new(char out[KT_RUN_ID_LEN], time_t start)
{
    uint32_t bits = 0;
    if (getrandom(&bits, sizeof(bits), 0) != (ssize_t)sizeof(bits)) /* no entropy: pid, clock */
        bits = (uint32_t)getpid() * 2654435761u ^ (uint32_t)clock();
    char stamp[32] = "unknown";
    struct tm tm;
    if (gmtime_r(&start, &tm))
        strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
    snprintf(out, KT_RUN_ID_LEN, "%s-%08x", stamp, (unsigned)bits);
}

int kt_utc_iso8601(char out[32], time_t t)
{
    struct tm tm;
    out[0] = '\0';
    if (!gmtime_r(&t, &tm) || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        return -1;
    return 0;
}

/* {start_utc, end_utc (null while running), argv}, or NULL on memory exhaustion. */
static cJSON *times_and_argv(time_t start, time_t end, int argc, char *const *argv)
{
    char when[32];
    cJSON *run = cJSON_CreateObject();
    int ok = run != NULL;
    if (!run)
        return NULL;
    add_str(run, "start_utc", kt_utc_iso8601(when, start) == 0 ? when : NULL, &ok);
    add_str(run, "end_utc", end > 0 && kt_utc_iso8601(when, end) == 0 ? when : NULL, &ok);
    cJSON *args = cJSON_AddArrayToObject(run, "argv");
    ok = ok && args;
    for (int i = 0; ok && i < argc; i++) {
        cJSON *s = cJSON_CreateString(argv[i]);
        ok = s && cJSON_AddItemToArray(args, s);
        if (!ok)
            cJSON_Delete(s);
    }
    if (!ok) {
        cJSON_Delete(run);
        return NULL;
    }
    return run;
}

cJSON *kt_provenance_session_json(const kt_git_state *git, time_t start, time_t end, int argc,
                                  char *const *argv, double points)
{
    cJSON *s = times_and_argv(start, end, argc, argv);
    int ok = s != NULL;
    if (!s)
        return NULL;
    add_str(s, "commit", git->available ? git->commit : NULL, &ok);
    add_str(s, "diff_blob_id", git->available && git->diff_blob_id[0] ? git->diff_blob_id : NULL,
            &ok);
    if (points >= 0)
        add_num(s, "points", points, &ok);
    else if (!cJSON_AddNullToObject(s, "points"))
        ok = 0;
    if (!ok) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}

/* A copy of 'v' if it is a string, else a JSON null. */
static cJSON *string_or_null(const cJSON *v)
{
    return cJSON_IsString(v) ? cJSON_CreateString(v->valuestring) : cJSON_CreateNull();
}

cJSON *kt_provenance_prior_sessions(const cJSON *doc)
{
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(doc, "provenance");
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(prov, "run");
    const cJSON *git = cJSON_GetObjectItemCaseSensitive(prov, "git");
    const cJSON *sessions = cJSON_GetObjectItemCaseSensitive(run, "sessions");
    if (cJSON_IsArray(sessions))
        return cJSON_Duplicate(sessions, 1);
    /* an archive from before sessions were recorded: its last session, as far as it says */
    cJSON *list = cJSON_CreateArray(), *s = cJSON_CreateObject();
    if (!list || !s || !cJSON_AddItemToArray(list, s)) {
        cJSON_Delete(s);
        cJSON_Delete(list);
        return NULL;
    }
    const char *keys[] = {"start_utc", "end_utc"};
    for (int i = 0; i < 2; i++)
        cJSON_AddItemToObject(s, keys[i],
                              string_or_null(cJSON_GetObjectItemCaseSensitive(run, keys[i])));
    const cJSON *argv = cJSON_GetObjectItemCaseSensitive(run, "argv");
    cJSON_AddItemToObject(s, "argv",
                          cJSON_IsArray(argv) ? cJSON_Duplicate(argv, 1) : cJSON_CreateArray());
    cJSON_AddItemToObject(s, "commit",
                          string_or_null(cJSON_GetObjectItemCaseSensitive(git, "commit")));
    const cJSON *blob = cJSON_GetObjectItemCaseSensitive(git, "diff_blob_id");
    cJSON_AddItemToObject(s, "diff_blob_id",
                          cJSON_IsString(blob) && blob->valuestring[0] ? string_or_null(blob)
                                                                       : cJSON_CreateNull());
    cJSON_AddNullToObject(s, "points"); /* not recorded then */
    return list;
}

cJSON *kt_provenance_add_run(cJSON *prov, time_t start, time_t end, int argc, char *const *argv)
{
    cJSON *run = times_and_argv(start, end, argc, argv);
    if (!run)
        return NULL;
    if (!cJSON_AddItemToObject(prov, "run", run)) {
        cJSON_Delete(run);
        return NULL;
    }
    return run;
}
