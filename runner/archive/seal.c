/* seal.c - the SHA-256 seal of a run folder's files (see seal.h). */
#include "archive/seal.h"

#include "util/read_file.h"
#include "util/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel.h"

/* The largest file a seal reads whole (samples.csv of a long run stays far below). */
#define SEAL_MAX_BYTES ((size_t)1 << 32)
/* Files under outputs/ a folder may hold before the walk stops (a hostile folder). */
#define SEAL_MAX_FILES 100000

void kt_problems_add(kt_problems *p, const char *fmt, ...)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        char **bigger = realloc(p->lines, cap * sizeof(*bigger));
        if (!bigger)
            return;
        p->lines = bigger;
        p->cap = cap;
    }
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if ((p->lines[p->n] = strdup(buf)))
        p->n++;
}

void kt_problems_free(kt_problems *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->lines[i]);
    free(p->lines);
    memset(p, 0, sizeof(*p));
}

void kt_problems_print(FILE *out, const char *dir, const kt_problems *p, int force)
{
    const char *level = force ? "warning" : "error";
    for (size_t i = 0; i < p->n; i++)
        fprintf(out, "%s: %s: %s\n", level, dir, p->lines[i]);
    if (p->n)
        fprintf(out, "%s: '%s' fails verification (%zu problem%s)%s\n", level, dir, p->n,
                p->n == 1 ? "" : "s",
                force ? "; read anyway (--force), with the verdicts its pairs give"
                      : "; --force reads it anyway, with the verdicts its pairs give");
}

/* Whether a top-level file name is one the seal covers. */
static int sealed_name(const char *name)
{
    static const char *const fixed[] = {"spec.yaml", "points.jsonl", "samples.csv", "git.diff"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (strcmp(name, fixed[i]) == 0)
            return 1;
    size_t n = strlen(name), pre = strlen(KT_SEAL_OLD_SPEC_PREFIX);
    return n > pre + 5 && strncmp(name, KT_SEAL_OLD_SPEC_PREFIX, pre) == 0 &&
           strcmp(name + n - 5, ".yaml") == 0;
}

typedef struct walk {
    const char *root;
    char **paths; /* relative */
    size_t n, cap;
    int failed;
} walk;

static void walk_add(walk *w, const char *rel)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 32;
        char **bigger = realloc(w->paths, cap * sizeof(*bigger));
        if (!bigger) {
            w->failed = 1;
            return;
        }
        w->paths = bigger;
        w->cap = cap;
    }
    if (!(w->paths[w->n] = strdup(rel)))
        w->failed = 1;
    else
        w->n++;
}

/* Every regular file under root/'rel' (a folder), depth first. */
static void walk_tree(walk *w, const char *rel, int depth)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", w->root, rel);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && w->n < SEAL_MAX_FILES && !w->failed) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char sub[PATH_MAX];
        struct stat sb;
        if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", rel, e->d_name) >= sizeof(sub))
            continue;
        snprintf(path, sizeof(path), "%s/%s", w->root, sub);
        if (lstat(path, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode) && depth < 8)
            walk_tree(w, sub, depth + 1);
        else if (S_ISREG(sb.st_mode))
            walk_add(w, sub);
    }
    closedir(d);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk_free(walk *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->paths[i]);
    free(w->paths);
}

/* The files of 'dir' the seal covers, sorted. */
static int sealed_files(walk *w, const char *dir)
{
    memset(w, 0, sizeof(*w));
    w->root = dir;
    DIR *d = opendir(dir);
    if (!d)
        return kt_error_set("cannot read '%s': %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) && !w->failed) {
        char path[PATH_MAX];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &sb) != 0)
            continue;
        if (S_ISREG(sb.st_mode) && sealed_name(e->d_name))
            walk_add(w, e->d_name);
        else if (S_ISDIR(sb.st_mode) && strcmp(e->d_name, "outputs") == 0)
            walk_tree(w, "outputs", 0);
    }
    closedir(d);
    if (w->failed)
        return kt_error_set("out of memory");
    if (w->n) /* qsort's base must not be NULL, even for no elements */
        qsort(w->paths, w->n, sizeof(*w->paths), by_name);
    return 0;
}

/* The hex SHA-256 of root/'rel'; 0, or -1 with the message set. */
static int hash_file(char out[65], const char *root, const char *rel)
{
    char path[PATH_MAX], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    if (kt_read_file(&text, &len, path, SEAL_MAX_BYTES) < 0)
        return -1;
    int rc = kt_sha256_hex(out, text, len);
    free(text);
    return rc;
}

cJSON *kt_seal_json(const char *dir)
{
    walk w;
    if (sealed_files(&w, dir) < 0)
        return NULL;
    cJSON *seal = cJSON_CreateObject();
    cJSON_AddStringToObject(seal, "algorithm", "sha256");
    cJSON *files = cJSON_AddObjectToObject(seal, "files");
    for (size_t i = 0; i < w.n && seal; i++) {
        char hex[65];
        if (hash_file(hex, dir, w.paths[i]) < 0) {
            cJSON_Delete(seal);
            seal = NULL;
        } else {
            cJSON_AddStringToObject(files, w.paths[i], hex);
        }
    }
    walk_free(&w);
    return seal;
}

/* A name a seal may hold: relative, no '..' component, no empty one. */
static int safe_name(const char *name)
{
    if (!name[0] || name[0] == '/')
        return 0;
    for (const char *p = name; *p;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || (n == 2 && strncmp(p, "..", 2) == 0) || (n == 1 && p[0] == '.'))
            return 0;
        p += n + (slash != NULL);
    }
    return 1;
}

int kt_seal_check(const char *dir, const cJSON *seal, kt_problems *out)
{
    size_t before = out->n;
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(seal, "files"), *f;
    const cJSON *algorithm = cJSON_GetObjectItemCaseSensitive(seal, "algorithm");
    if (!cJSON_IsObject(files) || !cJSON_IsString(algorithm) ||
        strcmp(algorithm->valuestring, "sha256") != 0) {
        kt_problems_add(out, "result.json: its seal is not {algorithm: sha256, files: {...}}");
        return (int)(out->n - before);
    }
    cJSON_ArrayForEach(f, files)
    {
        char hex[65];
        if (!cJSON_IsString(f) || !safe_name(f->string)) {
            kt_problems_add(out, "result.json: the seal names '%.200s', not a file of the folder",
                            f->string);
        } else if (hash_file(hex, dir, f->string) < 0) {
            kt_problems_add(out, "%.200s: sealed by result.json, but cannot be read (%.200s)",
                            f->string, kt_error_last());
            kt_error_clear();
        } else if (strcmp(hex, f->valuestring) != 0) {
            kt_problems_add(out,
                            "%.200s: sha256 %.12s, result.json's seal says %.12s: changed after "
                            "the run wrote result.json",
                            f->string, hex, f->valuestring);
        }
    }
    walk w;
    if (sealed_files(&w, dir) < 0) {
        kt_problems_add(out, "%.300s", kt_error_last());
        kt_error_clear();
        return (int)(out->n - before);
    }
    for (size_t i = 0; i < w.n; i++)
        if (!cJSON_GetObjectItemCaseSensitive(files, w.paths[i]))
            kt_problems_add(out, "%.200s: not in result.json's seal: added after the run wrote it",
                            w.paths[i]);
    walk_free(&w);
    return (int)(out->n - before);
}
