/* limits_lines.c - provenance.limits in words (see limits_lines.h). */
#include "report/limits_lines.h"

#include "util/json.h"
#include "util/sanitize.h"

#include <stdlib.h>
#include <string.h>

/* "1a2b3c4, 2026-01-02T03:04:05Z" of a provenance.limits.lock object. */
static void when(char *out, size_t len, const cJSON *lock)
{
    char commit[41], at[33];
    kt_json_get_str(lock, "commit", commit, sizeof(commit));
    kt_json_get_str(lock, "locked_utc", at, sizeof(at));
    commit[7] = '\0';
    snprintf(out, len, "%s%s, %s", commit[0] ? commit : "no commit",
             kt_json_get_bool(lock, "dirty", 0) ? " (dirty)" : "", at);
}

/* A value as JSON text, without its quotes for a string. */
static void value(FILE *out, const cJSON *v)
{
    if (cJSON_IsString(v)) { /* from an archive that may be hostile: no control bytes */
        char buf[512];
        fputs(kt_sanitize(buf, sizeof(buf), v->valuestring), out);
        return;
    }
    if (cJSON_IsNumber(v) || cJSON_IsRaw(v)) { /* the shortest of 15 or 17 digits that reads
                                                  back the same */
        char buf[32];
        double d = kt_json_real_value(v, 0);
        snprintf(buf, sizeof(buf), "%.15g", d);
        if (strtod(buf, NULL) != d)
            snprintf(buf, sizeof(buf), "%.17g", d);
        fputs(buf, out);
        return;
    }
    char *text = cJSON_PrintUnformatted(v), buf[512];
    fputs(text ? kt_sanitize(buf, sizeof(buf), text) : "?", out);
    free(text);
}

static int moved_lines(FILE *out, const cJSON *moved)
{
    const cJSON *changes = cJSON_GetObjectItemCaseSensitive(moved, "changes"), *c;
    int runs = (int)kt_json_get_real(moved, "earlier_runs", 0), lines = 1;
    char last[4096];
    if (cJSON_GetArraySize(changes) == 0)
        return 0;
    fprintf(out,
            "warning: thresholds changed after %d earlier run%s had results (the last: %s); "
            "limits set before running are locked with 'ktrial lock SPEC':\n",
            runs, runs == 1 ? "" : "s", kt_json_get_str(moved, "last_run", last, sizeof(last)));
    cJSON_ArrayForEach(c, changes)
    {
        char key[512];
        fprintf(out, "  %s: ", kt_json_get_str(c, "key", key, sizeof(key)));
        value(out, cJSON_GetObjectItemCaseSensitive(c, "before"));
        fputs(" -> ", out);
        value(out, cJSON_GetObjectItemCaseSensitive(c, "after"));
        fputc('\n', out);
        lines++;
    }
    return lines;
}

int kt_limits_print(FILE *out, const cJSON *limits)
{
    const cJSON *lock = cJSON_GetObjectItemCaseSensitive(limits, "lock");
    char at[128], path[4096];
    if (!cJSON_IsObject(limits))
        return 0;
    if (!cJSON_IsObject(lock))
        return moved_lines(out, cJSON_GetObjectItemCaseSensitive(limits, "moved"));
    when(at, sizeof(at), lock);
    kt_json_get_str(lock, "path", path, sizeof(path));
    if (!kt_json_get_bool(limits, "relocked", 0)) {
        fprintf(out, "limits locked at %s (%s)\n", at, path);
        return 1;
    }
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(limits, "changed_keys"), *k;
    char before[128];
    when(before, sizeof(before), cJSON_GetObjectItemCaseSensitive(limits, "previous_lock"));
    fprintf(out,
            "limits relocked by --relock at %s (%s), after they were locked at %s; changed:", at,
            path, before);
    cJSON_ArrayForEach(k, keys)
    {
        char buf[512];
        fprintf(out, " %s",
                cJSON_IsString(k) ? kt_sanitize(buf, sizeof(buf), k->valuestring) : "?");
    }
    fputc('\n', out);
    return 1;
}

char *kt_limits_string(const cJSON *limits)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    int lines = kt_limits_print(f, limits);
    fclose(f);
    if (lines > 0)
        return text;
    free(text);
    return NULL;
}
