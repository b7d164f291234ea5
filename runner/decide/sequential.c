/* sequential.c - group-sequential boundaries by alpha spending and recursive integration. */
#include "decide/sequential.h"
#include "decide/stats.h"
#include "spec/matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GRID 201 /* odd, for Simpson's rule */

static double norm_cdf(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}

static double norm_pdf(double x)
{
    return exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
}

static double hsd(double alpha, double t, double gamma)
{
    return alpha * (1.0 - exp(-gamma * t)) / (1.0 - exp(-gamma));
}

/* The front-loaded function at n pairs, for looks from 'first' to 'last' whose looks after
 * every pair end at 'dense_end' (KT_FRONT_FIRST at the first look, KT_FRONT_DENSE at the end
 * of the dense looks, linear in n between and after). */
static double front(double alpha, double n, double first, double dense_end, double last)
{
    if (n >= last)
        return alpha;
    if (n < first)
        return 0;
    if (dense_end >= last)
        dense_end = first; /* no geometric looks: the first share, then linear to the end */
    if (n <= dense_end && dense_end > first)
        return alpha * (KT_FRONT_FIRST +
                        (KT_FRONT_DENSE - KT_FRONT_FIRST) * (n - first) / (dense_end - first));
    double from = dense_end > first ? KT_FRONT_DENSE : KT_FRONT_FIRST;
    return alpha * (from + (1.0 - from) * (n - dense_end) / (last - dense_end));
}

/* Cumulative error spent by look 'n' of a design whose looks run from 'first' to 'last'. */
static double spend(kt_spending s, double alpha, int n, int first, int last)
{
    double t = (double)n / last;
    if (t >= 1)
        return alpha;
    switch (s) {
    case KT_SPEND_FRONT:
        return front(alpha, n, first, kt_trial_dense_end(first), last);
    case KT_SPEND_HSD:
        return hsd(alpha, t, KT_HSD_GAMMA);
    case KT_SPEND_OBRIEN_FLEMING:
        return 2.0 - 2.0 * norm_cdf(kt_stats_normal_quantile(1.0 - alpha / 2.0) / sqrt(t));
    case KT_SPEND_POCOCK:
    case KT_SPEND_POCOCK_SPARSE:
    default:
        return alpha * log(1.0 + (M_E - 1.0) * t);
    }
}

static void clamp_reps(int *min_reps, int *max_reps)
{
    if (*max_reps < 1)
        *max_reps = 1;
    if (*min_reps < 1)
        *min_reps = 1;
    if (*min_reps > *max_reps)
        *min_reps = *max_reps;
}

/* Appends ceil(x), ceil(x f), ... below max_reps to 'looks' (skipping repeats), then max. */
static int geometric(int *looks, int n, int max_looks, double x, double f, int max_reps)
{
    for (; n < max_looks - 1 && (int)ceil(x) < max_reps; x *= f) {
        int v = (int)ceil(x);
        if (n == 0 || v > looks[n - 1])
            looks[n++] = v;
    }
    looks[n++] = max_reps;
    return n;
}

int kt_trial_looks_sparse(int *looks, int max_looks, int min_reps, int max_reps)
{
    clamp_reps(&min_reps, &max_reps);
    return geometric(looks, 0, max_looks, min_reps, 1.5, max_reps);
}

int kt_trial_dense_end(int min_reps)
{
    return min_reps * 2 < min_reps + 15 ? min_reps * 2 : min_reps + 15;
}

int kt_trial_looks(int *looks, int max_looks, int min_reps, int max_reps)
{
    clamp_reps(&min_reps, &max_reps);
    int n = 0, dense_end = kt_trial_dense_end(min_reps);
    for (int v = min_reps; v <= dense_end && v < max_reps && n < max_looks - 1; v++)
        looks[n++] = v;
    double next = n ? looks[n - 1] * 1.2 : min_reps;
    return geometric(looks, n, max_looks, next, 1.2, max_reps);
}

static int sparse_schedule(kt_spending s)
{
    return s == KT_SPEND_POCOCK_SPARSE || s == KT_SPEND_BONFERRONI;
}

