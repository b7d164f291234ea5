/* limits_run.c - what 'run' does with the limits (see limits.h): a spec with a lock must match
 * it (or --relock, recorded), a spec without one has its thresholds compared with the last
 * archived run of its experiment; the outcome is provenance.limits. */
#include "run/limits.h"

#include "archive/run_archive.h"
#include "run/exit_code.h"
#include "spec/spec_json.h"

#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The folder the run's archive goes into, where earlier runs of the experiment lie. */
static void results_dir(char *out, size_t len, const kt_run_options *opt)
{
    const char *inside = opt->resume_dir ? opt->resume_dir : opt->out_dir;
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", inside ? inside : "results/x");
    size_t n = strlen(copy);
    while (n > 1 && copy[n - 1] == '/')
        copy[--n] = '\0';
    snprintf(out, len, "%s", dirname(copy));
}

/* The last run with results: its document, folder and how many earlier runs had results. */
typedef struct last_run {
    cJSON *doc;
    char dir[PATH_MAX];
    char start[32];
    size_t with_results;
} last_run;

static void consider(last_run *last, const char *dir, const char *name, const char *skip)
{
    char real[PATH_MAX];
    cJSON *doc = NULL;
    if (skip && realpath(dir, real) && strcmp(real, skip) == 0)
        return; /* the archive --resume continues */
    if (kt_run_archive_load_result(&doc, dir) < 0)
        return; /* not an archive that reads: not this check's business */
    const cJSON *v = kt_json_at_path(doc, "spec.parsed.name");
    const cJSON *start = kt_json_at_path(doc, "provenance.run.start_utc");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, name) != 0 ||
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "points")) == 0) {
        cJSON_Delete(doc);
        return;
    }
    last->with_results++;
    const char *when = cJSON_IsString(start) ? start->valuestring : "";
    int later = !last->doc || strcmp(when, last->start) > 0 ||
                (strcmp(when, last->start) == 0 && strcmp(dir, last->dir) > 0);
    if (!later) {
        cJSON_Delete(doc);
        return;
    }
    cJSON_Delete(last->doc);
    last->doc = doc;
    snprintf(last->dir, sizeof(last->dir), "%s", dir);
    snprintf(last->start, sizeof(last->start), "%s", when);
}

/* The changes of one key path from 'before' (walked) to the current thresholds. */
typedef struct moved_ctx {
    const cJSON *now;         /* the current spec's thresholds */
    const cJSON *before_root; /* the last run's */
    cJSON *changes;
} moved_ctx;

static int add_change(const char *key, const cJSON *before, const cJSON *after, cJSON *changes)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "key", key);
    cJSON_AddItemToObject(c, "before", before ? cJSON_Duplicate(before, 1) : cJSON_CreateNull());
    cJSON_AddItemToObject(c, "after", after ? cJSON_Duplicate(after, 1) : cJSON_CreateNull());
    cJSON_AddItemToArray(changes, c);
    return 0;
}

/* The item at a walked key path ("thresholds.latency.min_speedup") under 'root'. */
static const cJSON *at_key(const cJSON *root, const char *key)
{
    const char *dot = strchr(key, '.');
    return kt_json_at_path(root, dot ? dot + 1 : "");
}

/* A number as read back, or as ktrial writes one (a raw item of 17 digits). */
static int numeric(const cJSON *v)
{
    return v && (cJSON_IsNumber(v) || cJSON_IsRaw(v));
}

static int before_key(const char *key, const cJSON *before, void *p)
{
    moved_ctx *m = p;
    const cJSON *after = at_key(m->now, key);
    char *a = kt_limits_text(before), *b = after ? kt_limits_text(after) : NULL;
    /* a key a newer ktrial added shows as null in one document and absent in the other */
    int differ = a && (b ? strcmp(a, b) != 0 : !cJSON_IsNull(before));
    if (numeric(before) && numeric(after)) /* 1.1 read back, 1.1 printed in 17 digits */
        differ = kt_json_real_value(before, 0) != kt_json_real_value(after, 0);
    free(a);
    free(b);
    return differ ? add_change(key, before, after, m->changes) : 0;
}

static int after_key(const char *key, const cJSON *after, void *p)
{
    moved_ctx *m = p;
    const cJSON *before = at_key(m->before_root, key);
    return !before && !cJSON_IsNull(after) ? add_change(key, NULL, after, m->changes) : 0;
}

/* provenance.limits.moved: the thresholds of the last run with results against the spec's,
 * or NULL when they agree (or no earlier run had results). */
