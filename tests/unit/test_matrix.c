/* test_matrix.c - the experiment matrix: product order, point ids, exclude and include with
 * GitHub Actions' semantics (the documented examples adapted to our axes), warnings, limits.
 * Specs are built by hand around a fake op so every axis can be exercised without depending
 * on which ops the registry has. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "spec/matrix.h"

#include <stdlib.h>
#include <string.h>

static kt_op fake_op = {"fake", "all axes", 0, 0, NULL, NULL, 0, NULL, NULL, NULL};

static kt_model models[3];
static int64_t batches[256], contexts[256];
static kt_phase phases[2] = {KT_PHASE_DECODE, KT_PHASE_PREFILL};
static kt_role roles[4] = {KT_ROLE_QKV, KT_ROLE_O, KT_ROLE_GATE_UP, KT_ROLE_DOWN};
static kt_matrix_rule rules_ex[8], rules_in[8];

/* A spec over 'axes' with the first n_* values of the static lists above. */
static kt_spec make_spec(unsigned axes, size_t n_models, size_t n_phases, size_t n_roles,
                         size_t n_batch, size_t n_context)
{
    kt_spec s;
    memset(&s, 0, sizeof(s));
    fake_op.axes = axes;
    s.op = &fake_op;
    s.path = "m.yaml";
    static const char *const names[] = {"apple", "pear", "banana"};
    for (int i = 0; i < 3; i++) {
        memset(&models[i], 0, sizeof(models[i]));
        strcpy(models[i].name, names[i]);
        models[i].hidden = 64 * (i + 1);
    }
    s.models = models;
    s.n_models = n_models;
    s.phases = phases;
    s.n_phases = n_phases;
    s.roles = roles;
    s.n_roles = n_roles;
    s.batch_sizes = batches;
    s.n_batch_sizes = n_batch;
    s.context_lengths = contexts;
    s.n_context_lengths = n_context;
    s.exclude = rules_ex;
    s.include = rules_in;
    memset(rules_ex, 0, sizeof(rules_ex));
    memset(rules_in, 0, sizeof(rules_in));
    return s;
}

static kt_matrix_rule rule(unsigned axes, int model, int64_t batch, int64_t context, kt_phase phase,
                           int line)
{
    kt_matrix_rule r;
    memset(&r, 0, sizeof(r));
    r.axes = axes;
    if (model >= 0)
        r.point.model = models[model];
    r.point.batch_size = batch;
    r.point.context_length = context;
    r.point.phase = phase;
    r.line = line;
    r.col = 5;
    return r;
}

/* Asserts the ids of 'm', in order, equal the NULL-terminated 'ids'. */
static void assert_ids(const kt_matrix *m, const char *const *ids)
{
    size_t n = 0;
    while (ids[n])
        n++;
    for (size_t i = 0; i < m->n && i < n; i++)
        assert_string_equal(m->points[i].id, ids[i]);
    assert_int_equal(m->n, n);
}

static void test_product_order_and_ids(void **state)
{
    (void)state;
    batches[0] = 1, batches[1] = 4;
    contexts[0] = 1024;
    kt_spec s =
        make_spec(KT_AXIS_MODEL | KT_AXIS_PHASE | KT_AXIS_ROLE | KT_AXIS_BATCH | KT_AXIS_CONTEXT, 2,
                  2, 2, 2, 1);
    kt_matrix m;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_matrix_expand(&m, &s, &d), 0);
    assert_int_equal(d.n, 0);
    static const char *const ids[] = {"apple/decode/qkv/b1",
                                      "apple/decode/qkv/b4",
                                      "apple/decode/o/b1",
                                      "apple/decode/o/b4",
                                      "apple/prefill/qkv/b1/t1024",
                                      "apple/prefill/qkv/b4/t1024",
                                      "apple/prefill/o/b1/t1024",
                                      "apple/prefill/o/b4/t1024",
                                      "pear/decode/qkv/b1",
                                      "pear/decode/qkv/b4",
                                      "pear/decode/o/b1",
                                      "pear/decode/o/b4",
                                      "pear/prefill/qkv/b1/t1024",
                                      "pear/prefill/qkv/b4/t1024",
                                      "pear/prefill/o/b1/t1024",
                                      "pear/prefill/o/b4/t1024",
                                      NULL};
    assert_ids(&m, ids);
    /* the fields carry the values, not just the ids */
    assert_int_equal(m.points[13].model.hidden, 128);
    assert_int_equal(m.points[13].phase, KT_PHASE_PREFILL);
    assert_int_equal(m.points[13].role, KT_ROLE_QKV);
    assert_int_equal(m.points[13].batch_size, 4);
    assert_int_equal(m.points[13].context_length, 1024);
    kt_matrix_free(&m);
    kt_diag_free(&d);
}

