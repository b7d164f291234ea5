/* verdict.c - from measurements to KEEP / REJECT / INCONCLUSIVE, with reasons in words. */
#include "decide/verdict.h"
#include "decide/stats.h"
#include "decide/stats_internal.h"
#include "util/sanitize.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kt_candidate_add_reason(kt_candidate_result *c, kt_reason_code code, const char *fmt, ...)
{
    if (c->n_reasons >= (int)(sizeof(c->reasons) / sizeof(c->reasons[0])))
        return;
    c->reason_codes[c->n_reasons] = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reasons[c->n_reasons], sizeof(c->reasons[0]), fmt, ap);
    va_end(ap);
    kt_utf8_trim(c->reasons[c->n_reasons++]); /* a cut plugin message stays UTF-8 */
}

/* The figures of result.json that compare the candidate's outputs and memory with the
 * baseline's: NAN where either side has none (no output compared, no bytes counted), never
 * a 0 that reads as a perfect result. Returns the baseline's error as the ratio uses it. */
static double quality_figures(kt_candidate_result *c, const kt_arm_result *base,
                              const kt_spec *spec)
{
    /* The baseline's own error, floored at the storage type's unit roundoff, so a baseline
     * that happens to be exact does not make every candidate fail the ratio. */
    double base_err = fmax(kt_arm_worst_rel_l2(base), kt_dtype_unit_roundoff(spec->dtype));
    c->worst_rel_l2 = kt_arm_worst_rel_l2(&c->arm);
    c->error_ratio = c->worst_rel_l2 / base_err;
    c->memory_ratio = base->bytes > 0 && c->arm.bytes > 0 ? c->arm.bytes / base->bytes : NAN;
    return base_err;
}

/* Energy per call of an arm from its profiling pass: package + DRAM + GPU (each where its
 * meter reads), NAN without any meter. */
static double energy_per_call(const kt_arm_result *a)
{
    if (!a->profiled)
        return NAN;
    const kt_counter_values *v = &a->profile;
    double cpu = v->energy_unavailable[0]
                     ? NAN
                     : v->energy_j[0] + (isnan(v->energy_j[1]) ? 0 : v->energy_j[1]);
    double gpu = v->gpu.energy_tried && !v->gpu.energy_unavailable[0] ? v->gpu.energy_j : NAN;
    if (isnan(cpu) || isnan(gpu))
        return isnan(cpu) ? gpu : cpu;
    return cpu + gpu;
}

/* op service: thresholds.errors, latency.max_p99_ratio and throughput.min_ratio, on the figures
 * the service arm keeps up to date after every round (result/serving.h). A ratio gate rejects
 * when its whole interval lies beyond the limit. Returns how many were broken. */
