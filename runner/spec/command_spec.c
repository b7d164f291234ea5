/* command_spec.c - reads the op 'command' parts of a spec (the schema has checked their
 * shapes already) and checks every placeholder of every argv, env value and cwd. */
#include "spec/command_spec.h"
#include "spec/yaml_tree.h"
#include "kernel.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const kt_command_placeholder_names[] = {
    "batch_size", "context_length", "dtype", "task",       "input", "output",
    "expect",     "seed",           "arm",   "repetition", NULL,
};

int kt_command_placeholder(const char *name, size_t len)
{
    for (int i = 0; kt_command_placeholder_names[i]; i++)
        if (strlen(kt_command_placeholder_names[i]) == len &&
            strncmp(kt_command_placeholder_names[i], name, len) == 0)
            return i;
    return -1;
}

void kt_command_vars_set(kt_command_vars *vars, const char *name, const char *value)
{
    int i = kt_command_placeholder(name, strlen(name));
    if (i >= 0)
        vars->values[i] = value;
}

/* Length of the placeholder-shaped name after the '{' at 's' ([a-z_]+ then '}'), or 0. */
static size_t placeholder_len(const char *s)
{
    size_t n = 0;
    while (islower((unsigned char)s[1 + n]) || s[1 + n] == '_')
        n++;
    return n > 0 && s[1 + n] == '}' ? n : 0;
}

int kt_command_expand(char **out, const char *tmpl, const kt_command_vars *vars)
{
    size_t cap = strlen(tmpl) + 1, len = 0;
    for (const char *p = tmpl; *p; p++) /* room for every value, generously */
        if (*p == '{')
            cap += 4096;
    char *s = malloc(cap);
    if (!s)
        return kt_error_code(KT_ENOMEM, "out of memory");
    for (const char *p = tmpl; *p;) {
        size_t n = *p == '{' ? placeholder_len(p) : 0;
        int i = n ? kt_command_placeholder(p + 1, n) : -1;
        if (i < 0) {
            s[len++] = *p++;
            continue;
        }
        const char *v = vars->values[i];
        if (!v) {
            free(s);
            return kt_error_code(KT_EINVAL, "'{%s}' has no value here",
                                 kt_command_placeholder_names[i]);
        }
        size_t vl = strlen(v);
        if (vl > 4095) {
            free(s);
            return kt_error_code(KT_EINVAL, "the value of '{%s}' is too long",
                                 kt_command_placeholder_names[i]);
        }
        memcpy(s + len, v, vl);
        len += vl;
        p += n + 2;
    }
    s[len] = '\0';
    *out = s;
    return KT_OK;
}

typedef struct pctx {
    const char *path; /* the spec, for messages */
    char dir[4096];   /* its folder */
    kt_diag *diag;
    int has_input, has_expect; /* every task has one */
    int errors;
} pctx;