/* Axes the op does not use stay zero and out of the id (synthetic: "b4/t1024"). */
/* A decode point's shape does not depend on the context: several contexts give one decode
 * point (no 't' in its id) and one prefill point each. */
static void test_decode_points_ignore_the_context(void **state)
{
    (void)state;
    batches[0] = 2;
    contexts[0] = 128, contexts[1] = 256;
    kt_spec s =
        make_spec(KT_AXIS_MODEL | KT_AXIS_PHASE | KT_AXIS_BATCH | KT_AXIS_CONTEXT, 1, 2, 1, 1, 2);
    kt_matrix m;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_matrix_expand(&m, &s, &d), 0);
    static const char *const ids[] = {"apple/decode/b2", "apple/prefill/b2/t128",
                                      "apple/prefill/b2/t256", NULL};
    assert_ids(&m, ids);
    assert_int_equal(m.points[0].context_length, 0);
    kt_matrix_free(&m);
    kt_diag_free(&d);
}

static void test_unused_axes(void **state)
{
    (void)state;
    batches[0] = 4;
    contexts[0] = 1024, contexts[1] = 2048;
    kt_spec s = make_spec(KT_AXIS_BATCH | KT_AXIS_CONTEXT, 2, 2, 4, 1, 2);
    kt_matrix m;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_matrix_expand(&m, &s, &d), 0);
    static const char *const ids[] = {"b4/t1024", "b4/t2048", NULL};
    assert_ids(&m, ids);
    assert_string_equal(m.points[0].model.name, "");
    assert_int_equal(m.points[0].role, KT_ROLE_NONE);
    assert_int_equal(m.points[0].phase, KT_PHASE_DECODE);
    kt_matrix_free(&m);
    kt_diag_free(&d);
}

/* GitHub's "Excluding matrix configurations" example: os x version x environment = 12 jobs,
 * exclude {macos, 12, production} and {windows, 16} (a partial match) leave 9. Here: model
 * (os) x batch (version) x phase (environment). */
static void test_github_exclude_example(void **state)
{
    (void)state;
    batches[0] = 12, batches[1] = 14, batches[2] = 16;
    contexts[0] = 1;
    kt_spec s = make_spec(KT_AXIS_MODEL | KT_AXIS_BATCH | KT_AXIS_PHASE, 2, 2, 4, 3, 1);
    rules_ex[0] =
        rule(KT_AXIS_MODEL | KT_AXIS_BATCH | KT_AXIS_PHASE, 0, 12, 0, KT_PHASE_PREFILL, 20);
    rules_ex[1] = rule(KT_AXIS_MODEL | KT_AXIS_BATCH, 1, 16, 0, KT_PHASE_DECODE, 24);
    s.n_exclude = 2;
    kt_matrix m;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_matrix_expand(&m, &s, &d), 0);
    assert_int_equal(d.n, 0);
    static const char *const ids[] = {"apple/decode/b12",  "apple/decode/b14",
                                      "apple/decode/b16",  "apple/prefill/b14",
                                      "apple/prefill/b16", "pear/decode/b12",
                                      "pear/decode/b14",   "pear/prefill/b12",
                                      "pear/prefill/b14",  NULL};
    assert_ids(&m, ids);
    kt_matrix_free(&m);
    kt_diag_free(&d);
}

