/* command_call.c - one call of a command trial: its placeholders substituted, the command
 * spawned (kernels/process), its sample read (wall time or a reported metric), its costs summed
 * per arm, and the program each arm runs identified. */
#include "arm/command/command_run.h"
#include "arm/command/command_output.h"
#include "util/sha256.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* The placeholder values of a call; task < 0 for setup and teardown (no task, no output). */
void kt_command_call_vars(kt_command_vars *v, const crun *r, int arm, int task, const char *rep,
                          const char *output)
{
    memset(v, 0, sizeof(*v));
    kt_command_vars_set(v, "batch_size", r->batch);
    kt_command_vars_set(v, "context_length", r->context);
    kt_command_vars_set(v, "dtype", kt_dtype_name(r->spec->dtype));
    kt_command_vars_set(v, "seed", r->seed);
    kt_command_vars_set(v, "arm", arm_name(r, arm));
    if (task < 0) { /* setup, teardown: their env and cwd see no task (validation keeps the
                     * per-call names out of their argv) */
        static const char *const per_call[] = {"task", "input", "output", "expect", "repetition"};
        for (size_t i = 0; i < sizeof(per_call) / sizeof(per_call[0]); i++)
            kt_command_vars_set(v, per_call[i], "");
        return;
    }
    const kt_command_task *t = &r->cs->tasks[task];
    kt_command_vars_set(v, "task", t->name);
    kt_command_vars_set(v, "input", t->input);
    kt_command_vars_set(v, "expect", t->expect);
    kt_command_vars_set(v, "output", output);
    kt_command_vars_set(v, "repetition", rep);
}

static void free_list(char **list, size_t n)
{
    for (size_t i = 0; list && i < n; i++)
        free(list[i]);
    free(list);
}

/* Expands every template of 'a' into a new NULL-terminated list. */
static int expand_all(char ***out, const kt_argv *a, const kt_command_vars *v)
{
    char **list = calloc(a->n + 1, sizeof(*list));
    if (!list)
        return kt_error_code(KT_ENOMEM, "out of memory");
    for (size_t i = 0; i < a->n; i++) {
        int rc = kt_command_expand(&list[i], a->items[i], v);
        if (rc < 0) {
            free_list(list, i);
            return rc;
        }
    }
    *out = list;
    return KT_OK;
}

/* The command line for messages, each argument quoted when it needs it. */
static void describe_argv(char *buf, size_t len, char *const *argv)
{
    buf[0] = '\0';
    for (size_t i = 0; argv[i]; i++) {
        int plain = argv[i][0] && strcspn(argv[i], " \t\n'\"\\;$`*?&|<>(){}") == strlen(argv[i]);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, plain ? "%s%s" : "%s'%s'", i ? " " : "", argv[i]);
    }
}

