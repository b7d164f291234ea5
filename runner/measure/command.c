/* command.c - command trials: setup, warmup, paired calls with looks, teardown, for one point
 * of op 'command', and what a failed call or a differing output means for its arm. One call
 * itself (placeholders, spawn, sample, costs) is in command_call.c. */
#include "measure/command_run.h"
#include "measure/command_output.h"
#include "measure/worker.h"

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

static int interrupted(const crun *r)
{
    return r->hooks && r->hooks->interrupted && *r->hooks->interrupted;
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
    if (!r->hooks || !r->hooks->keep || r->cs->format == KT_OUTPUT_NONE ||
        (c->kept[task] && !failing) || access(path, R_OK) != 0)
        return;
    char name[160];
    snprintf(name, sizeof(name), "%s%s.%s", r->cs->tasks[task].name, failing ? ".failing" : "",
             kt_output_extension(r->cs->format));
    if (r->hooks->keep(r->hooks->ctx, r->point->id, arm_name(r, arm), name, path, NULL) == 0)
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

static int warmup(crun *r, int arm)
{
    for (int w = 0; w < r->spec->warmup; w++) {
        call_result cr;
        int task = w % (int)r->cs->n_tasks;
        if (kt_command_call(r, arm, task, -(w + 1), &cr) < 0) {
            char what[64];
            snprintf(what, sizeof(what), "warmup call %d: ", w + 1);
            arm_failed(r, arm, &cr, what);
            return -1;
        }
        unlink(cr.output);
    }
    return 0;
}

static int candidate_first(crun *r, int rep)
{
    if (r->spec->order == KT_ORDER_ALTERNATE) /* ABBA */
        return rep % 4 == 1 || rep % 4 == 2;
    return (int)(kt_rng_next(&r->order_rng) >> 63);
}

/* One pair for candidate k (arm k + 1). Returns 0, -1 when the candidate failed, -2 when the
 * baseline did (out->error set). */
static int run_pair(crun *r, int k, int rep)
{
    kt_candidate_result *c = &r->out->cands[k];
    int task = rep % (int)r->cs->n_tasks, first = candidate_first(r, rep), rc = 0;
    call_result res[2];
    memset(res, 0, sizeof(res)); /* a failing first call leaves the second unmade */
    for (int i = 0; i < 2; i++) {
        int arm = (i == 0) == !first ? 0 : k + 1;
        if (kt_command_call(r, arm, task, rep, &res[arm ? 1 : 0]) < 0) {
            char what[128];
            snprintf(what, sizeof(what), "repetition %d, task '%s': ", rep,
                     r->cs->tasks[task].name);
            rc = arm_failed(r, arm, &res[arm ? 1 : 0], what);
            goto done;
        }
    }
    /* against the baseline, the baseline is its own reference (its numerics stay exact) */
    if (r->cs->compare_expect && check_output(r, 0, task, rep, res[0].output, NULL) == -2) {
        rc = -2;
        goto done;
    }
    rc = check_output(r, k + 1, task, rep, res[1].output, res[0].output);
    if (rc < 0)
        goto done;
    keep_output(r, 0, task, res[0].output, 0);
    keep_output(r, k + 1, task, res[1].output, 0);
    kt_pair *p = &c->pairs[c->n_pairs++];
    p->rep = rep;
    p->input_set = task;
    p->candidate_first = first;
    p->base_ns = res[0].sample;
    p->cand_ns = res[1].sample;
done:
    unlink(res[0].output);
    unlink(res[1].output);
    return rc;
}

static int pair_of(void *ctx, int k, int rep)
{
    int rc = run_pair(ctx, k, rep);
    return rc == -2 ? -2 : rc < 0 ? -1 : 0;
}

static int interrupted_of(void *ctx)
{
    return interrupted(ctx);
}

static void progress_of(void *ctx, int reps, int max_reps)
{
    crun *r = ctx;
    if (r->hooks && r->hooks->on_progress)
        r->hooks->on_progress(r->hooks->ctx, reps, max_reps);
}

static int start(crun *r, kt_point_result *out, const kt_spec *spec, const kt_point *point)
{
    memset(out, 0, sizeof(*out));
    out->point = *point;
    out->timer_tick_ns = 1;
    out->n_cands = spec->n_candidates;
    out->cands = calloc(out->n_cands ? out->n_cands : 1, sizeof(*out->cands));
    if (!out->cands)
        return kt_error_code(KT_ENOMEM, "out of memory");
    int max_reps = spec->max_repetitions;
    if (r->hooks && r->hooks->quick && max_reps > KT_QUICK_MAX_REPETITIONS)
        max_reps = KT_QUICK_MAX_REPETITIONS;
    for (int arm = 0; arm <= (int)out->n_cands; arm++) {
        kt_arm_result *a = arm_result(r, arm);
        snprintf(a->name, sizeof(a->name), "%s", arm_name(r, arm));
        snprintf(a->variant, sizeof(a->variant), "exec");
        a->n_sets = (int)r->cs->n_tasks;
        a->repeatable = -1;
        for (int s = 0; s < a->n_sets; s++)
            a->numerics[s].cosine = r->cs->format == KT_OUTPUT_NONE ? NAN : 1;
        if (r->cs->format == KT_OUTPUT_NONE)
            for (int s = 0; s < a->n_sets; s++)
                a->numerics[s].max_abs = a->numerics[s].max_rel = a->numerics[s].rel_l2 = NAN;
        if (arm > 0) {
            out->cands[arm - 1].decided_at = -1;
            out->cands[arm - 1].pairs = calloc((size_t)max_reps, sizeof(kt_pair));
            if (!out->cands[arm - 1].pairs)
                return kt_error_code(KT_ENOMEM, "out of memory");
        }
    }
    uint64_t seed = kt_point_seed(spec, point);
    kt_rng_seed(&r->order_rng, kt_seed_mix(seed, 0x6f72646572ull));
    snprintf(r->seed, sizeof(r->seed), "%llu", (unsigned long long)(seed >> 1));
    snprintf(r->batch, sizeof(r->batch), "%lld", (long long)point->batch_size);
    snprintf(r->context, sizeof(r->context), "%lld", (long long)point->context_length);
    for (int arm = 0; arm <= (int)out->n_cands; arm++)
        kt_command_identify_program(r, arm);
    const char *tmp = getenv("TMPDIR");
    snprintf(r->workdir, sizeof(r->workdir), "%s/ktrial-command-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(r->workdir))
        return kt_error_code(KT_EIO, "cannot create a folder under '%s' for outputs",
                             tmp && *tmp ? tmp : "/tmp");
    return KT_OK;
}

/* The verdicts after the pairs, at the last look each candidate reached. */
static void judge(crun *r, const kt_design *d, double alpha)
{
    for (size_t k = 0; k < r->out->n_cands; k++) {
        kt_candidate_result *c = &r->out->cands[k];
        int at = c->decided_at >= 0 && c->verdict != KT_VERDICT_INCONCLUSIVE
                     ? c->decided_at
                     : kt_design_last_look(d, (int)c->n_pairs);
        if (c->arm.failed)
            kt_candidate_evaluate(c, &r->out->baseline, r->spec, r->point, 1.0 - alpha);
        else
            kt_candidate_judge_at_look(c, &r->out->baseline, r->spec, r->point, d, at);
        if (c->looks == 0 && !c->arm.failed) /* a failed arm took the looks it took */
            c->looks = d->n_looks;
        if ((int)c->n_pairs > r->out->repetitions)
            r->out->repetitions = (int)c->n_pairs;
    }
}

static void not_measured(crun *r)
{
    snprintf(r->out->stop_reason, sizeof(r->out->stop_reason), "%s",
             interrupted(r) ? "interrupted" : "failed");
    kt_point_result_mark_unmeasured(r->out, r->spec, r->point);
}

int kt_command_run_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                         const kt_command_hooks *hooks)
{
    double t0 = now_s();
    crun *r = calloc(1, sizeof(*r));
    if (!r)
        return kt_error_code(KT_ENOMEM, "out of memory");
    r->spec = spec;
    r->cs = spec->command;
    r->point = point;
    r->out = out;
    r->hooks = hooks;
    int rc = start(r, out, spec, point), n_arms = 1 + (int)spec->n_candidates, set_up = 0;
    int paired = 0;
    kt_design design;
    double alpha = kt_design_point_alpha(spec);
    if (rc < 0)
        goto done;
    for (; set_up < n_arms && !out->error[0]; set_up++)
        setup_or_teardown(r, set_up, 0);
    if (out->error[0] || warmup(r, 0) < 0)
        goto finish;
    for (int arm = 1; arm < n_arms; arm++)
        if (!arm_result(r, arm)->failed)
            warmup(r, arm);
    int max_reps = spec->max_repetitions;
    if (hooks && hooks->quick && max_reps > KT_QUICK_MAX_REPETITIONS)
        max_reps = KT_QUICK_MAX_REPETITIONS;
    int min_reps = spec->min_repetitions < max_reps ? spec->min_repetitions : max_reps;
    if (kt_design_plan(&design, min_reps, max_reps, alpha, KT_SPEND_DEFAULT) < 0) {
        snprintf(out->error, sizeof(out->error), "%s", kt_error_last());
        goto finish;
    }
    /* candidates in index order: each command pair already randomises which arm runs first */
    kt_pair_loop loop = {r->out,  r->spec, r->point, &design, min_reps,       max_reps,
                         now_s(), NULL,    r,        pair_of, interrupted_of, progress_of};
    const char *stop = kt_trial_pair_loop(&loop);
    snprintf(out->stop_reason, sizeof(out->stop_reason), "%s", stop);
    paired = 1;
finish:
    for (int arm = set_up - 1; arm >= 0; arm--)
        setup_or_teardown(r, arm, 1);
    for (int arm = 0; arm < n_arms; arm++)
        kt_command_record_costs(r,
                                arm); /* before the verdicts: the memory gate reads the peak RSS */
    if (out->error[0])
        not_measured(r);
    else if (paired)
        judge(r, &design, alpha);
    rmdir(r->workdir);
done:
    out->elapsed_s = now_s() - t0;
    free(r);
    return rc;
}

double kt_command_calibrate(const kt_spec *spec, const kt_point *point, int arm, double *failed_s)
{
    kt_point_result out;
    crun *r = calloc(1, sizeof(*r));
    double seconds = NAN;
    if (!r)
        return NAN;
    r->spec = spec;
    r->cs = spec->command;
    r->point = point;
    r->out = &out;
    *failed_s = 0;
    if (start(r, &out, spec, point) == 0) {
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
    kt_point_result_free(&out);
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