/* GitHub's "Expanding or adding matrix configurations" example: fruit [apple, pear] x animal
 * [cat, dog]; include {fruit: apple, ...} merges into existing jobs, {fruit: banana} matches
 * nothing and adds a job, {fruit: banana, animal: cat} adds another. Here fruit is the model
 * and animal the batch (cat = 1, dog = 2). Two differences, both the lead's choices: an entry
 * that merges changes nothing (all our keys are axes), and an added entry expands the axes it
 * does not name, so {model: banana} adds banana/b1 and banana/b2, after which
 * {model: banana, batch_size: 1} matches banana/b1 and adds nothing. */
static void test_github_include_example(void **state)
{
    (void)state;
    batches[0] = 1, batches[1] = 2;
    kt_spec s = make_spec(KT_AXIS_MODEL | KT_AXIS_BATCH, 2, 1, 1, 2, 1);
    rules_in[0] = rule(KT_AXIS_MODEL, 0, 0, 0, KT_PHASE_DECODE, 30);
    rules_in[1] = rule(KT_AXIS_MODEL, 2, 0, 0, KT_PHASE_DECODE, 31);
    rules_in[2] = rule(KT_AXIS_MODEL | KT_AXIS_BATCH, 2, 1, 0, KT_PHASE_DECODE, 32);
    rules_in[3] = rule(KT_AXIS_MODEL | KT_AXIS_BATCH, 1, 8, 0, KT_PHASE_DECODE, 33);
    s.n_include = 4;
    kt_matrix m;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_matrix_expand(&m, &s, &d), 0);
    static const char *const ids[] = {"apple/b1",  "apple/b2",  "pear/b1", "pear/b2",
                                      "banana/b1", "banana/b2", "pear/b8", NULL};
    assert_ids(&m, ids);
    assert_int_equal(m.points[4].model.hidden, 192); /* banana's shape came along */
    /* entries 0 and 2 add nothing: a warning each, at their places */
    assert_int_equal(d.n, 2);
    assert_int_equal(d.n_errors, 0);
    assert_int_equal(d.items[0].severity, KT_DIAG_WARNING);
    assert_int_equal(d.items[0].line, 30);
    assert_string_equal(d.items[0].message,
                        "include[0] adds no point: it matches 2 points already in the matrix");
    assert_int_equal(d.items[1].line, 32);
    assert_string_equal(d.items[1].message,
                        "include[2] adds no point: it matches 1 point already in the matrix");
    kt_matrix_free(&m);
    kt_diag_free(&d);
}

/* Include runs after exclude, so it can bring an excluded point back (as in GitHub). */
static void test_include_after_exclude(void **state)
{
    (void)state;
    batches[0] = 1, batches[1] = 4;
    contexts[0] = 128, contexts[1] = 256;
    kt_spec s = make_spec(KT_AXIS_BATCH | KT_AXIS_CONTEXT, 0, 1, 1, 2, 2);
    rules_ex[0] = rule(KT_AXIS_BATCH, -1, 4, 0, KT_PHASE_DECODE, 10);
    s.n_exclude = 1;
    rules_in[0] = rule(KT_AXIS_BATCH | KT_AXIS_CONTEXT, -1, 4, 256, KT_PHASE_DECODE, 12);
    s.n_include = 1;
    kt_matrix m;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_matrix_expand(&m, &s, &d), 0);
    assert_int_equal(d.n, 0);
    static const char *const ids[] = {"b1/t128", "b1/t256", "b4/t256", NULL};
    assert_ids(&m, ids);
    kt_matrix_free(&m);
    kt_diag_free(&d);
}