static int check_service(kt_candidate_result *c, const kt_arm_result *base, const kt_spec *spec,
                         const char *id)
{
    const kt_serving *s = &c->arm.serving, *b = &base->serving;
    char v[32], l[32];
    int broken = 0;
    if (!s->present)
        return 0;
    if (!isnan(spec->max_error_rate) && s->error_rate > spec->max_error_rate) {
        kt_candidate_add_reason(
            c, KT_REASON_ERRORS,
            "%lld of %lld requests failed (%s): error rate %s above "
            "errors.max_rate %s at %s%s%.200s",
            s->errors, s->requests, s->error_kinds,
            kt_format_apart(v, sizeof(v), s->error_rate, spec->max_error_rate, 3, 0),
            kt_format_limit(l, sizeof(l), spec->max_error_rate, 0, 0), id,
            s->stderr_tail[0] ? "; server stderr: " : "", s->stderr_tail);
        broken++;
    }
    if (!isnan(spec->max_p99_ratio) && s->p99_ratio.low > spec->max_p99_ratio) {
        kt_candidate_add_reason(
            c, KT_REASON_P99,
            "p99 %.3g ms is %.3gx the baseline's %.3g ms [%s, %.3g], above "
            "latency.max_p99_ratio %s at %s",
            s->p99.value, s->p99_ratio.value, b->p99.value,
            kt_format_apart(v, sizeof(v), s->p99_ratio.low, spec->max_p99_ratio, 3, 0),
            s->p99_ratio.high, kt_format_limit(l, sizeof(l), spec->max_p99_ratio, 0, 0), id);
        broken++;
    }
    if (!isnan(spec->min_throughput_ratio) &&
        s->throughput_ratio.high < spec->min_throughput_ratio) {
        kt_candidate_add_reason(c, KT_REASON_THROUGHPUT,
                                "throughput %.3g requests/s is %.3gx the baseline's %.3g [%.3g, "
                                "%s], below throughput.min_ratio %s at %s",
                                s->requests_per_s, s->throughput_ratio.value, b->requests_per_s,
                                s->throughput_ratio.low,
                                kt_format_apart(v, sizeof(v), s->throughput_ratio.high,
                                                spec->min_throughput_ratio, 3, 0),
                                kt_format_limit(l, sizeof(l), spec->min_throughput_ratio, 0, 0),
                                id);
        broken++;
    }
    return broken;
}

/* thresholds.setup (the candidate's one-time costs) and thresholds.energy. */
static int check_setup_and_energy(kt_candidate_result *c, const kt_arm_result *base,
                                  const kt_spec *spec, const char *id)
{
    const kt_arm_result *a = &c->arm;
    int broken = 0;
    double own = a->bytes - a->variant_bytes;
    c->setup_memory_fraction = own > 0 ? a->variant_bytes / own : NAN;
    char v[32], l[32];
    if (!isnan(spec->max_setup_seconds) && a->prepare_ns * 1e-9 > spec->max_setup_seconds) {
        kt_candidate_add_reason(
            c, KT_REASON_SETUP,
            "setup (prepare) took %s s, above thresholds.setup.max_seconds %s at %s",
            kt_format_apart(v, sizeof(v), a->prepare_ns * 1e-9, spec->max_setup_seconds, 3, 0),
            kt_format_limit(l, sizeof(l), spec->max_setup_seconds, 0, 0), id);
        broken++;
    }
    if (!isnan(spec->max_setup_memory_ratio) &&
        c->setup_memory_fraction > spec->max_setup_memory_ratio) {
        kt_candidate_add_reason(
            c, KT_REASON_SETUP,
            "setup memory %.0f bytes is %sx the problem's inputs and outputs, above "
            "thresholds.setup.max_memory_ratio %s at %s",
            a->variant_bytes,
            kt_format_apart(v, sizeof(v), c->setup_memory_fraction, spec->max_setup_memory_ratio, 3,
                            0),
            kt_format_limit(l, sizeof(l), spec->max_setup_memory_ratio, 0, 0), id);
        broken++;
    }
    double eb = energy_per_call(base), ec = energy_per_call(a);
    c->energy_ratio = eb > 0 && !isnan(ec) ? ec / eb : NAN;
    if (!isnan(spec->max_energy_ratio) && c->energy_ratio > spec->max_energy_ratio) {
        kt_candidate_add_reason(
            c, KT_REASON_ENERGY,
            "energy %.3g J per call is %sx the baseline's, above thresholds.energy.max_ratio %s "
            "at %s",
            ec, kt_format_apart(v, sizeof(v), c->energy_ratio, spec->max_energy_ratio, 3, 0),
            kt_format_limit(l, sizeof(l), spec->max_energy_ratio, 0, 0), id);
        broken++;
    }
    return broken;
}

/* Tokens one call serves at 'point': the rows of the op's problem where it has rows (gemm,
 * swiglu_mlp, decoder_layer: the batch for decode, the new tokens for prefill: batch x context
 * for a GEMM, batch x chunk for a decoder layer), else the batch (x context for prefill). */
