/* command_arm.c - the command kind of arm: whole programs as the calls. Per point a work folder
 * for the outputs (open); per arm its setup (prepare) and teardown (release), its outputs
 * compared with the baseline's or the task's expect file after each pair (check), and what a
 * failed call or a differing output means for it. One call itself (placeholders, spawn,
 * sample, costs) is in command_call.c; calibration calls in command_calibrate.c. */
#include "arm/command/command_run.h"
#include "arm/command/command.h"
#include "arm/command/command_output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fail_arm(crun *r, int arm, const call_result *cr)
{
    kt_arm_result *a = arm_result(r, arm);
    if (a->failed || r->out->error[0]) /* an interrupt is no failure of the arm */
        return;
    a->failed = 1;
    a->failure_code = cr->code;
    snprintf(a->failure, sizeof(a->failure), "%s", cr->why);
}

/* A failed call or setup of 'arm', its reason prefixed with 'what': the baseline's is a point
 * error, a candidate's fails that candidate (an interrupt, already a point error, is neither).
 * Returns -2 for a point error, -1 otherwise. */
static int arm_failed(crun *r, int arm, call_result *cr, const char *what)
{
    char why[512];
    snprintf(why, sizeof(why), "%s%.440s", what, cr->why);
    snprintf(cr->why, sizeof(cr->why), "%s", why);
    if (r->out->error[0])
        return -2;
    if (arm == 0) {
        snprintf(r->out->error, sizeof(r->out->error), "baseline '%s' failed: %s", arm_name(r, 0),
                 cr->why);
        return -2;
    }
    fail_arm(r, arm, cr);
    return -1;
}

/* Keeps the first output of each task of an arm (and, when 'failing', that one too). */
static void keep_output(crun *r, int arm, int task, const char *path, int failing)
{
    arm_costs *c = &r->costs[arm];
    if (!r->env.keep || r->cs->format == KT_OUTPUT_NONE || (c->kept[task] && !failing) ||
        access(path, R_OK) != 0)
        return;
    char name[160];
    snprintf(name, sizeof(name), "%s%s.%s", r->cs->tasks[task].name, failing ? ".failing" : "",
             kt_output_extension(r->cs->format));
    if (r->env.keep(r->env.ctx, r->point->id, arm_name(r, arm), name, path, NULL) == 0)
        c->kept[task] = 1;
}

static void fold_worst(kt_numerics *worst, const kt_numerics *n)
{
    worst->elems = n->elems;
    worst->nonfinite = n->nonfinite > worst->nonfinite ? n->nonfinite : worst->nonfinite;
    worst->max_abs = fmax(worst->max_abs, n->max_abs);
    worst->max_rel = fmax(worst->max_rel, n->max_rel);
    worst->rel_l2 = fmax(worst->rel_l2, n->rel_l2);
    worst->cosine = fmin(worst->cosine, n->cosine);
}

/* Replaces 'from' in 'text' (at most 'len' bytes) by 'to': temporary paths by what they are. */
static void replace(char *text, size_t len, const char *from, const char *to)
{
    char *at, buf[1024];
    if (!from || !*from || !(at = strstr(text, from)))
        return;
    snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    snprintf(text, len, "%s", buf);
}

/* Compares the output of 'arm' with its reference: the baseline's output 'base_path' or the
 * task's expect file. Returns 0, -1 when the arm's output fails (arm failed), -2 when the
 * reference cannot be read (a point error, in out->error). */
static int check_output(crun *r, int arm, int task, int rep, const char *path,
                        const char *base_path)
{
    if (r->cs->format == KT_OUTPUT_NONE)
        return 0;
    const char *ref = r->cs->compare_expect ? r->cs->tasks[task].expect : base_path;
    kt_numerics n;
    call_result cr;
    memset(&cr, 0, sizeof(cr));
    char why[512] = "";
    int rc = kt_output_compare(&n, path, ref, r->cs->format, why, sizeof(why));
    char quoted[4300];
    snprintf(quoted, sizeof(quoted), "output '%s'", path);
    replace(why, sizeof(why), quoted, "the output");
    if (r->cs->compare_expect) { /* the task's expect file, not an output of an arm */
        char named[4300];
        snprintf(quoted, sizeof(quoted), "output '%s'", ref);
        snprintf(named, sizeof(named), "the expect file '%s'", ref);
        replace(why, sizeof(why), quoted, named);
    }
    if (base_path) {
        snprintf(quoted, sizeof(quoted), "the reference '%s'", base_path);
        replace(why, sizeof(why), quoted, "the baseline's");
        snprintf(quoted, sizeof(quoted), "output '%s'", base_path);
        replace(why, sizeof(why), quoted, "the baseline's output");
    }
    snprintf(cr.why, sizeof(cr.why), "repetition %d, task '%s': %.440s", rep,
             r->cs->tasks[task].name, why);
    if (rc == -2) {
        snprintf(r->out->error, sizeof(r->out->error), "reference output: %s", cr.why);
        return -2;
    }
    kt_arm_result *a = arm_result(r, arm);
    fold_worst(&a->numerics[task], &n);
    if (rc < 0) {
        keep_output(r, arm, task, path, 1);
        cr.code = KT_REASON_OUTPUT;
        if (arm == 0) {
            snprintf(r->out->error, sizeof(r->out->error), "baseline '%s' output: %s",
                     arm_name(r, 0), cr.why);
            return -2;
        }
        fail_arm(r, arm, &cr);
        return -1;
    }
    return 0;
}