static void test_exclude_matching_nothing_warns(void **state)
{
    (void)state;
    batches[0] = 1;
    contexts[0] = 128;
    kt_spec s = make_spec(KT_AXIS_BATCH | KT_AXIS_CONTEXT, 0, 1, 1, 1, 1);
    rules_ex[0] = rule(KT_AXIS_BATCH, -1, 2, 0, KT_PHASE_DECODE, 7);
    s.n_exclude = 1;
    kt_matrix m;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_matrix_expand(&m, &s, &d), 0);
    assert_int_equal(m.n, 1);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.n_errors, 0);
    assert_int_equal(d.items[0].severity, KT_DIAG_WARNING);
    assert_string_equal(d.items[0].file, "m.yaml");
    assert_int_equal(d.items[0].line, 7);
    assert_int_equal(d.items[0].col, 5);
    assert_string_equal(d.items[0].message, "exclude[0] matches no point");
    kt_matrix_free(&m);
    kt_diag_free(&d);
}

static void test_empty_matrix_is_an_error(void **state)
{
    (void)state;
    batches[0] = 1, batches[1] = 2;
    contexts[0] = 128;
    kt_spec s = make_spec(KT_AXIS_BATCH | KT_AXIS_CONTEXT, 0, 1, 1, 2, 1);
    rules_ex[0] = rule(KT_AXIS_CONTEXT, -1, 0, 128, KT_PHASE_DECODE, 7);
    s.n_exclude = 1;
    kt_matrix m;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_matrix_expand(&m, &s, &d), -1);
    assert_int_equal(d.n_errors, 1);
    assert_string_equal(d.items[0].message, "the matrix is empty: exclude removes all 2 points");
    assert_null(m.points);
    assert_int_equal(m.n, 0);
    kt_diag_free(&d);
}

static void test_point_limit(void **state)
{
    (void)state;
    for (int i = 0; i < 256; i++)
        batches[i] = i + 1, contexts[i] = 16 * (i + 1);
    kt_spec s = make_spec(KT_AXIS_BATCH | KT_AXIS_CONTEXT, 0, 1, 1, 100, 100);
    kt_matrix m;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_matrix_expand(&m, &s, &d), 0); /* exactly 10,000 is allowed */
    assert_int_equal(m.n, KT_MATRIX_MAX_POINTS);
    kt_matrix_free(&m);
    s.n_batch_sizes = 101;
    assert_int_equal(kt_matrix_expand(&m, &s, &d), -1);
    assert_int_equal(d.n_errors, 1);
    assert_string_equal(d.items[0].message,
                        "the matrix has more than 10000 points (10100 before exclude)");
    /* an exclude that brings it back under the limit makes it valid again */
    rules_ex[0] = rule(KT_AXIS_BATCH, -1, 101, 0, KT_PHASE_DECODE, 3);
    s.n_exclude = 1;
    assert_int_equal(kt_matrix_expand(&m, &s, &d), 0);
    assert_int_equal(m.n, KT_MATRIX_MAX_POINTS);
    kt_matrix_free(&m);
    /* and an include that pushes it over fails at the include's line */
    rules_in[0] = rule(KT_AXIS_BATCH, -1, 5000, 0, KT_PHASE_DECODE, 9);
    s.n_include = 1;
    assert_int_equal(kt_matrix_expand(&m, &s, &d), -1);
    assert_int_equal(d.n_errors, 2);
    assert_int_equal(d.items[1].line, 9);
    kt_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_product_order_and_ids),
        cmocka_unit_test(test_decode_points_ignore_the_context),
        cmocka_unit_test(test_unused_axes),
        cmocka_unit_test(test_github_exclude_example),
        cmocka_unit_test(test_github_include_example),
        cmocka_unit_test(test_include_after_exclude),
        cmocka_unit_test(test_exclude_matching_nothing_warns),
        cmocka_unit_test(test_empty_matrix_is_an_error),
        cmocka_unit_test(test_point_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
