/* schema_hint.c - where else an unknown key belongs: the "did you mean" of a key written under
 * the wrong parent (thresholds.latency.max_rel_l2 for thresholds.numerics.max_rel_l2). The
 * schema's properties are walked from its root, through $ref, the branches of anyOf, oneOf
 * and allOf, and array items (shown as []), collecting every key with its path; the key itself
 * found elsewhere wins over a near miss of it. */
#include "spec/schema_hint.h"
#include "util/suggest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEYS  1024
#define MAX_DEPTH 8

typedef struct {
    const cJSON *root;
    const char *names[MAX_KEYS]; /* the keys, for kt_suggest */
    char *paths[MAX_KEYS];       /* "thresholds.numerics.max_rel_l2" */
    size_t n;
} walk;

static const cJSON *deref(const walk *w, const cJSON *s)
{
    for (int hops = 0; hops < 16 && cJSON_IsObject(s); hops++) {
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
        if (!cJSON_IsString(ref) || strncmp(ref->valuestring, "#/", 2) != 0)
            return s;
        const cJSON *at = w->root;
        char token[256];
        for (const char *p = ref->valuestring + 1; at && *p == '/';) {
            size_t k = 0;
            for (p++; *p && *p != '/' && k + 1 < sizeof(token); p++)
                token[k++] = *p;
            token[k] = '\0';
            at = cJSON_GetObjectItemCaseSensitive(at, token);
        }
        s = at;
    }
    return s;
}

static void collect(walk *w, const cJSON *s, const char *path, int depth)
{
    s = deref(w, s);
    if (!cJSON_IsObject(s) || depth > MAX_DEPTH)
        return;
    static const char *const branches[] = {"anyOf", "oneOf", "allOf"};
    for (size_t b = 0; b < sizeof(branches) / sizeof(branches[0]); b++) {
        const cJSON *e, *list = cJSON_GetObjectItemCaseSensitive(s, branches[b]);
        cJSON_ArrayForEach(e, list) collect(w, e, path, depth + 1);
    }
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    if (items) {
        char sub[512];
        snprintf(sub, sizeof(sub), "%s[]", path);
        collect(w, items, sub, depth + 1);
    }
    const cJSON *p, *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    cJSON_ArrayForEach(p, props)
    {
        char sub[512];
        snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "", p->string);
        int seen = 0;
        for (size_t i = 0; i < w->n && !seen; i++)
            seen = strcmp(w->paths[i], sub) == 0;
        if (!seen && w->n < MAX_KEYS && (w->paths[w->n] = strdup(sub))) {
            w->names[w->n++] = p->string;
        }
        if (!seen)
            collect(w, p, sub, depth + 1);
    }
}

/* The parent part of a path: "thresholds.numerics" of "thresholds.numerics.max_rel_l2". */
static void parent_of(char *out, size_t len, const char *path)
{
    const char *dot = strrchr(path, '.');
    snprintf(out, len, "%.*s", dot ? (int)(dot - path) : 0, path);
}

int kt_schema_key_elsewhere(char *out, size_t len, const cJSON *root, const char *key,
                            const char *here)
{
    char where[512]; /* "candidates[0].params" as the schema's "candidates[].params" */
    size_t k = 0;
    for (const char *p = here; *p && k + 1 < sizeof(where); p++) {
        where[k++] = *p;
        if (*p == '[')
            while (p[1] >= '0' && p[1] <= '9')
                p++;
    }
    where[k] = '\0';
    here = where;
    walk *w = calloc(1, sizeof(*w));
    if (!w)
        return 0;
    w->root = root;
    collect(w, root, "", 0);
    int found = 0;
    char parent[512];
    for (size_t i = 0; i < w->n && !found; i++) {
        parent_of(parent, sizeof(parent), w->paths[i]);
        if (strcmp(w->names[i], key) == 0 && strcmp(parent, here) != 0) {
            snprintf(out, len, "'%s' belongs under %s", key, parent[0] ? parent : "the top level");
            found = 1;
        }
    }
    const char *guess = found ? NULL : kt_suggest(key, w->names, w->n);
    for (size_t i = 0; guess && i < w->n && !found; i++)
        if (w->names[i] == guess) {
            parent_of(parent, sizeof(parent), w->paths[i]);
            if (strcmp(parent, here) != 0) {
                snprintf(out, len, "did you mean %s?", w->paths[i]);
                found = 1;
            }
        }
    for (size_t i = 0; i < w->n; i++)
        free(w->paths[i]);
    free(w);
    return found;
}