static double tokens_of(const kt_spec *spec, const kt_point *point)
{
    double batch = point->batch_size > 0 ? (double)point->batch_size : 1;
    kt_problem p;
    memset(&p, 0, sizeof(p));
    if (spec->op && spec->op->shape &&
        kt_op_shape(spec->op, &p, point, spec->dtype, spec->input_params) == KT_OK && p.m > 0)
        return (double)p.m;
    return point->phase == KT_PHASE_PREFILL && point->context_length > 0
               ? batch * (double)point->context_length
               : batch;
}

/* costs: tokens served per call (tokens_of, unless costs.tokens_per_call says), and the
 * dollars per million tokens of each arm at its median time per call. An arm with no median
 * (it failed before its pairs) has no price, and half a price is none: all stay NaN. */
static void costs(kt_candidate_result *c, const kt_spec *spec, const kt_point *point)
{
    c->tokens_per_call = c->usd_per_mtok_base = c->usd_per_mtok_cand = NAN;
    if (isnan(spec->usd_per_hour) || !isfinite(c->base_time.median) ||
        !isfinite(c->cand_time.median))
        return;
    double tokens = spec->tokens_per_call > 0 ? spec->tokens_per_call : tokens_of(spec, point);
    double usd_per_ns = spec->usd_per_hour / 3600e9;
    c->tokens_per_call = tokens;
    c->usd_per_mtok_base = usd_per_ns * c->base_time.median / tokens * 1e6;
    c->usd_per_mtok_cand = usd_per_ns * c->cand_time.median / tokens * 1e6;
}

/* Numerics and memory limits; returns the number of limits broken (each with a reason). */
static int check_limits(kt_candidate_result *c, const kt_arm_result *base, const kt_spec *spec,
                        const char *id)
{
    const kt_numerics_limits *lim = &spec->numerics;
    const kt_arm_result *a = &c->arm;
    int broken = 0;
    char v[32], l[32];
    for (int s = 0; s < a->n_sets; s++) {
        const kt_numerics *n = &a->numerics[s];
        if (!isnan(lim->max_rel_l2) && n->rel_l2 > lim->max_rel_l2) {
            kt_candidate_add_reason(c, KT_REASON_REL_L2,
                                    "rel_l2 %s above max_rel_l2 %s on input set %d at %s",
                                    kt_format_apart(v, sizeof(v), n->rel_l2, lim->max_rel_l2, 3, 0),
                                    kt_format_limit(l, sizeof(l), lim->max_rel_l2, 0, 0), s, id);
            broken++;
        }
        if (!isnan(lim->min_cosine) && n->cosine < lim->min_cosine) {
            kt_candidate_add_reason(c, KT_REASON_COSINE,
                                    "cosine %s below min_cosine %s on input set %d at %s",
                                    kt_format_apart(v, sizeof(v), n->cosine, lim->min_cosine, 6, 1),
                                    kt_format_limit(l, sizeof(l), lim->min_cosine, 6, 1), s, id);
            broken++;
        }
        if (!isnan(lim->max_abs) && n->max_abs > lim->max_abs) {
            kt_candidate_add_reason(c, KT_REASON_MAX_ABS,
                                    "max_abs %s above max_abs %s on input set %d at %s",
                                    kt_format_apart(v, sizeof(v), n->max_abs, lim->max_abs, 3, 0),
                                    kt_format_limit(l, sizeof(l), lim->max_abs, 0, 0), s, id);
            broken++;
        }
    }
    double base_err = quality_figures(c, base, spec);
    if (!isnan(lim->max_error_vs_baseline) && c->error_ratio > lim->max_error_vs_baseline) {
        /* the denominator is the baseline's error floored at the unit roundoff: say which */
        kt_candidate_add_reason(
            c, KT_REASON_ERROR_VS_BASELINE,
            "rel_l2 %.3g is %sx %s %.3g, above max_error_vs_baseline %s at %s", c->worst_rel_l2,
            kt_format_apart(v, sizeof(v), c->error_ratio, lim->max_error_vs_baseline, 3, 0),
            base_err > kt_arm_worst_rel_l2(base) ? "the storage type's unit roundoff"
                                                 : "the baseline's",
            base_err, kt_format_limit(l, sizeof(l), lim->max_error_vs_baseline, 0, 0), id);
        broken++;
    }
    if (lim->bitwise_repeatable && a->repeatable == 0) {
        kt_candidate_add_reason(c, KT_REASON_NOT_REPEATABLE,
                                "outputs differ between two runs on the same input at %s "
                                "(bitwise_repeatable)",
                                id);
        broken++;
    }
    if (!isnan(spec->max_memory_ratio) && c->memory_ratio > spec->max_memory_ratio) {
        kt_candidate_add_reason(
            c, KT_REASON_MEMORY,
            "memory %.0f bytes is %sx the baseline's %.0f, above max_ratio %s at %s", a->bytes,
            kt_format_apart(v, sizeof(v), c->memory_ratio, spec->max_memory_ratio, 3, 0),
            base->bytes, kt_format_limit(l, sizeof(l), spec->max_memory_ratio, 0, 0), id);
        broken++;
    }
    broken += check_setup_and_energy(c, base, spec, id);
    broken += check_service(c, base, spec, id);
    return broken;
}

