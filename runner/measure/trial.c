/* trial.c - the trial engine: one matrix point of any kind of arm (arm/arm.h). Each arm is
 * prepared and checked, warmed up, then the pairs run with looks, then the verdicts; the kind
 * of arm does the calls and their checks, the engine their order, the seeded coins and the
 * statistics. */
#include "measure/trial.h"

#include "decide/sequential.h"
#include "measure/calibrate_bandwidth.h"
#include "measure/worker.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One point's trial: its kind of arm and the kind's arms, the engine's coins. */
typedef struct trial {
    const kt_arm_kind *kind;
    kt_arm_set *set;
    const kt_spec *spec;
    const kt_point *point;
    const kt_trial_hooks *hooks;
    kt_point_result *out;
    int n_sets;
    kt_rng order_rng;     /* which arm of a pair runs first; the candidates' order */
    kt_rng placement_rng; /* which prepared states a pair runs on (kinds with placements) */
} trial;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void step(const trial *t, int arm, const char *what)
{
    if (t->hooks && t->hooks->on_step)
        t->hooks->on_step(t->hooks->ctx, arm, what);
}

static int interrupted(const trial *t)
{
    return t->hooks && t->hooks->interrupted && *t->hooks->interrupted;
}

static void place(trial *t, int arm, int set, int index)
{
    if (t->kind->place)
        t->kind->place(t->set, arm, set, index);
}

static void forget(trial *t, int arm)
{
    if (t->kind->forget)
        t->kind->forget(t->set, arm);
}

/* The most prepared states either arm of candidate k's pairs has. */
static int placements(const trial *t, int k)
{
    int a = t->out->baseline.placements, b = t->out->cands[k].arm.placements;
    return a > b ? a : b;
}

/* One call of 'arm' and, for kinds that check each call, its check; what it left dropped. */
static int call_checked(trial *t, int arm, const kt_arm_at *at, kt_arm_sample *s)
{
    int rc = t->kind->call(t->set, arm, at, s);
    if (rc == 0 && t->kind->checks_each_call)
        rc = t->kind->check(t->set, arm, at, -1);
    forget(t, arm);
    return rc;
}