int kt_design_min_pairs(double confidence)
{
    /* on the heap, grown as n does: a typical confidence is decided within a few dozen pairs,
     * and a frame of KT_LIMIT_REPETITIONS doubles (8 MB) overflowed a sanitized stack */
    double *d = NULL;
    size_t cap = 0;
    int found = KT_LIMIT_REPETITIONS + 1;
    for (int n = 1; n <= KT_LIMIT_REPETITIONS; n++) {
        if ((size_t)n > cap) {
            size_t want = cap ? cap * 2 : 64;
            double *grown = realloc(d, want * sizeof(*d));
            if (!grown)
                break;
            d = grown;
            cap = want;
        }
        d[n - 1] = n; /* distinct, all positive: the interval is finite iff k >= 1 */
        if (n < 2)
            continue;
        kt_shift s;
        if (kt_stats_signed_rank(&s, d, (size_t)n, confidence) == 0 && isfinite(s.ci_low)) {
            found = n;
            break;
        }
    }
    free(d);
    return found;
}

/* The running density of the score S_k = sum of standardised increments, kept on the
 * continuation region of the previous look. */
typedef struct density {
    double s[GRID], w[GRID]; /* nodes and Simpson weight x density */
    double info;             /* information (pairs) at the look */
} density;

static void simpson_nodes(density *f, double c)
{
    double h = 2.0 * c / (GRID - 1);
    for (int i = 0; i < GRID; i++) {
        f->s[i] = -c + h * i;
        double sw = (i == 0 || i == GRID - 1) ? 1.0 : (i % 2 ? 4.0 : 2.0);
        f->w[i] = sw * h / 3.0;
    }
}

/* P(|S_k| >= c and no earlier crossing), from the previous density and increment sd. */
static double cross_prob(const density *f, double sd, double c)
{
    double p = 0;
    for (int i = 0; i < GRID; i++)
        p += f->w[i] * (norm_cdf((-c - f->s[i]) / sd) + norm_cdf((f->s[i] - c) / sd));
    return p;
}

/* Boundaries for the looks flagged in 'use' (the last one must be used). */
static void boundaries(kt_design *d, const int *use)
{
    int last = d->n_looks - 1;
    density *f = calloc(1, sizeof(*f)), *g = calloc(1, sizeof(*g));
    int decisive_total = 0;
    for (int k = 0; k <= last; k++)
        decisive_total += use[k];
    double prev_spent = 0;
    int first = 1;
    for (int k = 0; k <= last && f && g; k++) {
        d->confidence[k] = NAN;
        d->spent[k] = prev_spent;
        if (!use[k])
            continue;
        double info = d->looks[k];
        double target =
            d->spending == KT_SPEND_BONFERRONI
                ? d->alpha / decisive_total
                : spend(d->spending, d->alpha, d->looks[k], d->looks[0], d->looks[last]) -
                      prev_spent;
        double b;
        if (d->spending == KT_SPEND_BONFERRONI || first) {
            b = kt_stats_normal_quantile(1.0 - target / 2.0);
        } else {
            double sd = sqrt(info - f->info), lo = 0, hi = 40;
            for (int it = 0; it < 100; it++) {
                double mid = 0.5 * (lo + hi);
                if (cross_prob(f, sd, mid * sqrt(info)) > target)
                    lo = mid;
                else
                    hi = mid;
            }
            b = 0.5 * (lo + hi);
        }
        prev_spent += target;
        d->spent[k] = prev_spent;
        d->confidence[k] = 1.0 - 2.0 * (1.0 - norm_cdf(b));
        /* the density of S_k on the continuation region (-c, c) */
        double c = b * sqrt(info);
        simpson_nodes(g, c);
        for (int i = 0; i < GRID; i++) {
            double dens;
            if (first) {
                dens = norm_pdf(g->s[i] / sqrt(info)) / sqrt(info);
            } else {
                double sd = sqrt(info - f->info);
                dens = 0;
                for (int j = 0; j < GRID; j++)
                    dens += f->w[j] * norm_pdf((g->s[i] - f->s[j]) / sd) / sd;
            }
            g->w[i] *= dens;
        }
        g->info = info;
        density *t = f;
        f = g;
        g = t;
        first = 0;
    }
    free(f);
    free(g);
}