/* The pairs' time summaries and how many were disturbed: a call the backend flagged
 * ('throttled'), or on the CPU any run-queue wait it recorded (its noise is 0 under the floor).
 * CUDA's noise is the SM clock itself, never 0: there only the flag says disturbed. */
static void describe_times(kt_candidate_result *c, const kt_spec *spec)
{
    int noise_is_clock = kt_backend_caps_of(spec->backend)->noise == KT_NOISE_LEVEL;
    size_t n = c->n_pairs;
    double *b = malloc((n ? n : 1) * sizeof(double));
    double *x = malloc((n ? n : 1) * sizeof(double));
    if (!b || !x) {
        free(b);
        free(x);
        return;
    }
    c->noisy_pairs = 0;
    for (size_t i = 0; i < n; i++) {
        b[i] = c->pairs[i].base_ns;
        x[i] = c->pairs[i].cand_ns;
        if (c->pairs[i].throttled ||
            (!noise_is_clock && (c->pairs[i].base_noise > 0 || c->pairs[i].cand_noise > 0)))
            c->noisy_pairs++;
    }
    kt_stats_summary(&c->base_time, b, n);
    kt_stats_summary(&c->cand_time, x, n);
    free(b);
    free(x);
}

/* Do pairs where the candidate ran first differ from the others? Mann-Whitney on d. */
static void order_effect(kt_candidate_result *c, const double *d)
{
    size_t n = c->n_pairs, n1 = 0, n0 = 0;
    double *first = malloc((n ? n : 1) * sizeof(double));
    double *second = malloc((n ? n : 1) * sizeof(double));
    c->order_p = NAN;
    c->order_shift = NAN;
    c->order_warning = 0;
    if (first && second) {
        for (size_t i = 0; i < n; i++) {
            if (c->pairs[i].candidate_first)
                first[n1++] = d[i];
            else
                second[n0++] = d[i];
        }
        if (n1 >= 3 && n0 >= 3) {
            kt_shift s;
            kt_stats_two_sample(&s, first, n1, second, n0, 0.95);
            c->order_p = s.p_value;
            c->order_shift = s.estimate;
            /* thousands of pairs detect a 0.2% cost of running second, which random order
             * cancels: only an effect of some size is worth a warning (docs/statistics.md) */
            c->order_warning =
                s.p_value < KT_ORDER_WARN_P && fabs(s.estimate) >= KT_ORDER_WARN_SHIFT;
        }
    }
    free(first);
    free(second);
}