static int warmup(trial *t, int arm)
{
    step(t, arm, "warmup");
    for (int w = 0; w < t->spec->warmup; w++) {
        kt_arm_at at = {w % t->n_sets, -(w + 1), -1, 0, 0};
        kt_arm_sample s;
        place(t, arm, at.set, w / t->n_sets);
        int rc = call_checked(t, arm, &at, &s);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int candidate_first(trial *t, int rep)
{
    switch (t->spec->order) {
    case KT_ORDER_ALTERNATE: /* ABBA: base-cand, cand-base, cand-base, base-cand */
        return rep % 4 == 1 || rep % 4 == 2;
    default: /* random; grouped runs never form pairs here */
        return (int)(kt_rng_next(&t->order_rng) >> 63);
    }
}

/* One pair for candidate 'k' (0-based): the two calls in the coin's order, each checked right
 * after it or both after the pair (kt_arm_kind.checks_each_call). Returns 0, -1 when the
 * candidate failed, -2 when the point cannot go on. */
static int run_pair(trial *t, int k, int rep)
{
    kt_candidate_result *c = &t->out->cands[k];
    const kt_arm_kind *kind = t->kind;
    int set = rep % t->n_sets, first = candidate_first(t, rep), rc = 0;
    kt_arm_sample s[2]; /* the baseline's, the candidate's */
    memset(s, 0, sizeof(s));
    if (c->arm.failed) /* by an input-writer check during another arm's call */
        return t->out->error[0] ? -2 : -1;
    int most = placements(t, k);
    int u = most > 1 ? (int)(kt_rng_next(&t->placement_rng) % (uint64_t)most) : 0;
    place(t, 0, set, u);
    place(t, k + 1, set, u);
    kt_arm_at at = {set, rep, 0, 1, 0};
    /* each call names its arm first, so a crash is blamed on the right one */
    for (int i = 0; i < 2 && rc == 0; i++) {
        int arm = (i == 0) == !first ? 0 : k + 1;
        at.position = i;
        at.pair_with = arm ? 1 : k + 2;
        step(t, arm, "repetitions");
        rc = kind->call(t->set, arm, &at, &s[arm ? 1 : 0]);
        if (rc == 0 && kind->checks_each_call)
            rc = kind->check(t->set, arm, &at, -1);
    }
    if (rc == 0 && !kind->checks_each_call) {
        /* against the baseline, the baseline is its own reference (the kind's, if it has one) */
        rc = kind->check(t->set, 0, &at, -1);
        if (rc == 0)
            rc = kind->check(t->set, k + 1, &at, 0);
    }
    if (rc == 0) {
        kt_pair *p = &c->pairs[c->n_pairs++];
        p->rep = rep;
        p->input_set = set;
        p->placement = u;
        p->candidate_first = s[1].taken_first ? s[1].taken_first == 2 : first;
        p->base_ns = s[0].t.time_ns;
        p->cand_ns = s[1].t.time_ns;
        p->base_noise = s[0].t.noise;
        p->cand_noise = s[1].t.noise;
        p->throttled = s[0].t.throttled || s[1].t.throttled;
    }
    forget(t, 0);
    forget(t, k + 1);
    return rc < 0 ? (t->out->error[0] ? -2 : -1) : 0;
}

/* Grouped design (comparison only): every baseline call, then every call of each candidate;
 * pairs are formed by repetition index; no early stopping. */
static void run_grouped(trial *t, int reps)
{
    size_t K = t->out->n_cands;
    double *base = calloc((size_t)reps, sizeof(double));
    double *noise = calloc((size_t)reps, sizeof(double));
    if (!base || !noise) {
        snprintf(t->out->error, sizeof(t->out->error), "out of memory");
        goto done;
    }
    kt_arm_sample s;
    step(t, 0, "repetitions");
    for (int rep = 0; rep < reps && !interrupted(t); rep++) {
        kt_arm_at at = {rep % t->n_sets, rep, -1, 1, 0};
        place(t, 0, at.set, rep / t->n_sets);
        if (call_checked(t, 0, &at, &s) < 0)
            goto done;
        base[rep] = s.t.time_ns;
        noise[rep] = s.t.noise;
    }
    for (size_t k = 0; k < K; k++) {
        kt_candidate_result *c = &t->out->cands[k];
        if (c->arm.failed)
            continue;
        step(t, (int)k + 1, "repetitions");
        for (int rep = 0; rep < reps && !interrupted(t); rep++) {
            kt_arm_at at = {rep % t->n_sets, rep, -1, 1, 0};
            place(t, (int)k + 1, at.set, rep / t->n_sets);
            if (call_checked(t, (int)k + 1, &at, &s) < 0) {
                if (t->out->error[0]) /* the baseline, found writing into its inputs */
                    goto done;
                break;
            }
            kt_pair *p = &c->pairs[c->n_pairs++];
            p->rep = rep;
            p->input_set = at.set;
            int most = placements(t, (int)k);
            p->placement = most > 1 ? rep / t->n_sets % most : 0; /* as place() ran */
            p->base_ns = base[rep];
            p->base_noise = noise[rep];
            p->cand_ns = s.t.time_ns;
            p->cand_noise = s.t.noise;
        }
    }
done:
    free(base);
    free(noise);
}

static int pair_of(void *ctx, int k, int rep)
{
    return run_pair(ctx, k, rep);
}

static int interrupted_of(void *ctx)
{
    return interrupted(ctx);
}

static void progress_of(void *ctx, int reps, int max_reps)
{
    trial *t = ctx;
    if (t->hooks && t->hooks->on_progress)
        t->hooks->on_progress(t->hooks->ctx, reps, max_reps);
}

static void apply_skips(trial *t)
{
    const kt_trial_hooks *h = t->hooks;
    if (!h || !h->skip)
        return;
    for (size_t k = 0; k < t->out->n_cands; k++) {
        if (!h->skip[k])
            continue;
        kt_arm_result *res = &t->out->cands[k].arm;
        const kt_arm *a = &t->spec->candidates[k];
        snprintf(res->name, sizeof(res->name), "%s", a->name);
        snprintf(res->variant, sizeof(res->variant), "%s", a->variant->name);
        res->failed = 1;
        res->repeatable = -1; /* never checked: it is not run again */
        snprintf(res->failure, sizeof(res->failure), "%s",
                 h->skip_reason ? h->skip_reason[k] : "skipped");
    }
}

/* The verdicts after the pairs: a candidate that stopped at a look keeps that look's verdict;
 * any other is judged at the last planned look its pairs reached, never at the count it
 * stopped at. */
static void judge(trial *t, const kt_design *d, double alpha, int grouped)
{
    kt_point_result *out = t->out;
    for (size_t k = 0; k < out->n_cands; k++) {
        kt_candidate_result *c = &out->cands[k];
        kt_candidate_judge(c, &out->baseline, t->spec, t->point, d, alpha, grouped);
        if ((int)c->n_pairs > out->repetitions)
            out->repetitions = (int)c->n_pairs;
    }
}

void kt_candidate_judge(kt_candidate_result *c, const kt_arm_result *baseline, const kt_spec *spec,
                        const kt_point *point, const kt_design *d, double alpha, int grouped)
{
    int at = c->decided_at >= 0 && c->verdict != KT_VERDICT_INCONCLUSIVE
                 ? c->decided_at
                 : kt_design_last_look(d, (int)c->n_pairs);
    if (c->arm.failed)
        kt_candidate_evaluate(c, baseline, spec, point, 1.0 - alpha);
    else
        kt_candidate_judge_at_look(c, baseline, spec, point, d, at);
    if (grouped && !spec->allow_grouped_verdicts)
        kt_candidate_withhold_grouped(c, point->id);
    if (c->looks == 0 && !c->arm.failed) /* a failed arm took the looks it took */
        c->looks = d->n_looks;
}

/* Prepares every arm (the baseline first: without it nothing is measured), then what the kind
 * does once they all are (placements). Returns 0, or -2 with out->error set. */
static int prepare_arms(trial *t)
{
    kt_point_result *out = t->out;
    t->kind->describe(t->set, 0);
    t->kind->prepare(t->set, 0);
    if (out->error[0])
        return -2;
    apply_skips(t);
    for (size_t k = 0; k < out->n_cands && !out->error[0]; k++) {
        if (out->cands[k].arm.failed)
            continue;
        t->kind->describe(t->set, (int)k + 1);
        t->kind->prepare(t->set, (int)k + 1);
    }
    if (!out->error[0] && t->kind->settle)
        t->kind->settle(t->set);
    return out->error[0] ? -2 : 0;
}

/* The warmup calls of every arm still running; -2 when the point cannot go on. */
static int warm_arms(trial *t)
{
    if (warmup(t, 0) < 0)
        return -2;
    for (size_t k = 0; k < t->out->n_cands; k++)
        if (!t->out->cands[k].arm.failed && warmup(t, (int)k + 1) < 0 && t->out->error[0])
            return -2;
    return 0;
}

int kt_trial_run_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                       kt_backend *backend, const kt_trial_hooks *hooks)
{
    return kt_trial_run_point_keeping(out, spec, point, backend, hooks, NULL);
}

int kt_trial_run_point_keeping(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                               kt_backend *backend, const kt_trial_hooks *hooks,
                               kt_arm_keep_fn keep)
{
    double start = now_s();
    const kt_arm_kind *kind = kt_arm_kind_of(spec);
    memset(out, 0, sizeof(*out));
    out->point = *point;
    out->timer_tick_ns = kind->tick_ns;
    out->n_cands = spec->n_candidates;
    out->cands = calloc(spec->n_candidates ? spec->n_candidates : 1, sizeof(*out->cands));
    if (!out->cands)
        return kt_error_code(KT_ENOMEM, "out of memory");
    int max_reps = spec->max_repetitions;
    if (hooks && hooks->quick && max_reps > KT_QUICK_MAX_REPETITIONS)
        max_reps = KT_QUICK_MAX_REPETITIONS;
    int min_reps = spec->min_repetitions < max_reps ? spec->min_repetitions : max_reps;
    for (size_t k = 0; k < out->n_cands; k++) {
        out->cands[k].decided_at = -1;
        out->cands[k].pairs = calloc((size_t)max_reps, sizeof(kt_pair));
        if (!out->cands[k].pairs)
            return kt_error_code(KT_ENOMEM, "out of memory");
    }
    trial t;
    memset(&t, 0, sizeof(t));
    t.kind = kind;
    t.spec = spec;
    t.point = point;
    t.hooks = hooks;
    t.out = out;
    uint64_t seed = kt_point_seed(spec, point);
    kt_rng_seed(&t.order_rng, kt_seed_mix(seed, 0x6f72646572ull));
    kt_rng_seed(&t.placement_rng, kt_seed_mix(seed, 0x706c616365ull));
    const char *no_roofline = NULL;
    kt_arm_env env = {spec,
                      point,
                      backend,
                      out,
                      seed,
                      hooks ? hooks->on_step : NULL,
                      keep,
                      hooks ? hooks->ctx : NULL,
                      hooks ? hooks->interrupted : NULL,
                      kind->needs_backend ? kt_read_bandwidth_for(spec->backend, &no_roofline)
                                          : NULL};
    int rc = kind->open(&t.set, &t.n_sets, &env);
    if (rc < 0) {
        out->elapsed_s = now_s() - start;
        return rc;
    }
    int n_arms = 1 + (int)out->n_cands;
    int grouped = kind->grouped && spec->order == KT_ORDER_GROUPED;
    kt_design design;
    double alpha = kt_design_point_alpha(spec);
    if (out->error[0] || prepare_arms(&t) < 0)
        goto finish;
    if (kind->clock == KT_ARM_CLOCK_BACKEND)
        out->timer_tick_ns = kt_backend_timer_tick_ns(backend); /* after prepare set sim's */
    if (warm_arms(&t) < 0)
        goto finish;
    kt_spending spending = hooks ? hooks->spending : KT_SPEND_DEFAULT;
    if (kt_design_plan(&design, min_reps, max_reps, alpha, spending) < 0) {
        snprintf(out->error, sizeof(out->error), "%s", kt_error_last());
        goto finish;
    }
    const char *stop;
    if (grouped) { /* one look, at the end */
        design.n_looks = 1;
        design.looks[0] = max_reps;
        design.decisive[0] = 1;
        design.confidence[0] = 1.0 - alpha;
        run_grouped(&t, max_reps);
        stop = out->error[0] ? "failed" : "max_repetitions";
    } else {
        /* the time budget covers the timed pairs, not set-up and correctness checks */
        kt_pair_loop loop = {
            out,      spec,     point,          &design,
            min_reps, max_reps, now_s(),        kind->shuffles ? &t.order_rng : NULL,
            &t,       pair_of,  interrupted_of, progress_of};
        stop = kt_trial_pair_loop(&loop);
    }
    snprintf(out->stop_reason, sizeof(out->stop_reason), "%s", stop);
    /* after the timed pairs, before the verdicts (the energy gate reads it) */
    if (spec->profile && kind->profile && !(hooks && hooks->no_profile) && !interrupted(&t))
        kind->profile(t.set);
finish:
    /* before the verdicts: the memory gate reads a command's peak RSS, recorded at release */
    for (int arm = n_arms - 1; arm >= 0; arm--)
        kind->release(t.set, arm);
    if (out->error[0]) {
        snprintf(out->stop_reason, sizeof(out->stop_reason), "%s",
                 interrupted(&t) ? "interrupted" : "failed");
        kt_point_result_mark_unmeasured(out, spec, point);
    } else {
        judge(&t, &design, alpha, grouped);
    }
    kind->close(t.set);
    out->elapsed_s = now_s() - start;
    return KT_OK;
}

/* Judges candidate 'c' at decisive look 'at' of the design: the pairs after that look are
 * left out of the analysis (they were taken after the last planned look the point reached),
 * and no look at all means INCONCLUSIVE. */
void kt_candidate_judge_at_look(kt_candidate_result *c, const kt_arm_result *baseline,
                                const kt_spec *spec, const kt_point *point, const kt_design *d,
                                int at)
{
    if (at < 0) {
        int first = 0; /* the first look that may decide */
        while (first < d->n_looks - 1 && !d->decisive[first])
            first++;
        kt_candidate_evaluate(c, baseline, spec, point, 1.0 - d->alpha);
        if (c->verdict != KT_VERDICT_REJECT || !c->n_reasons ||
            !kt_reason_is_quality(c->reason_codes[0])) {
            c->verdict = KT_VERDICT_INCONCLUSIVE;
            c->n_reasons = 0;
            kt_candidate_add_reason(c, KT_REASON_NO_LOOK,
                                    "stopped after %zu pairs, before the first planned look "
                                    "that may decide (%d pairs) at %s",
                                    c->n_pairs, d->looks[first], point->id);
        }
        return;
    }
    size_t taken = c->n_pairs;
    if ((size_t)d->looks[at] < taken)
        c->n_pairs = (size_t)d->looks[at];
    kt_candidate_evaluate(c, baseline, spec, point, d->confidence[at]);
    c->looks = at + 1;
    c->pairs_unused = (int)(taken - c->n_pairs);
}

const char *kt_trial_pair_loop(const kt_pair_loop *l)
{
    size_t K = l->out->n_cands;
    int active[KT_LIMIT_CANDIDATES] = {0}, order[KT_LIMIT_CANDIDATES], look = 0;
    for (size_t k = 0; k < K && k < KT_LIMIT_CANDIDATES; k++)
        active[k] = !l->out->cands[k].arm.failed;
    for (int rep = 0; rep < l->max_reps; rep++) {
        int n_active = 0;
        for (size_t k = 0; k < K && k < KT_LIMIT_CANDIDATES; k++)
            if (active[k])
                order[n_active++] = (int)k;
        if (n_active == 0)
            return "decided";
        for (int i = n_active - 1; l->order_rng && i > 0; i--) { /* seeded shuffle */
            int j = (int)(kt_rng_next(l->order_rng) % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < n_active; i++) {
            int rc = l->pair(l->ctx, order[i], rep);
            if (rc == -2)
                return "failed";
            if (rc < 0)
                active[order[i]] = 0;
        }
        /* a look due now is taken even when interrupted: a point it decides is finished */
        if (look < l->design->n_looks && rep + 1 == l->design->looks[look]) {
            kt_trial_look(l->out, active, l->design, look++, l->spec, l->point, rep + 1,
                          l->max_reps);
            if (l->progress)
                l->progress(l->ctx, rep + 1, l->max_reps);
        }
        if (l->interrupted(l->ctx)) {
            int any_active = 0;
            for (size_t k = 0; k < K && k < KT_LIMIT_CANDIDATES; k++)
                any_active |= active[k];
            return any_active ? "interrupted" : "decided";
        }
        if (rep + 1 >= l->min_reps && now_s() - l->start_s > l->spec->max_seconds_per_point)
            return "max_seconds";
    }
    return "max_repetitions";
}

void kt_trial_look(kt_point_result *out, int *active, const kt_design *d, int at,
                   const kt_spec *spec, const kt_point *point, int pairs, int max_reps)
{
    for (size_t k = 0; k < out->n_cands && d->decisive[at]; k++) {
        kt_candidate_result *c = &out->cands[k];
        if (!active[k])
            continue;
        kt_candidate_evaluate(c, &out->baseline, spec, point, d->confidence[at]);
        c->looks = at + 1;
        c->decided_at = at;
        /* A suspected order effect postpones stopping: the verdict then rests on every pair,
         * and the order check gets the power to confirm or clear it. */
        int suspect = c->order_p < KT_ORDER_SUSPECT_P;
        /* under geomean a point never stops on its own verdict: an estimate kept because it
         * looked extreme would bias the mean over the points */
        int may_stop = spec->aggregate != KT_AGGREGATE_GEOMEAN;
        if (c->verdict != KT_VERDICT_INCONCLUSIVE && !suspect && may_stop) {
            active[k] = 0;
            c->stopped_early = pairs < max_reps;
        }
    }
}

void kt_point_result_mark_unmeasured(kt_point_result *out, const kt_spec *spec,
                                     const kt_point *point)
{
    for (size_t k = 0; k < out->n_cands; k++) {
        kt_candidate_result *c = &out->cands[k];
        /* named even when never prepared: a failed baseline stops before them */
        snprintf(c->arm.name, sizeof(c->arm.name), "%s", spec->candidates[k].name);
        snprintf(c->arm.variant, sizeof(c->arm.variant), "%s", spec->candidates[k].variant->name);
        c->verdict = KT_VERDICT_INCONCLUSIVE;
        c->n_reasons = 1;
        c->reason_codes[0] = KT_REASON_NOT_MEASURED;
        snprintf(c->reasons[0], sizeof(c->reasons[0]), "not measured: %s at %s", out->error,
                 point->id);
    }
}