/* Runs one expanded command of 'arm'; fills 'res' and, on failure, 'cr' (code and why). */
int kt_command_run_one(kt_process_result *res, crun *r, int arm, const kt_argv *tmpl,
                       const kt_command_vars *v, call_result *cr)
{
    const kt_command_arm *ca = command_arm(r, arm);
    char **argv = NULL, **env = NULL, *cwd = NULL;
    int rc = expand_all(&argv, tmpl, v);
    if (rc == 0)
        rc = expand_all(&env, &ca->env, v);
    if (rc == 0)
        rc = kt_command_expand(&cwd, ca->cwd, v);
    if (rc < 0) {
        cr->code = KT_REASON_COMMAND_FAILED;
        snprintf(cr->why, sizeof(cr->why), "cannot build the command: %s", kt_error_last());
        goto done;
    }
    struct stat st; /* else the spawn fails with the errno of a missing program */
    int cwd_err = stat(cwd, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
    if (cwd_err) {
        cr->code = KT_REASON_COMMAND_FAILED;
        snprintf(cr->why, sizeof(cr->why), "cannot run '%s': cannot enter its cwd '%s': %s",
                 argv[0], cwd, strerror(cwd_err));
        rc = -1;
        goto done;
    }
    kt_process_spec ps = {argv,
                          env,
                          ca->env.n,
                          cwd,
                          ca->timeout_s,
                          r->env.interrupted,
                          tmpl == &ca->run}; /* a call ends its group; a setup may not */
    rc = kt_process_run(res, &ps);
    if (rc < 0) {
        cr->code = KT_REASON_COMMAND_FAILED;
        snprintf(cr->why, sizeof(cr->why), "cannot run the command: %s", kt_error_last());
        goto done;
    }
    if (res->cancelled) { /* not the command's fault: the point is measured again on --resume */
        snprintf(r->out->error, sizeof(r->out->error), "interrupted");
        cr->code = KT_REASON_NOT_MEASURED;
        snprintf(cr->why, sizeof(cr->why), "interrupted");
        rc = -1;
        goto done;
    }
    if (!kt_process_ok(res)) {
        char status[128], line[256];
        kt_process_describe(status, sizeof(status), res, ca->timeout_s);
        describe_argv(line, sizeof(line), argv);
        size_t tail = strlen(res->err_tail);
        while (tail > 0 && isspace((unsigned char)res->err_tail[tail - 1]))
            tail--; /* its last newline would end the reason in a space */
        const char *err = res->err_tail + (tail > 120 ? tail - 120 : 0);
        cr->code = res->timed_out ? KT_REASON_TIMEOUT : KT_REASON_COMMAND_FAILED;
        snprintf(cr->why, sizeof(cr->why), "command %s: %s%s%.*s", status, line,
                 tail ? "; stderr: " : "", (int)(res->err_tail + tail - err), err);
        for (char *p = cr->why; *p; p++)
            if (*p == '\n')
                *p = ' ';
        rc = -1;
    }
done:
    free_list(argv, tmpl->n);
    free_list(env, ca->env.n);
    free(cwd);
    return rc;
}

static double *extra_slot(arm_costs *c, const char *name)
{
    for (int i = 0; i < c->n_extra; i++)
        if (strcmp(c->extra_names[i], name) == 0)
            return &c->extra_sums[i];
    if (c->n_extra == MAX_EXTRA)
        return NULL;
    snprintf(c->extra_names[c->n_extra], sizeof(c->extra_names[0]), "%s", name);
    return &c->extra_sums[c->n_extra++];
}

/* Reads the json-lines of the 'n' bytes of stdout: returns the value of 'metric' (the last one
 * reported), NAN when absent; sums every other metric into the arm's extras. Lines are found by
 * length, so that a NUL byte in a line before (binary output) hides no metric after it. */
static double read_metrics(arm_costs *costs, const char *out, size_t n, const char *metric)
{
    double found = NAN;
    for (const char *line = out, *end = out + n; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        size_t len = eol ? (size_t)(eol - line) : (size_t)(end - line);
        size_t lead = 0; /* JSON allows blanks before the object: an indenting logger's */
        while (lead < len && (line[lead] == ' ' || line[lead] == '\t'))
            lead++;
        cJSON *doc =
            lead < len && line[lead] == '{' ? cJSON_ParseWithLength(line + lead, len - lead) : NULL;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(doc, "metric");
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(doc, "value");
        if (cJSON_IsString(name) && cJSON_IsNumber(value)) {
            if (strcmp(name->valuestring, metric) == 0) {
                found = value->valuedouble;
            } else {
                double *sum = extra_slot(costs, name->valuestring);
                if (sum) {
                    *sum += value->valuedouble;
                    costs->extra_counts[sum - costs->extra_sums]++;
                }
            }
        }
        cJSON_Delete(doc);
        line += len + (eol != NULL);
    }
    return found;
}

/* One call of 'arm' on 'task'; 'rep' < 0 for a warmup call. Returns 0, or -1 with 'cr' set. */
int kt_command_call(crun *r, int arm, int task, int rep, call_result *cr)
{
    char reps[32];
    memset(cr, 0, sizeof(*cr));
    snprintf(reps, sizeof(reps), "%d", rep);
    snprintf(cr->output, sizeof(cr->output), "%s/%d-%s-%s%d.%s", r->workdir, arm,
             r->cs->tasks[task].name, rep < 0 ? "w" : "r", rep < 0 ? -rep : rep,
             kt_output_extension(r->cs->format));
    unlink(cr->output); /* a call that writes nothing must not find an old file */
    kt_command_vars v;
    kt_command_call_vars(&v, r, arm, task, reps, cr->output);
    kt_process_result res;
    memset(&res, 0, sizeof(res));
    /* the call's peak RSS is its own where kt_exec started it (kernels/process/exec/), with
     * that helper's resident set as the least it can read; NaN where it could not be measured
     * (docs/command-trials.md) */
    int rc = kt_command_run_one(&res, r, arm, &command_arm(r, arm)->run, &v, cr);
    double floor_kib = res.rss_floor_kib;
    arm_costs *c = &r->costs[arm];
    cr->usage.wall_s = res.out ? res.wall_ns * 1e-9 : NAN;
    cr->usage.user_s = res.out ? res.user_s : NAN;
    cr->usage.sys_s = res.out ? res.sys_s : NAN;
    cr->usage.max_rss_kib = res.out ? res.max_rss_kib : NAN;
    if (res.left_behind && !c->left_behind++)
        fprintf(stderr,
                "warning: a call of '%s' at %s left processes running after it exited; they "
                "were killed (a timed call is its whole process group; start servers in "
                "setup)\n",
                arm_name(r, arm), r->point->id);
    if (res.out) {
        c->calls++;
        c->wall_s += res.wall_ns * 1e-9;
        c->user_s += res.user_s;
        c->sys_s += res.sys_s;
        if (c->calls == 1 || res.max_rss_kib > c->max_rss_kib || isnan(res.max_rss_kib)) {
            c->max_rss_kib = res.max_rss_kib;
            c->max_rss_floor_kib = floor_kib;
        }
    }
    if (rc == 0) {
        int wall = strcmp(r->cs->metric, "wall") == 0;
        double value = read_metrics(c, res.out, res.out_len, wall ? "" : r->cs->metric);
        if (wall)
            value = res.wall_ns;
        if (!(isfinite(value) && value > 0)) {
            cr->code = KT_REASON_METRIC_MISSING;
            if (isnan(value) && res.out_truncated)
                snprintf(cr->why, sizeof(cr->why),
                         "the command printed more than %d bytes on stdout, where ktrial stops "
                         "reading, and no {\"metric\": \"%s\", \"value\": ...} line before that",
                         KT_PROCESS_STDOUT_MAX, r->cs->metric);
            else
                snprintf(cr->why, sizeof(cr->why),
                         isnan(value)
                             ? "the command printed no {\"metric\": \"%s\", \"value\": ...} "
                               "line on stdout"
                             : "the command reported metric '%s' as %g, not a positive number",
                         r->cs->metric, value);
            rc = -1;
        } else {
            cr->sample = r->cs->higher ? 1e9 / value : value;
        }
    }
    if (rc < 0 && r->env.keep) {
        char name[160], *text = NULL;
        snprintf(name, sizeof(name), "%s.%s%d.failure.txt", r->cs->tasks[task].name,
                 rep < 0 ? "w" : "r", rep < 0 ? -rep : rep);
        if (asprintf(&text, "%s\n\n--- the last %zu bytes of stderr ---\n%s", cr->why,
                     strlen(res.err_tail), res.err_tail) >= 0)
            r->env.keep(r->env.ctx, r->point->id, arm_name(r, arm), name, NULL, text);
        free(text);
    }
    kt_process_result_free(&res);
    return rc;
}
/* The arm's costs as result.json metrics, and its peak RSS as its bytes (the memory gate). */
void kt_command_record_costs(crun *r, int arm)
{
    kt_arm_result *a = arm_result(r, arm);
    const arm_costs *c = &r->costs[arm];
    double n = c->calls > 0 ? (double)c->calls : NAN;
    struct {
        const char *name, *unit;
        double value;
    } rows[] = {
        {"calls", "", (double)c->calls},
        {"wall_ms", "ms", c->wall_s * 1e3 / n},
        {"user_cpu_ms", "ms", c->user_s * 1e3 / n},
        {"sys_cpu_ms", "ms", c->sys_s * 1e3 / n},
        {"max_rss_mib", "MiB", c->max_rss_kib / 1024.0},
        {"rss_floor_mib", "MiB", c->max_rss_floor_kib / 1024.0},
    };
    a->n_metrics = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int m = a->n_metrics++;
        snprintf(a->metric_names[m], sizeof(a->metric_names[m]), "%s", rows[i].name);
        snprintf(a->metric_units[m], sizeof(a->metric_units[m]), "%s", rows[i].unit);
        a->metric_values[m] = rows[i].value;
    }
    for (int i = 0; i < c->n_extra && a->n_metrics < KT_MAX_METRICS; i++) {
        int m = a->n_metrics++;
        snprintf(a->metric_names[m], sizeof(a->metric_names[m]), "%s", c->extra_names[i]);
        a->metric_units[m][0] = '\0';
        a->metric_values[m] = c->extra_sums[i] / (double)c->extra_counts[i];
    }
    a->bytes = c->max_rss_kib * 1024.0;
    a->variant_bytes = 0;
}

