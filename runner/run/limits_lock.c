/* limits_lock.c - the decision-relevant parts of a checked spec in canonical form, their
 * sha256 per key path, and SPEC.lock written, read and compared (see limits.h). */
#include "run/limits.h"

#include "archive/provenance.h"
#include "spec/matrix.h"
#include "spec/spec_json.h"
#include "util/read_file.h"
#include "util/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int by_key(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* A deep copy of 'v' with every object's keys in byte order. NULL when out of memory. */
static cJSON *sorted_copy(const cJSON *v)
{
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return cJSON_Duplicate(v, 1);
    int n = cJSON_GetArraySize(v), i = 0;
    const cJSON **kids = calloc(n ? (size_t)n : 1, sizeof(*kids));
    cJSON *out = cJSON_IsObject(v) ? cJSON_CreateObject() : cJSON_CreateArray();
    const cJSON *c;
    if (!kids || !out)
        goto fail;
    cJSON_ArrayForEach(c, v) kids[i++] = c;
    if (cJSON_IsObject(v))
        qsort(kids, (size_t)n, sizeof(*kids), by_key);
    for (i = 0; i < n; i++) {
        cJSON *copy = sorted_copy(kids[i]);
        if (!copy)
            goto fail;
        if (cJSON_IsObject(v))
            cJSON_AddItemToObject(out, kids[i]->string, copy);
        else
            cJSON_AddItemToArray(out, copy);
    }
    free(kids);
    return out;
fail:
    free(kids);
    cJSON_Delete(out);
    return NULL;
}

/* Moves 'key' of 'from' (if there) into 'to' under the same name. */
static void move_key(cJSON *to, cJSON *from, const char *key)
{
    cJSON *item = cJSON_DetachItemFromObjectCaseSensitive(from, key);
    if (item)
        cJSON_AddItemToObject(to, key, item);
}

cJSON *kt_limits_canonical(const kt_spec *spec)
{
    static const char *const axes[] = {
        "op", "dtype", "models", "batch_sizes", "context_lengths", "phases", "roles"};
    cJSON *parsed = kt_spec_to_json(spec), *parts = cJSON_CreateObject();
    cJSON *matrix = cJSON_AddObjectToObject(parts, "matrix");
    cJSON *arms = cJSON_AddObjectToObject(parts, "arms");
    cJSON *points = cJSON_AddArrayToObject(matrix, "points");
    cJSON *out = NULL;
    if (!parsed || !matrix || !arms || !points)
        goto done;
    for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++)
        move_key(matrix, parsed, axes[i]);
    /* the points as expanded: exclude and include rules count by what they leave */
    for (size_t i = 0; spec->matrix && i < spec->matrix->n; i++)
        cJSON_AddItemToArray(points, cJSON_CreateString(spec->matrix->points[i].id));
    move_key(parts, parsed, "inputs");
    move_key(arms, parsed, "baseline");
    move_key(arms, parsed, "candidates");
    move_key(arms, parsed, "command");
    move_key(parts, parsed, "thresholds");
    move_key(parts, parsed, "trials");
    move_key(parts, parsed, "budget");
    cJSON *th = cJSON_GetObjectItemCaseSensitive(parts, "thresholds");
    move_key(parts, th, "aggregate");
    /* the profiling pass measures after the verdict (and --profile turns it on): no limit */
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(parts, "trials"),
                                            "profile");
    out = sorted_copy(parts);
done:
    cJSON_Delete(parsed);
    cJSON_Delete(parts);
    return out;
}

/* An array whose every element is an object with a string "name". */
static int named_array(const cJSON *a)
{
    const cJSON *c;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) == 0)
        return 0;
    cJSON_ArrayForEach(
        c, a) if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "name"))) return 0;
    return 1;
}

int kt_limits_walk(const cJSON *obj, const char *prefix, kt_limits_key_fn fn, void *ctx)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, obj)
    {
        char path[1024];
        int n = cJSON_IsArray(obj)
                    ? snprintf(path, sizeof(path), "%s[%s]", prefix,
                               cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring)
                    : snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", c->string);
        if (n < 0 || (size_t)n >= sizeof(path))
            continue; /* a path this long is no name a person reads */
        int rc = cJSON_IsObject(c) || named_array(c) ? kt_limits_walk(c, path, fn, ctx)
                                                     : fn(path, c, ctx);
        if (rc)
            return rc;
    }
    return 0;
}

char *kt_limits_text(const cJSON *value)
{
    cJSON *sorted = sorted_copy(value);
    char *text = sorted ? cJSON_PrintUnformatted(sorted) : NULL;
    cJSON_Delete(sorted);
    return text;
}

static int add_key_hash(const char *path, const cJSON *value, void *ctx)
{
    char *text = kt_limits_text(value), sha[65];
    if (!text)
        return -1;
    kt_sha256_hex(sha, text, strlen(text));
    free(text);
    return cJSON_AddStringToObject(ctx, path, sha) ? 0 : -1;
}