static int plan(kt_design *d, int min_reps, int max_reps, double alpha, kt_spending spending);

/* Designs already planned by this thread: every point of a run, and every run of the
 * validity benchmark, asks for the same few, and planning one costs milliseconds. */
#define CACHE 8
static _Thread_local struct {
    int min_reps, max_reps, used;
    double alpha;
    kt_spending spending;
    kt_design d;
} cache[CACHE];
static _Thread_local int cache_next;

int kt_design_plan(kt_design *d, int min_reps, int max_reps, double alpha, kt_spending spending)
{
    for (int i = 0; i < CACHE; i++) {
        if (cache[i].used && cache[i].min_reps == min_reps && cache[i].max_reps == max_reps &&
            cache[i].alpha == alpha && cache[i].spending == spending) {
            *d = cache[i].d;
            return 0;
        }
    }
    int err = plan(d, min_reps, max_reps, alpha, spending);
    if (err == 0) {
        int i = cache_next++ % CACHE;
        cache[i].min_reps = min_reps;
        cache[i].max_reps = max_reps;
        cache[i].alpha = alpha;
        cache[i].spending = spending;
        cache[i].d = *d;
        cache[i].used = 1;
    }
    return err;
}

static int plan(kt_design *d, int min_reps, int max_reps, double alpha, kt_spending spending)
{
    memset(d, 0, sizeof(*d));
    if (!(alpha > 0 && alpha < 1))
        return kt_error_code(KT_EINVAL, "error budget %g is not in (0, 1)", alpha);
    d->alpha = alpha;
    d->spending = spending;
    d->n_looks = sparse_schedule(spending)
                     ? kt_trial_looks_sparse(d->looks, KT_LIMIT_LOOKS, min_reps, max_reps)
                     : kt_trial_looks(d->looks, KT_LIMIT_LOOKS, min_reps, max_reps);
    int use[KT_LIMIT_LOOKS];
    for (int k = 0; k < d->n_looks; k++)
        use[k] = 1;
    /* A look that cannot reach a finite interval at its level is dropped, which moves its
     * share to the next look and raises every level; repeat until all used looks decide. */
    for (;;) {
        boundaries(d, use);
        int dropped = 0;
        for (int k = 0; k < d->n_looks; k++) {
            if (use[k] && d->looks[k] < kt_design_min_pairs(d->confidence[k])) {
                use[k] = 0;
                dropped = 1;
                break; /* the earliest first: dropping it changes the levels after it */
            }
        }
        if (!dropped)
            break;
    }
    int any = 0;
    for (int k = 0; k < d->n_looks; k++) {
        d->decisive[k] = use[k];
        any |= use[k];
    }
    if (!any)
        return kt_error_code(KT_EINVAL,
                             "no look can decide: %d pairs give no finite interval at "
                             "confidence %.6g (at least %d are needed)",
                             max_reps, 1.0 - alpha, kt_design_min_pairs(1.0 - alpha));
    return 0;
}

int kt_design_last_look(const kt_design *d, int pairs)
{
    int at = -1;
    for (int k = 0; k < d->n_looks; k++)
        if (d->decisive[k] && d->looks[k] <= pairs)
            at = k;
    return at;
}

double kt_design_point_alpha(const kt_spec *spec)
{
    double alpha = 1.0 - spec->confidence;
    /* aggregate all: KEEP needs every point, one wrong point makes a wrong candidate
     * verdict, so the points share the budget (Bonferroni across the matrix) */
    if (spec->aggregate == KT_AGGREGATE_ALL && spec->matrix && spec->matrix->n > 1)
        alpha /= (double)spec->matrix->n;
    return alpha;
}

int kt_design_check(const kt_spec *spec)
{
    kt_design d;
    return kt_design_plan(&d, spec->min_repetitions, spec->max_repetitions,
                          kt_design_point_alpha(spec), KT_SPEND_DEFAULT);
}