/* The file 'name' names when run from 'cwd': as written when it has a '/', else the first
 * executable of that name on PATH (what posix_spawnp runs). */
static void find_program(char *out, size_t len, const char *name, const char *cwd)
{
    if (strchr(name, '/')) {
        snprintf(out, len, "%s%s%s", name[0] == '/' ? "" : cwd, name[0] == '/' ? "" : "/", name);
    } else {
        const char *path = getenv("PATH");
        snprintf(out, len, "%s", name);
        for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
            size_t n = strcspn(p, ":");
            char candidate[4096];
            snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)n, n ? p : ".", name);
            if (access(candidate, X_OK) == 0) {
                snprintf(out, len, "%s", candidate);
                break;
            }
            p += n + (p[n] == ':');
        }
    }
    char *real = realpath(out, NULL);
    if (real)
        snprintf(out, len, "%s", real);
    free(real);
}

/* Fills the arm's program and its SHA-256 (left empty when the file cannot be read). */
void kt_command_identify_program(crun *r, int arm)
{
    kt_arm_result *a = arm_result(r, arm);
    const kt_command_arm *ca = command_arm(r, arm);
    kt_command_vars v;
    char *name = NULL, *cwd = NULL;
    kt_command_call_vars(&v, r, arm, 0, "0", "");
    if (kt_command_expand(&name, ca->run.items[0], &v) == 0 &&
        kt_command_expand(&cwd, ca->cwd, &v) == 0) {
        find_program(a->program, sizeof(a->program), name, cwd);
        FILE *f = fopen(a->program, "rb");
        struct stat st;
        char *data = NULL;
        if (f && fstat(fileno(f), &st) == 0 && st.st_size < ((off_t)1 << 31) &&
            (data = malloc((size_t)st.st_size + 1)) &&
            fread(data, 1, (size_t)st.st_size, f) == (size_t)st.st_size &&
            kt_sha256_hex(a->program_sha256, data, (size_t)st.st_size) != 0)
            a->program_sha256[0] = '\0';
        free(data);
        if (f)
            fclose(f);
    }
    free(name);
    free(cwd);
}