/* The cluster of pair 'p': one input set and one placement ('by_placement'), or one set. */
static int cluster_of(const kt_pair *p, int by_placement)
{
    return by_placement ? p->input_set * KT_PLACEMENTS + p->placement : p->input_set;
}

/* Clusters of the 'by_placement' kind, at most KT_MAX_SETS * KT_PLACEMENTS. */
#define KT_MAX_CLUSTERS (KT_MAX_SETS * KT_PLACEMENTS)

/* d grouped by cluster into x (n_pairs long), in one pass to count and one to place: cluster
 * k's values are x[start[k]] .. x[start[k + 1] - 1]; 'start' holds n_keys + 1 offsets. Returns
 * n_keys, the clusters of the kind asked for. */
static int group_by_cluster(const kt_candidate_result *c, const double *d, int by_placement,
                            double *x, size_t *start)
{
    int n_keys = by_placement ? KT_MAX_CLUSTERS : KT_MAX_SETS;
    size_t at[KT_MAX_CLUSTERS];
    memset(start, 0, sizeof(*start) * (size_t)(n_keys + 1));
    for (size_t i = 0; i < c->n_pairs; i++)
        start[cluster_of(&c->pairs[i], by_placement) + 1]++;
    for (int k = 0; k < n_keys; k++)
        at[k] = start[k + 1] += start[k];
    for (size_t i = c->n_pairs; i-- > 0;) /* back to front: each cluster keeps pair order */
        x[--at[cluster_of(&c->pairs[i], by_placement)]] = d[i];
    return n_keys;
}

/* The clusters of a candidate's pairs at one look: one input set and one placement each where
 * the arms ran on more than one placement ('placed'), else one input set each. */
typedef struct cluster_fit {
    int placed;
    int found;                 /* clusters with an estimate (at least KT_CLUSTER_MIN_PAIRS) */
    int seen;                  /* clusters holding any pair */
    double y[KT_MAX_CLUSTERS]; /* their HL estimates of d */
    double v[KT_MAX_CLUSTERS]; /* squared standard errors, from intervals at KT_CLUSTER_LEVEL */
    int set[KT_MAX_CLUSTERS];  /* the input set of each */
} cluster_fit;

/* Fills 'f' from the pairs' log ratios 'd', grouped once by group_by_cluster into 'x' (n_pairs
 * long) and 'start' (KT_MAX_CLUSTERS + 1): by input set where the arms had one placement. */
static void fit_clusters(cluster_fit *f, const kt_candidate_result *c, const double *d, double *x,
                         size_t *start)
{
    f->placed = f->found = f->seen = 0;
    for (size_t i = 0; i < c->n_pairs; i++)
        f->placed |= c->pairs[i].placement > 0;
    int n_keys = group_by_cluster(c, d, f->placed, x, start);
    for (int key = 0; key < n_keys; key++) {
        size_t m = start[key + 1] - start[key];
        f->seen += m > 0;
        kt_shift s;
        if (m < KT_CLUSTER_MIN_PAIRS ||
            kt_stats_signed_rank(&s, x + start[key], m, KT_CLUSTER_LEVEL) < 0 ||
            !(s.achieved > 0 && s.achieved < 1) || !isfinite(s.ci_high - s.ci_low))
            continue;
        double se = (s.ci_high - s.ci_low) / (2 * kt_stats_normal_quantile(0.5 + s.achieved / 2));
        f->y[f->found] = s.estimate;
        f->v[f->found] = fmax(se * se, 1e-18); /* identical d (a fixed clock): finite weights */
        f->set[f->found++] = f->placed ? key / KT_PLACEMENTS : key;
    }
}