/* setup (which = 0) or teardown (1) of one arm; a teardown failure is only reported. */
static int setup_or_teardown(crun *r, int arm, int which)
{
    const kt_command_arm *ca = command_arm(r, arm);
    const kt_argv *a = which ? &ca->teardown : &ca->setup;
    if (a->n == 0)
        return 0;
    kt_command_vars v;
    kt_command_call_vars(&v, r, arm, -1, NULL, NULL);
    kt_process_result res;
    memset(&res, 0, sizeof(res));
    call_result cr;
    memset(&cr, 0, sizeof(cr));
    int rc = kt_command_run_one(&res, r, arm, a, &v, &cr);
    kt_process_result_free(&res);
    if (rc < 0 && which)
        fprintf(stderr, "warning: teardown of '%s' at %s: %s\n", arm_name(r, arm), r->point->id,
                cr.why);
    if (rc < 0 && !which)
        arm_failed(r, arm, &cr, "setup ");
    return rc;
}

/* The arm's identity: its name, the one variant "exec", its program and the program's SHA-256
 * (read once per point). */
static void command_describe(crun *r, int arm)
{
    kt_arm_result *a = arm_result(r, arm);
    if (r->described[arm])
        return;
    r->described[arm] = 1;
    snprintf(a->name, sizeof(a->name), "%s", arm_name(r, arm));
    snprintf(a->variant, sizeof(a->variant), "exec");
    kt_command_identify_program(r, arm);
}

/* The arms' results named and their numerics set up, the placeholder values, every arm's
 * program identified, and the work folder; r->out has its candidates allocated. */