static cJSON *thresholds_moved(const kt_run *st)
{
    char dir[PATH_MAX], skip[PATH_MAX] = "";
    last_run last = {0};
    results_dir(dir, sizeof(dir), &st->opt);
    if (st->opt.resume_dir && !realpath(st->opt.resume_dir, skip))
        skip[0] = '\0';
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[PATH_MAX + 256];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            consider(&last, path, st->spec->name, skip[0] ? skip : NULL);
    }
    if (d)
        closedir(d);
    if (!last.doc)
        return NULL;
    cJSON *parsed = kt_spec_to_json(st->spec), *moved = cJSON_CreateObject();
    const cJSON *now = cJSON_GetObjectItemCaseSensitive(parsed, "thresholds");
    const cJSON *then = kt_json_at_path(last.doc, "spec.parsed.thresholds");
    moved_ctx m = {now, then, cJSON_CreateArray()};
    cJSON *wrap_then = cJSON_CreateObject(), *wrap_now = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(wrap_then, "thresholds", (cJSON *)then);
    cJSON_AddItemReferenceToObject(wrap_now, "thresholds", (cJSON *)now);
    kt_limits_walk(wrap_then, "", before_key, &m);
    kt_limits_walk(wrap_now, "", after_key, &m);
    cJSON_Delete(wrap_then);
    cJSON_Delete(wrap_now);
    cJSON_AddNumberToObject(moved, "earlier_runs", (double)last.with_results);
    cJSON_AddStringToObject(moved, "last_run", last.dir);
    kt_json_add_str_or_null(moved, "last_run_start_utc", last.start);
    cJSON_AddItemToObject(moved, "changes", m.changes);
    if (cJSON_GetArraySize(m.changes) == 0) {
        cJSON_Delete(moved);
        moved = NULL;
    }
    cJSON_Delete(parsed);
    cJSON_Delete(last.doc);
    return moved;
}

/* provenance.limits.lock: where the lock is and what it says. */
static cJSON *lock_json(const char *path, const cJSON *lock)
{
    cJSON *o = cJSON_CreateObject();
    const cJSON *git = cJSON_GetObjectItemCaseSensitive(lock, "git");
    char buf[65];
    cJSON_AddStringToObject(o, "path", path);
    cJSON_AddStringToObject(o, "sha256", kt_json_get_str(lock, "sha256", buf, sizeof(buf)));
    cJSON_AddStringToObject(o, "locked_utc", kt_json_get_str(lock, "locked_utc", buf, 33));
    kt_json_add_str_or_null(o, "commit", kt_json_get_str(git, "commit", buf, 41));
    if (cJSON_IsObject(git))
        cJSON_AddBoolToObject(o, "dirty", kt_json_get_bool(git, "dirty", 0));
    else
        cJSON_AddNullToObject(o, "dirty");
    return o;
}

/* A spec whose lock no longer matches: refused, or with --relock the lock written again. */
static int relock(kt_run *st, const char *path, const cJSON *lock, cJSON *now, const char *changed)
{
    char commit[41], when[33];
    const cJSON *git = cJSON_GetObjectItemCaseSensitive(lock, "git");
    kt_json_get_str(git, "commit", commit, sizeof(commit));
    kt_json_get_str(lock, "locked_utc", when, sizeof(when));
    snprintf(commit, sizeof(commit), "%.7s", commit[0] ? commit : "no commit");
    if (!st->opt.relock) {
        fprintf(stderr,
                "error: '%s' no longer matches its lock '%s' (limits locked at %s, %s): "
                "changed %s\n",
                st->opt.spec_path, path, commit, when, changed);
        fprintf(stderr, "hint: put those keys back as they were locked, or run with --relock to "
                        "lock the new limits now (the run records that it relocked)\n");
        return KT_EXIT_DATAERR;
    }
    if (kt_limits_lock_write(path, now) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    fprintf(stderr, "warning: --relock: '%s' written again; changed since %s, %s: %s\n", path,
            commit, when, changed);
    cJSON_AddItemToObject(st->limits, "previous_lock", lock_json(path, lock));
    return 0;
}

int kt_run_check_limits(kt_run *st)
{
    char path[PATH_MAX];
    cJSON *lock = NULL, *now = NULL;
    char *changed = NULL;
    int rc = 0;
    st->limits = cJSON_CreateObject();
    if (!st->limits || kt_limits_lock_path(path, sizeof(path), st->opt.spec_path) < 0) {
        fprintf(stderr, "error: out of memory or path too long\n");
        return KT_EXIT_SOFTWARE;
    }
    int have = kt_limits_lock_read(&lock, path);
    if (have < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_DATAERR;
    }
    cJSON_AddBoolToObject(st->limits, "locked", have == 0);
    if (have == 1) {
        if (st->opt.relock)
            fprintf(stderr, "warning: --relock: '%s' has no lock ('ktrial lock' writes one)\n",
                    st->opt.spec_path);
        cJSON_AddNullToObject(st->limits, "lock");
        cJSON_AddBoolToObject(st->limits, "relocked", 0);
        cJSON *moved = thresholds_moved(st);
        cJSON_AddItemToObject(st->limits, "moved", moved ? moved : cJSON_CreateNull());
        return 0;
    }
    if (!(now = kt_limits_lock_new(st->spec, st->started))) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        cJSON_Delete(lock);
        return KT_EXIT_SOFTWARE;
    }
    size_t n = kt_limits_lock_diff(&changed, lock, now);
    if (n)
        rc = relock(st, path, lock, now, changed ? changed : "(out of memory)");
    cJSON_AddItemToObject(st->limits, "lock", lock_json(path, n ? now : lock));
    cJSON_AddBoolToObject(st->limits, "relocked", n > 0);
    if (n) {
        cJSON *keys = cJSON_AddArrayToObject(st->limits, "changed_keys");
        for (char *k = changed; k && *k;) {
            size_t len = strcspn(k, ",");
            char *key = strndup(k, len);
            cJSON_AddItemToArray(keys, cJSON_CreateString(key ? key : ""));
            free(key);
            k += len;
            k += strspn(k, ", ");
        }
    }
    cJSON_AddNullToObject(st->limits, "moved");
    free(changed);
    cJSON_Delete(lock);
    cJSON_Delete(now);
    return rc;
}