/* Do the input sets differ? Each set has its own prepared states of both arms, so on real
 * hardware a set's pairs carry where those states' buffers lie as well as the set's data.
 * Where each set has several placements, the sets' cluster estimates are compared (Mann-Whitney
 * on the HL of each cluster): the placements' spread alone then gives p < 0.01 in 1% of runs,
 * while the pairs themselves, thousands of them, would show it as a difference between sets.
 * With one state per set, the sets' pairs are compared (Mann-Whitney on d). Every pair of sets
 * is compared and the smallest p, times the number of pairs of sets (Bonferroni), is kept. */
static void set_effect(kt_candidate_result *c, const double *x_by_set, const size_t *start,
                       const cluster_fit *f)
{
    double ys[KT_MAX_SETS][KT_PLACEMENTS];
    size_t ny[KT_MAX_SETS] = {0};
    int n_sets = 0;
    c->set_p = c->set_shift = NAN;
    c->set_warning = 0;
    for (int i = 0; f->placed && i < f->found; i++)
        if (ny[f->set[i]] < KT_PLACEMENTS)
            ys[f->set[i]][ny[f->set[i]]++] = f->y[i];
    for (int k = 0; k < KT_MAX_SETS; k++)
        if (f->placed ? ny[k] > 0 : start[k + 1] > start[k])
            n_sets = k + 1;
    double tests = n_sets * (n_sets - 1) / 2.0;
    for (int s0 = 0; s0 < n_sets; s0++)
        for (int s1 = s0 + 1; s1 < n_sets; s1++) {
            const double *a = f->placed ? ys[s0] : x_by_set + start[s0];
            const double *b = f->placed ? ys[s1] : x_by_set + start[s1];
            size_t na = f->placed ? ny[s0] : start[s0 + 1] - start[s0];
            size_t nb = f->placed ? ny[s1] : start[s1 + 1] - start[s1];
            if (na < 3 || nb < 3)
                continue;
            kt_shift s;
            kt_stats_two_sample(&s, a, na, b, nb, 0.95);
            double p = fmin(1.0, s.p_value * tests);
            if (isnan(c->set_p) || p < c->set_p) {
                c->set_p = p;
                c->set_shift = s.estimate;
            }
        }
    c->set_warning = c->set_p < KT_ORDER_WARN_P;
}

/* The prepared state furthest from its arm's other states (kt_candidate_result.state_*): for
 * each arm, its times grouped by cluster into 'x' (n_pairs long); each state's median against
 * the median of its set's state medians. Only where the arms ran on several placements (a
 * state is then one cluster). */
static void state_outlier(kt_candidate_result *c, const cluster_fit *f, double *x)
{
    size_t n = c->n_pairs, start[KT_MAX_CLUSTERS + 1];
    double *t = malloc((n ? n : 1) * sizeof(double));
    c->state_arm = c->state_set = c->state_placement = 0;
    c->state_ratio = NAN;
    c->state_warning = 0;
    for (int arm = 0; t && f->placed && arm < 2; arm++) {
        for (size_t i = 0; i < n; i++)
            t[i] = arm ? c->pairs[i].cand_ns : c->pairs[i].base_ns;
        group_by_cluster(c, t, 1, x, start);
        for (int set = 0; set < KT_MAX_SETS; set++) {
            double med[KT_PLACEMENTS], sorted[KT_PLACEMENTS];
            int which[KT_PLACEMENTS], m = 0;
            for (int pl = 0; pl < KT_PLACEMENTS; pl++) {
                size_t a = start[set * KT_PLACEMENTS + pl], b = start[set * KT_PLACEMENTS + pl + 1];
                if (b - a < KT_CLUSTER_MIN_PAIRS)
                    continue;
                qsort(x + a, b - a, sizeof(double), kt_stats_cmp_double);
                which[m] = pl;
                sorted[m] = med[m] = kt_stats_quantile(x + a, b - a, 0.5);
                m++;
            }
            if (m < 3)
                continue;
            qsort(sorted, (size_t)m, sizeof(double), kt_stats_cmp_double);
            double ref = kt_stats_quantile(sorted, (size_t)m, 0.5);
            for (int k = 0; k < m; k++) {
                double r = med[k] / ref;
                if (!(ref > 0) ||
                    (isfinite(c->state_ratio) && fabs(log(r)) <= fabs(log(c->state_ratio))))
                    continue;
                c->state_arm = arm;
                c->state_set = set;
                c->state_placement = which[k];
                c->state_ratio = r;
            }
        }
    }
    c->state_warning =
        c->state_ratio > KT_STATE_WARN_RATIO || c->state_ratio < 1 / KT_STATE_WARN_RATIO;
    free(t);
}