static int start(crun *r, const kt_arm_env *env)
{
    r->env = *env;
    r->spec = env->spec;
    r->cs = env->spec->command;
    r->point = env->point;
    r->out = env->out;
    for (int arm = 0; arm <= (int)r->out->n_cands; arm++) {
        kt_arm_result *a = arm_result(r, arm);
        a->n_sets = (int)r->cs->n_tasks;
        a->repeatable = -1;
        for (int s = 0; s < a->n_sets; s++)
            a->numerics[s].cosine = r->cs->format == KT_OUTPUT_NONE ? NAN : 1;
        if (r->cs->format == KT_OUTPUT_NONE)
            for (int s = 0; s < a->n_sets; s++)
                a->numerics[s].max_abs = a->numerics[s].max_rel = a->numerics[s].rel_l2 = NAN;
    }
    snprintf(r->seed, sizeof(r->seed), "%llu", (unsigned long long)(env->seed >> 1));
    snprintf(r->batch, sizeof(r->batch), "%lld", (long long)r->point->batch_size);
    snprintf(r->context, sizeof(r->context), "%lld", (long long)r->point->context_length);
    for (int arm = 0; arm <= (int)r->out->n_cands; arm++)
        command_describe(r, arm);
    const char *tmp = getenv("TMPDIR");
    snprintf(r->workdir, sizeof(r->workdir), "%s/ktrial-command-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(r->workdir))
        return kt_error_code(KT_EIO, "cannot create a folder under '%s' for outputs",
                             tmp && *tmp ? tmp : "/tmp");
    return KT_OK;
}

static int command_open(crun **set, int *n_sets, const kt_arm_env *env)
{
    crun *r = calloc(1, sizeof(*r));
    if (!r)
        return kt_error_code(KT_ENOMEM, "out of memory");
    int rc = start(r, env);
    if (rc < 0) {
        free(r);
        return rc;
    }
    *set = r;
    *n_sets = (int)r->cs->n_tasks;
    return KT_OK;
}

static int command_prepare(crun *r, int arm)
{
    r->set_up[arm] = 1;
    int rc = setup_or_teardown(r, arm, 0);
    return r->out->error[0] ? -2 : rc < 0 ? -1 : 0;
}

/* One call of 'arm' on task at->set: a failure's reason prefixed with where it happened. */
static int command_call(crun *r, int arm, const kt_arm_at *at, kt_arm_sample *out)
{
    call_result *cr = &r->last[arm];
    memset(out, 0, sizeof(*out));
    if (kt_command_call(r, arm, at->set, at->rep, cr) < 0) {
        char what[128];
        if (at->rep < 0)
            snprintf(what, sizeof(what), "warmup call %d: ", -at->rep);
        else
            snprintf(what, sizeof(what), "repetition %d, task '%s': ", at->rep,
                     r->cs->tasks[at->set].name);
        out->usage = cr->usage;
        return arm_failed(r, arm, cr, what);
    }
    out->t.time_ns = cr->sample;
    out->usage = cr->usage;
    return 0;
}

/* The output of the arm's last call against the baseline's ('ref' 0) or, with compare_expect,
 * the task's expect file; the baseline alone (ref < 0) is checked only against an expect
 * file. Both outputs of a pair that passed are kept for review (the first of each task). */
static int command_check(crun *r, int arm, const kt_arm_at *at, int ref)
{
    if (ref < 0) {
        if (arm != 0 || !r->cs->compare_expect)
            return 0;
        return check_output(r, 0, at->set, at->rep, r->last[0].output, NULL) == -2 ? -2 : 0;
    }
    int rc = check_output(r, arm, at->set, at->rep, r->last[arm].output, r->last[ref].output);
    if (rc < 0)
        return rc;
    keep_output(r, ref, at->set, r->last[ref].output, 0);
    keep_output(r, arm, at->set, r->last[arm].output, 0);
    return 0;
}

static void command_forget(crun *r, int arm)
{
    if (r->last[arm].output[0])
        unlink(r->last[arm].output);
    r->last[arm].output[0] = '\0';
}

/* Its teardown when its setup ran; its costs recorded (its peak RSS as its bytes). */
static void command_release(crun *r, int arm)
{
    if (r->set_up[arm])
        setup_or_teardown(r, arm, 1);
    r->set_up[arm] = 0;
    kt_command_record_costs(r, arm);
}

static void command_close(crun *r)
{
    rmdir(r->workdir);
    free(r);
}

/* The metric the samples are of ("wall" or one the command reports), and its direction. */
static const char *command_metric(const kt_spec *spec, int *higher)
{
    *higher = spec->command->higher;
    return spec->command->metric;
}

const kt_arm_kind kt_arm_command = {
    .name = "command",
    .startup = "the arms' setup",
    .numerics = KT_ARM_NUMERICS_OUTPUT,
    .usage = KT_ARM_USAGE_RSS | KT_ARM_USAGE_CPU_TIME,
    .clock = KT_ARM_CLOCK_CHILD,
    .tick_ns = 1,
    .isolated = 0, /* each call is a child process: a crash or a hang costs only that call */
    .needs_backend = 0,
    .placements = 0,
    .grouped = 0,
    .shuffles = 0,
    .checks_each_call = 0,
    .open = command_open,
    .describe = command_describe,
    .prepare = command_prepare,
    .settle = NULL,
    .place = NULL,
    .call = command_call,
    .check = command_check,
    .forget = command_forget,
    .profile = NULL,
    .release = command_release,
    .close = command_close,
    .calibrate = kt_command_calibrate_spec,
    .metric = command_metric,
};

double kt_command_calibrate(const kt_spec *spec, const kt_point *point, int arm, double *failed_s)
{
    kt_point_result out;
    crun *r = calloc(1, sizeof(*r));
    double seconds = NAN;
    memset(&out, 0, sizeof(out));
    out.point = *point;
    out.n_cands = spec->n_candidates;
    out.cands = calloc(out.n_cands ? out.n_cands : 1, sizeof(*out.cands));
    *failed_s = 0;
    kt_arm_env env = {spec, point, NULL, &out, kt_point_seed(spec, point),
                      NULL, NULL,  NULL, NULL, NULL};
    if (r && out.cands && start(r, &env) == 0) {
        call_result cr;
        memset(&cr, 0, sizeof(cr)); /* a failing setup makes no call */
        double t0 = now_s(), t = NAN;
        int ok = setup_or_teardown(r, arm, 0) == 0 &&
                 (t = now_s(), kt_command_call(r, arm, 0, 0, &cr) == 0);
        if (ok) {
            seconds = now_s() - t;
        } else { /* a failing arm stops at its first failure: the plan prices that, once */
            *failed_s = now_s() - t0;
            fprintf(stderr,
                    "warning: the calibration call of '%s' at %s failed after %.3g s (priced as "
                    "one such failure per point): %s\n",
                    arm_name(r, arm), point->id, *failed_s,
                    cr.why[0] ? cr.why : "its setup failed");
        }
        unlink(cr.output);
        setup_or_teardown(r, arm, 1);
        rmdir(r->workdir);
    }
    free(out.cands); /* no pairs: kt_point_result_free is the engine's */
    free(r);
    return seconds;
}

int kt_command_calibrate_spec(const kt_spec *spec, const kt_point *point)
{
    int measured = 0;
    for (size_t arm = 0; spec->command && arm <= spec->n_candidates; arm++) {
        double failed_s;
        double s = kt_command_calibrate(spec, point, (int)arm, &failed_s);
        spec->command->call_seconds[arm] = isnan(s) ? 0 : s;
        spec->command->call_failed[arm] = isnan(s);
        spec->command->fail_seconds[arm] = isnan(s) ? failed_s : 0;
        measured += !isnan(s);
    }
    return measured;
}
