/* test_svg.c - the report's plots put marks where their values say: a plot opened over a
 * struct full of garbage maps y linearly (a stale log-axis flag once drew every point and tick
 * of the "paired log ratios in run order" plot at one height, a flat line), and the series plot
 * of pairs with known ratios draws each ratio at a height linear in ln(base / cand), in order;
 * a time axis is in the unit that fits (ms, not 1.5e+08 ns). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "report/html_plots.h"
#include "report/svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_open_is_linear_over_garbage(void **state)
{
    (void)state;
    kt_plot p;
    memset(&p, 0x5a, sizeof(p));
    FILE *f = tmpfile();
    assert_non_null(f);
    kt_plot_open(&p, f, "t", 900, 230, 70);
    p.x0 = 0, p.x1 = 10, p.y0 = -0.3, p.y1 = 0.3;
    double y_lo = kt_plot_y(&p, -0.3), y_mid = kt_plot_y(&p, 0), y_hi = kt_plot_y(&p, 0.3);
    assert_true(y_lo > y_mid && y_mid > y_hi); /* SVG's y grows downwards */
    assert_float_equal(y_mid, (y_lo + y_hi) / 2, 1e-9);
    assert_float_equal(y_lo - y_hi, p.height, 1e-9);
    kt_plot_close(&p);
    fclose(f);
}

/* The cy of every <circle class='ratio'> in 'svg', in order; returns how many. */
static size_t ratio_ys(const char *svg, double *ys, size_t max)
{
    size_t n = 0;
    for (const char *at = svg; n < max && (at = strstr(at, "class='ratio'")); at++) {
        const char *cy = strstr(at, "cy='");
        assert_non_null(cy);
        ys[n++] = strtod(cy + 4, NULL);
    }
    return n;
}

static void test_series_plot_follows_the_ratios(void **state)
{
    (void)state;
    static const double d[] = {0.05, -0.1, 0.2, 0.0, 0.15, -0.05, 0.1, 0.3};
    enum { N = sizeof(d) / sizeof(d[0]) };
    kt_pair pairs[N];
    memset(pairs, 0, sizeof(pairs));
    for (size_t i = 0; i < N; i++) {
        pairs[i].base_ns = 1e6 * exp(d[i]); /* ln(base / cand) = d[i] */
        pairs[i].cand_ns = 1e6;
    }
    kt_candidate_result c;
    memset(&c, 0, sizeof(c));
    c.pairs = pairs;
    c.n_pairs = N;
    c.shift.estimate = NAN;
    kt_report_input in;
    memset(&in, 0, sizeof(in));
    in.min_speedup = 1.05;
    in.min_reps = 4;
    in.max_reps = 8;
    char *svg = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&svg, &len);
    assert_non_null(f);
    kt_html_series_plot(f, &in, &c);
    fclose(f);
    double ys[N + 1];
    assert_int_equal(ratio_ys(svg, ys, N + 1), N);
    /* y = a - b d with b > 0: fitted on the first two pairs, it holds for every other */
    double b = (ys[1] - ys[0]) / (d[0] - d[1]), a = ys[0] + b * d[0];
    assert_true(b > 1); /* more than a pixel per unit of ln ratio: not flat */
    for (size_t i = 0; i < N; i++)
        assert_float_equal(ys[i], a - b * d[i], 0.11); /* printed to 0.1 pixel */
    free(svg);
}

static void test_time_units(void **state)
{
    (void)state;
    double scale;
    assert_string_equal(kt_time_unit(1.5e8, &scale), "ms");
    assert_float_equal(scale, 1e6, 0);
    assert_string_equal(kt_time_unit(2.5e9, &scale), "s");
    assert_string_equal(kt_time_unit(999, &scale), "ns");
    assert_string_equal(kt_time_unit(4.2e4, &scale), "µs");
    /* a distribution of calls of about 150 ms: its axis reads 140, 150, ... in ms */
    kt_pair pairs[6];
    memset(pairs, 0, sizeof(pairs));
    for (size_t i = 0; i < 6; i++) {
        pairs[i].base_ns = 1.5e8 + 2e6 * (double)i;
        pairs[i].cand_ns = 1.4e8 + 2e6 * (double)i;
    }
    kt_point_result pt;
    memset(&pt, 0, sizeof(pt));
    kt_candidate_result c;
    memset(&c, 0, sizeof(c));
    c.pairs = pairs;
    c.n_pairs = 6;
    pt.cands = &c;
    pt.n_cands = 1;
    char *svg = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&svg, &len);
    assert_non_null(f);
    kt_html_distribution_plot(f, &pt);
    fclose(f);
    assert_non_null(strstr(svg, "time per call, ms"));
    assert_null(strstr(svg, "e+"));
    assert_non_null(strstr(svg, ">150</text>"));
    free(svg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_is_linear_over_garbage),
        cmocka_unit_test(test_series_plot_follows_the_ratios),
        cmocka_unit_test(test_time_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