/* Counts the spread between clusters of pairs into the interval of c->shift (log units). A
 * cluster is the pairs of one input set and one placement: both arms ran there on the same two
 * prepared states, and on real hardware where those states' buffers lie moves an arm's time by
 * a fixed amount for as long as they lie there (docs/statistics.md, "Placement"), which the
 * pairs' own interval cannot see. Each cluster's HL estimate y_i, with a standard error from
 * its own interval, gives DerSimonian and Laird's tau^2; each side of the interval then grows
 * to sqrt(side^2 + z^2 tau^2 / C) (C clusters, z at the interval's confidence), the standard
 * error of a mean over C clusters that each carry a random effect of variance tau^2. When the
 * clusters agree, tau^2 is 0 and the interval is the pairs' own. Where the arms have one
 * placement (a costly prepare), the clusters are the input sets. Fewer than two clusters with
 * enough pairs while the pairs span more than one: no interval yet (no decision at this look),
 * so an early look cannot decide on the states it happened to draw first. Returns the clusters
 * the pairs span when it withholds the interval, else 0. */
static int placement_spread(kt_candidate_result *c, const cluster_fit *f, double confidence)
{
    c->placement_tau2 = NAN;
    c->placement_clusters = 0;
    if (f->found >= 2) {
        double tau2 = kt_stats_dl_tau2(f->y, f->v, (size_t)f->found);
        c->placement_tau2 = tau2;
        c->placement_clusters = f->found;
        /* the interval and p of the same model: p < 1 - confidence exactly when the interval
         * leaves out 1 */
        kt_stats_widen(&c->shift, tau2 / f->found, confidence);
    } else if (f->seen > 1) {
        c->shift.ci_low = -INFINITY;
        c->shift.ci_high = INFINITY;
        c->shift.p_value = 1; /* no interval yet: nothing rules out 1 */
        return f->seen;
    }
    return 0;
}

