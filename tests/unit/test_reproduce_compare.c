/* test_reproduce_compare.c - what 'ktrial reproduce' calls reproduced: the same points and
 * candidates, the same verdicts, each speedup inside the other run's interval; anything else is
 * counted and named. And the machine facts of two provenance documents that differ. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "run/reproduce.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One run of one point "b1/t64" with candidate "fast": KEEP at 'speedup' [low, high]. */
typedef struct one_run {
    kt_run_result run;
    kt_point_result point;
    kt_candidate_result cand;
} one_run;

static void make(one_run *r, double speedup, double low, double high, kt_verdict v)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->point.point.id, sizeof(r->point.point.id), "b1/t64");
    snprintf(r->cand.arm.name, sizeof(r->cand.arm.name), "fast");
    r->cand.speedup = speedup;
    r->cand.ci_low = low;
    r->cand.ci_high = high;
    r->cand.verdict = v;
    r->point.cands = &r->cand;
    r->point.n_cands = 1;
    r->run.points = &r->point;
    r->run.n_points = 1;
    r->run.verdict = v;
}

/* kt_reproduce_differences into a string (freed by the caller). */
static char *differences(size_t *n, const one_run *a, const one_run *b)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    *n = kt_reproduce_differences(f, &a->run, &b->run);
    fclose(f);
    return text;
}

static void test_the_same_verdicts_inside_each_others_interval_reproduce(void **state)
{
    (void)state;
    one_run a, b;
    size_t n;
    make(&a, 1.25, 1.18, 1.33, KT_VERDICT_KEEP);
    make(&b, 1.27, 1.20, 1.35, KT_VERDICT_KEEP);
    char *text = differences(&n, &a, &b);
    assert_int_equal(n, 0);
    assert_string_equal(text, "");
    free(text);
}

static void test_a_verdict_or_a_speedup_that_moved_is_named(void **state)
{
    (void)state;
    one_run a, b;
    size_t n;
    make(&a, 1.25, 1.18, 1.33, KT_VERDICT_KEEP);
    make(&b, 1.05, 0.98, 1.12, KT_VERDICT_INCONCLUSIVE);
    char *text = differences(&n, &a, &b);
    assert_int_equal(n, 3); /* the verdict, the speedup, the overall verdict */
    assert_non_null(strstr(text, "b1/t64 fast: verdict KEEP, rerun INCONCLUSIVE\n"));
    assert_non_null(strstr(text, "not each inside the other's interval"));
    assert_non_null(strstr(text, "overall: KEEP, rerun INCONCLUSIVE\n"));
    free(text);
    /* inside one interval only is not enough: each must hold the other's speedup */
    make(&b, 1.32, 1.30, 1.34, KT_VERDICT_KEEP);
    text = differences(&n, &a, &b);
    assert_int_equal(n, 1);
    free(text);
}

static void test_a_point_or_candidate_in_one_run_only_is_named(void **state)
{
    (void)state;
    one_run a, b;
    size_t n;
    make(&a, 1.25, 1.18, 1.33, KT_VERDICT_KEEP);
    make(&b, 1.25, 1.18, 1.33, KT_VERDICT_KEEP);
    snprintf(b.cand.arm.name, sizeof(b.cand.arm.name), "other");
    char *text = differences(&n, &a, &b);
    assert_int_equal(n, 2);
    assert_non_null(strstr(text, "b1/t64 fast: not in the rerun\n"));
    assert_non_null(strstr(text, "b1/t64 other: not in the archived run\n"));
    free(text);
    b.run.n_points = 0;
    text = differences(&n, &a, &b);
    assert_int_equal(n, 1);
    assert_non_null(strstr(text, "b1/t64: not in the rerun\n"));
    free(text);
}

static void test_machine_differences_leave_out_the_commit(void **state)
{
    (void)state;
    cJSON *a = cJSON_Parse("{\"provenance\": {\"host\": {\"cpu_model\": \"A\", \"cores\": 2}, "
                           "\"build\": {\"ktrial_commit\": \"abc\", \"compiler\": \"GNU 12\"}, "
                           "\"device\": {\"backend\": \"sim\", \"info\": {\"name\": \"x\"}}}}");
    cJSON *b = cJSON_Parse("{\"provenance\": {\"host\": {\"cpu_model\": \"B\", \"cores\": 2}, "
                           "\"build\": {\"ktrial_commit\": \"unknown\", \"compiler\": \"GNU 12\"}, "
                           "\"device\": {\"backend\": \"sim\", \"info\": {\"name\": \"y\"}}}}");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(kt_reproduce_machine_differences(f, a, b), 2);
    fclose(f);
    assert_string_equal(text, "  host.cpu_model: A -> B\n  device.info.name: x -> y\n");
    free(text);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_same_verdicts_inside_each_others_interval_reproduce),
        cmocka_unit_test(test_a_verdict_or_a_speedup_that_moved_is_named),
        cmocka_unit_test(test_a_point_or_candidate_in_one_run_only_is_named),
        cmocka_unit_test(test_machine_differences_leave_out_the_commit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