static void report(pctx *c, const kt_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(pctx *c, const kt_node *at, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    kt_diag_error(c->diag, c->path, at ? at->line : 0, at ? at->col : 0, "%s", msg);
    c->errors++;
}

/* Checks the placeholders of one template at node 'at' ('where' names it in messages). The
 * column points at the '{' when the scalar is written on one line, plain or quoted. */
/* The placeholders a setup or teardown command cannot have: they vary per call. */
static int per_call(const char *name)
{
    static const char *const names[] = {"task", "input", "output", "expect", "repetition"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

static void check_template(pctx *c, const kt_node *at, const char *where, const char *s)
{
    int once = strstr(where, ".setup") || strstr(where, ".teardown");
    for (const char *p = s; *p; p++) {
        size_t n = *p == '{' ? placeholder_len(p) : 0;
        if (!n)
            continue;
        int i = kt_command_placeholder(p + 1, n);
        kt_node here = *at;
        if (!strchr(s, '\n'))
            here.col = at->col + (at->quoted ? 1 : 0) + (int)(p - s);
        if (i < 0) {
            char names[256] = "";
            for (int k = 0; kt_command_placeholder_names[k]; k++) {
                strncat(names, k ? ", " : "", sizeof(names) - strlen(names) - 1);
                strncat(names, kt_command_placeholder_names[k], sizeof(names) - strlen(names) - 1);
            }
            report(c, &here, "%s: unknown placeholder '{%.*s}' (known: %s)", where, (int)n, p + 1,
                   names);
        } else if (once && per_call(kt_command_placeholder_names[i])) {
            report(c, &here, "%s: '{%s}' varies per call; setup and teardown run once per point",
                   where, kt_command_placeholder_names[i]);
        } else if ((strcmp(kt_command_placeholder_names[i], "input") == 0 && !c->has_input) ||
                   (strcmp(kt_command_placeholder_names[i], "expect") == 0 && !c->has_expect)) {
            report(c, &here, "%s: '{%s}' needs every task to have '%s'", where,
                   kt_command_placeholder_names[i], kt_command_placeholder_names[i]);
        }
        p += n + 1;
    }
}

static char *resolve(const pctx *c, const char *rel)
{
    char *out = NULL;
    if (rel[0] == '/')
        return strdup(rel);
    if (asprintf(&out, "%s/%s", c->dir, rel) < 0)
        return NULL;
    return out;
}

/* Reads an argv list at 'list' into 'out', checking its placeholders. */
static void read_argv(pctx *c, const kt_node *list, const char *where, kt_argv *out)
{
    if (!list || list->kind != KT_NODE_SEQ)
        return;
    out->items = calloc(list->n ? list->n : 1, sizeof(*out->items));
    if (!out->items) {
        report(c, list, "%s: out of memory", where);
        return;
    }
    for (size_t i = 0; i < list->n; i++) {
        const char *s = kt_node_str(list->items[i]);
        char sub[160];
        snprintf(sub, sizeof(sub), "%s[%zu]", where, i);
        check_template(c, list->items[i], sub, s ? s : "");
        if (i == 0 && s && !s[0]) /* else the spawn fails at run time, and PATH finds a folder */
            report(c, list->items[i],
                   "%s: the program is empty; name one (a path or a name on "
                   "PATH)",
                   sub);
        out->items[out->n++] = strdup(s ? s : "");
    }
}

static void read_env(pctx *c, const kt_node *map, const char *where, kt_argv *out)
{
    if (!map || map->kind != KT_NODE_MAP)
        return;
    out->items = calloc(map->n ? map->n : 1, sizeof(*out->items));
    for (size_t i = 0; out->items && i < map->n; i++) {
        const char *k = kt_node_str(map->keys[i]), *v = kt_node_str(map->items[i]);
        char sub[160], *entry = NULL;
        snprintf(sub, sizeof(sub), "%s.%s", where, k ? k : "");
        if (!k || !k[0] || strchr(k, '=')) {
            report(c, map->keys[i], "%s: an environment variable name has no '=' and is not empty",
                   sub);
            continue;
        }
        check_template(c, map->items[i], sub, v ? v : "");
        if (asprintf(&entry, "%s=%s", k, v ? v : "") >= 0)
            out->items[out->n++] = entry;
    }
}

static void read_arm(pctx *c, const kt_node *node, const char *where, kt_command_arm *arm)
{
    char sub[128];
    arm->timeout_s = KT_COMMAND_DEFAULT_TIMEOUT_S;
    if (!node)
        return;
    const kt_node *run = kt_node_get(node, "run");
    if (!run)
        report(c, node, "%s: op 'command' needs 'run', the argv of one call", where);
    snprintf(sub, sizeof(sub), "%s.run", where);
    read_argv(c, run, sub, &arm->run);
    snprintf(sub, sizeof(sub), "%s.setup", where);
    read_argv(c, kt_node_get(node, "setup"), sub, &arm->setup);
    snprintf(sub, sizeof(sub), "%s.teardown", where);
    read_argv(c, kt_node_get(node, "teardown"), sub, &arm->teardown);
    snprintf(sub, sizeof(sub), "%s.env", where);
    read_env(c, kt_node_get(node, "env"), sub, &arm->env);
    const kt_node *cwd = kt_node_get(node, "cwd");
    const char *cwd_s = kt_node_str(cwd);
    snprintf(sub, sizeof(sub), "%s.cwd", where);
    if (cwd_s)
        check_template(c, cwd, sub, cwd_s);
    arm->cwd = resolve(c, cwd_s ? cwd_s : ".");
    const kt_node *tn = kt_node_get(node, "timeout_s");
    double t;
    if (tn && kt_node_double(tn, &t) == 0)
        arm->timeout_s = t;
}

/* A task's input or expect file that cannot be read now: a warning at its line, not an error,
 * since an arm's setup may write it before the first call. */
static void check_task_file(pctx *c, const kt_node *at, size_t i, const char *key, const char *path)
{
    struct stat sb;
    const char *why = NULL;
    if (!path || !at)
        return;
    if (stat(path, &sb) != 0)
        why = strerror(errno);
    else if (!S_ISREG(sb.st_mode))
        why = "not a regular file";
    else if (access(path, R_OK) != 0)
        why = strerror(errno);
    if (why)
        kt_diag_add(c->diag, KT_DIAG_WARNING, c->path, at->line, at->col,
                    "tasks[%zu].%s: '%s': %s (unless a setup step writes it, every call of this "
                    "task fails)",
                    i, key, path, why);
}

static void read_tasks(pctx *c, const kt_node *root, kt_command_spec *cs)
{
    const kt_node *list = kt_node_get(root, "tasks");
    size_t n = list && list->kind == KT_NODE_SEQ ? list->n : 0;
    cs->tasks = calloc(n ? n : 1, sizeof(*cs->tasks));
    if (!cs->tasks)
        return;
    c->has_input = c->has_expect = n > 0;
    if (n == 0) {
        snprintf(cs->tasks[0].name, sizeof(cs->tasks[0].name), "default");
        cs->n_tasks = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const kt_node *t = list->items[i];
        kt_command_task *task = &cs->tasks[cs->n_tasks];
        const char *name = kt_node_str(kt_node_get(t, "name"));
        const char *input = kt_node_str(kt_node_get(t, "input"));
        const char *expect = kt_node_str(kt_node_get(t, "expect"));
        snprintf(task->name, sizeof(task->name), "%s", name ? name : "");
        for (size_t j = 0; j < cs->n_tasks; j++)
            if (strcmp(cs->tasks[j].name, task->name) == 0)
                report(c, kt_node_get(t, "name"), "tasks[%zu].name: '%s' is also task %zu", i,
                       task->name, j);
        task->input = input ? resolve(c, input) : NULL;
        task->expect = expect ? resolve(c, expect) : NULL;
        check_task_file(c, kt_node_get(t, "input"), i, "input", task->input);
        check_task_file(c, kt_node_get(t, "expect"), i, "expect", task->expect);
        c->has_input &= input != NULL;
        c->has_expect &= expect != NULL;
        cs->n_tasks++;
    }
}

static void read_measure(pctx *c, const kt_node *root, kt_command_spec *cs)
{
    const kt_node *m = kt_node_get(root, "measure");
    const char *metric = kt_node_str(kt_node_get(m, "metric"));
    const char *better = kt_node_str(kt_node_get(m, "better"));
    snprintf(cs->metric, sizeof(cs->metric), "%s", metric ? metric : "wall");
    cs->higher = better && strcmp(better, "higher") == 0;
    if (cs->higher && strcmp(cs->metric, "wall") == 0)
        report(c, kt_node_get(m, "better"),
               "measure.better: 'higher' with metric 'wall' would call a slower command better");
    const kt_node *o = kt_node_get(root, "outputs");
    const char *format = kt_node_str(kt_node_get(o, "format"));
    const char *to = kt_node_str(kt_node_get(o, "compare_to"));
    static const char *const formats[] = {"f32", "f64", "json-numbers", "text"};
    for (int i = 0; format && i < 4; i++)
        if (strcmp(format, formats[i]) == 0)
            cs->format = (kt_output_format)(KT_OUTPUT_F32 + i);
    cs->compare_expect = to && strcmp(to, "expect") == 0;
    const kt_node *numerics = kt_node_get(kt_node_get(root, "thresholds"), "numerics");
    if (numerics && !o)
        report(c, numerics,
               "thresholds.numerics: a command trial checks numbers only in its outputs, and "
               "this spec has no 'outputs' (add outputs: {format: ...} or remove these limits)");
    if (cs->compare_expect && !c->has_expect)
        report(c, kt_node_get(o, "compare_to"),
               "outputs.compare_to: 'expect' needs every task to have an 'expect' file");
}

int kt_command_spec_parse(kt_command_spec **out, const kt_node *root, const char *spec_path,
                          kt_diag *diag)
{
    pctx c = {0};
    c.path = spec_path;
    c.diag = diag;
    /* absolute, so that an arm's cwd does not change what a task's path names */
    char *copy = strdup(spec_path), *real = copy ? realpath(dirname(copy), NULL) : NULL;
    snprintf(c.dir, sizeof(c.dir), "%s", real ? real : ".");
    free(real);
    free(copy);
    *out = NULL;
    kt_command_spec *cs = calloc(1, sizeof(*cs));
    if (!cs)
        return kt_diag_error(diag, spec_path, 0, 0, "out of memory");
    read_tasks(&c, root, cs);
    read_measure(&c, root, cs);
    read_arm(&c, kt_node_get(root, "baseline"), "baseline", &cs->baseline);
    const kt_node *list = kt_node_get(root, "candidates");
    size_t n = list && list->kind == KT_NODE_SEQ ? list->n : 0;
    cs->candidates = calloc(n ? n : 1, sizeof(*cs->candidates));
    for (size_t i = 0; cs->candidates && i < n; i++) {
        char where[64];
        snprintf(where, sizeof(where), "candidates[%zu]", i);
        read_arm(&c, list->items[i], where, &cs->candidates[i]);
        cs->n_candidates++;
    }
    if (c.errors || !cs->tasks || !cs->candidates) {
        kt_command_spec_free(cs);
        return -1;
    }
    *out = cs;
    return 0;
}

static void free_argv(kt_argv *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->items[i]);
    free(a->items);
}

static void free_arm(kt_command_arm *arm)
{
    free_argv(&arm->run);
    free_argv(&arm->setup);
    free_argv(&arm->teardown);
    free_argv(&arm->env);
    free(arm->cwd);
}

void kt_command_spec_free(kt_command_spec *c)
{
    if (!c)
        return;
    for (size_t i = 0; c->tasks && i < c->n_tasks; i++) {
        free(c->tasks[i].input);
        free(c->tasks[i].expect);
    }
    free(c->tasks);
    free_arm(&c->baseline);
    for (size_t i = 0; i < c->n_candidates; i++)
        free_arm(&c->candidates[i]);
    free(c->candidates);
    free(c);
}

cJSON *kt_command_spec_to_json(const kt_command_spec *c)
{
    static const char *const formats[] = {NULL, "f32", "f64", "json-numbers", "text"};
    cJSON *o = cJSON_CreateObject();
    cJSON *tasks = cJSON_AddArrayToObject(o, "tasks");
    for (size_t i = 0; i < c->n_tasks; i++)
        cJSON_AddItemToArray(tasks, cJSON_CreateString(c->tasks[i].name));
    cJSON_AddStringToObject(o, "metric", c->metric);
    cJSON_AddStringToObject(o, "better", c->higher ? "higher" : "lower");
    if (formats[c->format])
        cJSON_AddStringToObject(o, "output_format", formats[c->format]);
    else
        cJSON_AddNullToObject(o, "output_format");
    cJSON_AddStringToObject(o, "compare_to", c->compare_expect ? "expect" : "baseline");
    return o;
}