void kt_candidate_evaluate(kt_candidate_result *c, const kt_arm_result *baseline,
                           const kt_spec *spec, const kt_point *point, double confidence)
{
    const char *id = point->id;
    c->n_reasons = 0;
    c->confidence_used = confidence;
    c->speedup = c->ci_low = c->ci_high = NAN;
    memset(&c->shift, 0, sizeof(c->shift));
    describe_times(c, spec);
    costs(c, spec, point);
    c->energy_ratio = c->setup_memory_fraction = NAN;

    if (c->arm.failed) { /* nothing of its pairs is a figure: NAN, not the 0 of a fresh result */
        c->shift.p_value = c->shift.achieved = NAN;
        c->order_p = c->order_shift = NAN;
        c->order_warning = 0;
        c->set_p = c->set_shift = NAN;
        c->set_warning = 0;
        c->placement_tau2 = NAN;
        c->placement_clusters = 0;
        c->state_ratio = NAN;
        c->state_warning = 0;
        quality_figures(c, baseline, spec);
        c->verdict = KT_VERDICT_REJECT;
        kt_candidate_add_reason(c, c->arm.failure_code ? c->arm.failure_code : KT_REASON_FAILED,
                                "%s at %s", c->arm.failure, id);
        return;
    }
    int broken = check_limits(c, baseline, spec, id);

    size_t n = c->n_pairs;
    int withheld = 0; /* clusters spanned by pairs too few for an interval */
    double *d = malloc((n ? n : 1) * sizeof(double));
    if (d) {
        for (size_t i = 0; i < n; i++)
            d[i] = log(c->pairs[i].base_ns) - log(c->pairs[i].cand_ns);
        kt_stats_signed_rank(&c->shift, d, n, confidence);
        double *x = malloc((n ? n : 1) * sizeof(double));
        cluster_fit *f = malloc(sizeof(*f));
        size_t start[KT_MAX_CLUSTERS + 1];
        if (x && f) {
            fit_clusters(f, c, d, x, start);
            withheld = placement_spread(c, f, confidence);
            set_effect(c, x, start, f);
            state_outlier(c, f, x);
        }
        order_effect(c, d);
        free(f);
        free(x);
        free(d);
    }
    if (n >= 1) {
        c->speedup = exp(c->shift.estimate);
        c->ci_low = exp(c->shift.ci_low);
        c->ci_high = exp(c->shift.ci_high);
    }
    double target = spec->min_speedup;
    int slow = n >= 1 && c->ci_high < target;
    /* Strictly above: with tied or zero differences (a coarse timer) the interval's end
     * can sit exactly on the target, and counting that as KEEP biases A/A towards KEEP.
     * The strict comparison is conservative with ties (docs/statistics.md). */
    int fast = n >= 1 && c->ci_low > target;
    char end[32], lim[32];
    kt_format_limit(lim, sizeof(lim), target, 0, 0);
    if (slow)
        kt_candidate_add_reason(
            c, KT_REASON_SLOWER, "speedup %.3f [%.3f, %s] below %s at %s", c->speedup, c->ci_low,
            kt_format_apart(end, sizeof(end), c->ci_high, target, 3, 1), lim, id);
    if (broken || slow) {
        c->verdict = KT_VERDICT_REJECT;
    } else if (fast) {
        c->verdict = KT_VERDICT_KEEP;
        kt_candidate_add_reason(
            c, KT_REASON_FASTER, "speedup %.3f [%s, %.3f] above %s at %s", c->speedup,
            kt_format_apart(end, sizeof(end), c->ci_low, target, 3, 1), c->ci_high, lim, id);
    } else {
        c->verdict = KT_VERDICT_INCONCLUSIVE;
        if (withheld)
            kt_candidate_add_reason(c, KT_REASON_UNDECIDED,
                                    "speedup %.3f, no interval yet after %zu pairs at %s: they "
                                    "spread over %d clusters (input set x prepared state) and "
                                    "fewer than two hold %d; raise trials.max_repetitions",
                                    c->speedup, n, id, withheld, KT_CLUSTER_MIN_PAIRS);
        else if (n >= 1)
            kt_candidate_add_reason(c, KT_REASON_UNDECIDED,
                                    "speedup %.3f [%.3f, %.3f] includes %.3g after %zu pairs at %s",
                                    c->speedup, c->ci_low, c->ci_high, target, n, id);
        else
            kt_candidate_add_reason(c, KT_REASON_NO_PAIRS, "no timed pairs at %s", id);
    }
}

void kt_candidate_withhold_grouped(kt_candidate_result *c, const char *id)
{
    if (c->verdict == KT_VERDICT_INCONCLUSIVE || c->arm.failed)
        return;
    for (int i = 0; i < c->n_reasons; i++)
        if (kt_reason_is_quality(c->reason_codes[i]))
            return; /* numerics do not depend on the order of the timed calls */
    c->verdict = KT_VERDICT_INCONCLUSIVE;
    c->n_reasons = 0;
    kt_candidate_add_reason(c, KT_REASON_GROUPED,
                            "speedup %.3f [%.3f, %.3f] measured with order: grouped, which "
                            "drift biases; no verdict without allow_grouped_verdicts at %s",
                            c->speedup, c->ci_low, c->ci_high, id);
}