cJSON *kt_limits_lock_new(const kt_spec *spec, time_t now)
{
    cJSON *parts = kt_limits_canonical(spec), *lock = cJSON_CreateObject();
    char *text = parts ? kt_limits_text(parts) : NULL, sha[65], when[32], dir[PATH_MAX];
    kt_git_state git;
    cJSON *keys = cJSON_AddObjectToObject(lock, "keys");
    if (!text || !keys || kt_limits_walk(parts, "", add_key_hash, keys) != 0) {
        free(text);
        cJSON_Delete(parts);
        cJSON_Delete(lock);
        kt_error_set("out of memory");
        return NULL;
    }
    kt_sha256_hex(sha, text, strlen(text));
    kt_utc_iso8601(when, now);
    snprintf(dir, sizeof(dir), "%s", spec->path);
    kt_git_state_collect(&git, dirname(dir), NULL);
    cJSON_AddNumberToObject(lock, "format", KT_LOCK_FORMAT);
    cJSON_AddStringToObject(lock, "experiment", spec->name);
    cJSON_AddStringToObject(lock, "sha256", sha);
    cJSON_AddStringToObject(lock, "locked_utc", when);
    if (git.available) {
        cJSON *g = cJSON_AddObjectToObject(lock, "git");
        cJSON_AddStringToObject(g, "commit", git.commit);
        cJSON_AddBoolToObject(g, "dirty", git.dirty);
    } else {
        cJSON_AddNullToObject(lock, "git");
    }
    /* keys last: the lines a person reads first are the ones above */
    cJSON_AddItemToObject(lock, "keys", cJSON_DetachItemFromObject(lock, "keys"));
    kt_git_state_free(&git);
    free(text);
    cJSON_Delete(parts);
    return lock;
}

int kt_limits_lock_path(char *out, size_t len, const char *spec_path)
{
    int n = snprintf(out, len, "%s.lock", spec_path);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* A lock has the fields the schema requires, of their types. */
static int lock_ok(const cJSON *lock)
{
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(lock, "keys"), *k, *git;
    if (!cJSON_IsObject(keys) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(lock, "sha256")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(lock, "locked_utc")) ||
        kt_json_get_real(lock, "format", 0) != KT_LOCK_FORMAT)
        return 0;
    git = cJSON_GetObjectItemCaseSensitive(lock, "git");
    if (!cJSON_IsNull(git) && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(git, "commit")))
        return 0;
    cJSON_ArrayForEach(k, keys)
    {
        if (!cJSON_IsString(k) || strlen(k->valuestring) != 64)
            return 0;
        for (const char *c = k->string; *c; c++) /* its names are printed: no control bytes */
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                return 0;
    }
    return 1;
}

int kt_limits_lock_read(cJSON **out, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return 1;
    if (kt_read_file(&text, &len, path, (size_t)16 << 20) < 0)
        return -1;
    *out = cJSON_ParseWithLength(text, len);
    free(text);
    if (!*out || !lock_ok(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return kt_error_set("'%s' is not a ktrial lock (schemas/lock.schema.json); remove it or "
                            "write it again with 'ktrial lock'",
                            path);
    }
    return 0;
}

int kt_limits_lock_write(const char *path, const cJSON *lock)
{
    char tmp[PATH_MAX], *text = kt_json_print(lock);
    int fd = -1, rc = -1;
    if (!text)
        return kt_error_set("out of memory");
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp)) {
        free(text);
        return kt_error_set("path too long: '%s'", path);
    }
    size_t len = strlen(text);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0 && write(fd, text, len) == (ssize_t)len && write(fd, "\n", 1) == 1 &&
        fsync(fd) == 0 && close(fd) == 0) {
        fd = -1;
        rc = rename(tmp, path) == 0 ? 0 : -1;
    }
    if (rc < 0) {
        kt_error_set("cannot write '%s': %m", path);
        if (fd >= 0)
            close(fd);
        unlink(tmp);
    }
    free(text);
    return rc;
}

/* Appends 'key' to the list in '*list' (", " between). */
static void list_add(char **list, const char *key)
{
    size_t had = *list ? strlen(*list) : 0;
    char *bigger = realloc(*list, had + strlen(key) + 3);
    if (!bigger)
        return;
    snprintf(bigger + had, strlen(key) + 3, "%s%s", had ? ", " : "", key);
    *list = bigger;
}

size_t kt_limits_lock_diff(char **changed, const cJSON *lock, const cJSON *now)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(lock, "keys");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(now, "keys"), *k;
    size_t n = 0;
    *changed = calloc(1, 1);
    cJSON_ArrayForEach(k, a)
    {
        const cJSON *other = cJSON_GetObjectItemCaseSensitive(b, k->string);
        if (!cJSON_IsString(other) || strcmp(other->valuestring, k->valuestring) != 0) {
            list_add(changed, k->string);
            n++;
        }
    }
    cJSON_ArrayForEach(k, b) if (!cJSON_GetObjectItemCaseSensitive(a, k->string))
    {
        list_add(changed, k->string); /* a key the lock did not have */
        n++;
    }
    if (n == 0 && strcmp(kt_json_get_str(lock, "sha256", (char[65]){0}, 65),
                         kt_json_get_str(now, "sha256", (char[65]){0}, 65)) != 0) {
        list_add(changed, "sha256 (the keys agree but the sha256 does not: the lock was edited)");
        n++;
    }
    return n;
}
