/* test_yaml_tree.c - the YAML loader: marks, the checks libyaml does not make, scalar
 * resolution under the YAML 1.2 core schema, limits, and robustness on hostile bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "spec/yaml_tree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loads 'text'; returns the tree (NULL on failure) and leaves messages in 'd'. */
static kt_node *load(kt_diag *d, const char *text)
{
    kt_node *root = NULL;
    kt_diag_init(d);
    int rc = kt_yaml_load(&root, "t.yaml", text, strlen(text), d);
    assert_true(rc == 0 ? root != NULL && d->n_errors == 0 : root == NULL && d->n_errors > 0);
    return root;
}

/* Asserts that 'text' fails with exactly one error 'message' at 'line':'col'. */
static void expect_error(const char *text, int line, int col, const char *message)
{
    kt_diag d;
    kt_node *root = load(&d, text);
    assert_null(root);
    assert_int_equal(d.n, 1);
    assert_string_equal(d.items[0].message, message);
    assert_string_equal(d.items[0].file, "t.yaml");
    assert_int_equal(d.items[0].line, line);
    assert_int_equal(d.items[0].col, col);
    kt_diag_free(&d);
}

static void test_marks_and_structure(void **state)
{
    (void)state;
    kt_diag d;
    kt_node *root = load(&d, "name: x\n"
                             "list:\n"
                             "  - 1\n"
                             "  - {k: v, 'q': \"w\"}\n");
    assert_non_null(root);
    assert_int_equal(root->kind, KT_NODE_MAP);
    assert_int_equal(root->n, 2);
    assert_int_equal(root->line, 1);
    assert_int_equal(root->col, 1);
    const kt_node *name = kt_node_get(root, "name");
    assert_string_equal(kt_node_str(name), "x");
    assert_int_equal(name->line, 1);
    assert_int_equal(name->col, 7);
    const kt_node *list = kt_node_get(root, "list");
    assert_int_equal(list->kind, KT_NODE_SEQ);
    assert_int_equal(list->n, 2);
    assert_int_equal(list->line, 3);
    assert_int_equal(list->col, 3);
    assert_int_equal(list->items[0]->line, 3);
    assert_int_equal(list->items[0]->col, 5);
    const kt_node *flow = list->items[1];
    assert_int_equal(flow->kind, KT_NODE_MAP);
    assert_int_equal(flow->line, 4);
    assert_int_equal(flow->col, 5);
    assert_int_equal(flow->keys[1]->col, 12);
    assert_int_equal(flow->keys[1]->quoted, 1);
    assert_string_equal(kt_node_str(kt_node_get(flow, "q")), "w");
    assert_null(kt_node_get(flow, "missing"));
    assert_null(kt_node_get(list, "k"));
    assert_null(kt_node_str(list));
    kt_node_free(root);
    kt_diag_free(&d);
}

static void test_syntax_errors(void **state)
{
    (void)state;
    expect_error("a: b: c\n", 1, 5, "syntax error: mapping values are not allowed in this context");
    expect_error("a:\n  - 1\n b: 2\n", 3, 2,
                 "syntax error: did not find expected key (while parsing a block mapping at "
                 "line 1)");
    expect_error("a: [1, 2\n", 2, 1,
                 "syntax error: did not find expected ',' or ']' (while parsing a flow sequence "
                 "at line 1)");
    expect_error("a: 1\nb: \xff\n", 2, 4, "syntax error: invalid leading UTF-8 octet (byte 0xff)");
}

static void test_duplicate_keys(void **state)
{
    (void)state;
    expect_error("version: 1\n"
                 "op: gemm\n"
                 "name: a\n"
                 "trials: {warmup: 1}\n"
                 "name: b\n",
                 5, 1, "duplicate key 'name' (first at line 3)");
    /* nested maps are checked too; equal text in another map is fine */
    expect_error("a: {x: 1, y: 2, x: 3}\nb: {x: 1}\n", 1, 17,
                 "duplicate key 'x' (first at line 1)");
    /* a quoted key equals the plain one: both become the same JSON key */
    expect_error("k: 1\n\"k\": 2\n", 2, 1, "duplicate key 'k' (first at line 1)");

    /* many keys (the hash set grows), one duplicate at the end */
    char *text = malloc(64 * 1000);
    size_t off = 0;
    for (int i = 0; i < 1000; i++)
        off += (size_t)sprintf(text + off, "key%d: %d\n", i, i);
    sprintf(text + off, "key517: again\n");
    expect_error(text, 1001, 1, "duplicate key 'key517' (first at line 518)");
    text[off] = '\0';
    kt_diag d;
    kt_node *root = load(&d, text);
    assert_int_equal(root->n, 1000);
    assert_string_equal(kt_node_str(kt_node_get(root, "key999")), "999");
    kt_node_free(root);
    kt_diag_free(&d);
    free(text);
}

static void test_aliases(void **state)
{
    (void)state;
    kt_diag d;
    kt_node *root = load(&d, "base: &b {block: 128, delta: 5.0}\n"
                             "copy: *b\n"
                             "s: &s text\n"
                             "t: *s\n");
    assert_non_null(root);
    const kt_node *base = kt_node_get(root, "base"), *copy = kt_node_get(root, "copy");
    assert_int_equal(copy->kind, KT_NODE_MAP);
    assert_int_equal(copy->n, 2);
    assert_ptr_not_equal(copy, base);
    assert_ptr_not_equal(copy->items[0], base->items[0]);
    assert_string_equal(kt_node_str(kt_node_get(copy, "delta")), "5.0");
    /* the copy sits where the alias was; its children keep their own marks */
    assert_int_equal(copy->line, 2);
    assert_int_equal(copy->col, 7);
    assert_int_equal(kt_node_get(copy, "block")->line, 1);
    assert_string_equal(kt_node_str(kt_node_get(root, "t")), "text");
    kt_node_free(root);
    kt_diag_free(&d);

    /* an anchor may be redefined: the latest one counts */
    root = load(&d, "a: &x 1\nb: &x 2\nc: *x\n");
    assert_string_equal(kt_node_str(kt_node_get(root, "c")), "2");
    kt_node_free(root);
    kt_diag_free(&d);

    expect_error("a: &x [1, *x]\n", 1, 11, "alias '*x' refers to its own enclosing node");
    expect_error("a: &x {k: {j: *x}}\n", 1, 15, "alias '*x' refers to its own enclosing node");
    expect_error("a: 1\nb: *nope\n", 2, 4, "unknown alias '*nope'");
}

/* The YAML 1.1 merge key, as PyYAML applies it: own keys win wherever they are written, then
 * the merged mappings in their order; merged entries keep their own places. */
static void test_merge_keys(void **state)
{
    (void)state;
    kt_diag d;
    kt_node *root = load(&d, "base: &b {block: 128, delta: 5.0}\n"
                             "more: &m {delta: 7, split: 9, block: 1}\n"
                             "one:\n"
                             "  delta: 3\n"
                             "  <<: *b\n"
                             "two: {<<: [*b, *m], isa: 1}\n"
                             "quoted: {'<<': x}\n");
    assert_non_null(root);
    const kt_node *one = kt_node_get(root, "one");
    assert_int_equal(one->n, 2);
    assert_null(kt_node_get(one, "<<"));
    assert_string_equal(kt_node_str(kt_node_get(one, "delta")), "3"); /* own key, before '<<' */
    assert_string_equal(kt_node_str(kt_node_get(one, "block")), "128");
    assert_int_equal(kt_node_get(one, "block")->line, 1); /* where it was written */
    assert_int_equal(kt_node_get(one, "block")->col, 18);
    const kt_node *two = kt_node_get(root, "two");
    assert_int_equal(two->n, 4);
    assert_string_equal(kt_node_str(kt_node_get(two, "isa")), "1");     /* own, after '<<' */
    assert_string_equal(kt_node_str(kt_node_get(two, "block")), "128"); /* the first map wins */
    assert_string_equal(kt_node_str(kt_node_get(two, "delta")), "5.0");
    assert_string_equal(kt_node_str(kt_node_get(two, "split")), "9");
    assert_string_equal(kt_node_str(kt_node_get(kt_node_get(root, "quoted"), "<<")), "x");
    kt_node_free(root);
    kt_diag_free(&d);

    /* merged keys are not duplicates; a key written twice still is */
    root = load(&d, "a: &a {k: 1}\nb: {<<: *a, k: 2}\n");
    assert_string_equal(kt_node_str(kt_node_get(kt_node_get(root, "b"), "k")), "2");
    kt_node_free(root);
    kt_diag_free(&d);
    expect_error("a: &a {k: 1}\nb: {<<: *a, k: 2, k: 3}\n", 2, 19,
                 "duplicate key 'k' (first at line 2)");
    const char *takes = "the merge key '<<' takes a mapping or a list of mappings (an alias such "
                        "as *defaults, or [*a, *b])";
    expect_error("a: {<<: 3}\n", 1, 9, takes);
    expect_error("a: &a [1]\nb: {<<: *a}\n", 2, 9, takes);
    expect_error("a: &a {k: 1}\nb: {<<: [*a, 2]}\n", 2, 9, takes);
    expect_error("a: &a {k: 1}\nb: {<<: *a, <<: *a}\n", 2, 13,
                 "duplicate merge key '<<' (first at line 2); merge several mappings with "
                 "'<<: [*a, *b]'");
}

static void test_alias_bomb(void **state)
{
    (void)state;
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                       "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                       "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                       "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n";
    kt_diag d;
    assert_null(load(&d, bomb));
    assert_int_equal(d.n, 1);
    assert_string_equal(d.items[0].message, "alias '*e' expands the document beyond 100000 nodes");
    /* a..e hold 74732 nodes; the first copy of e (66430 nodes) would pass the limit */
    assert_int_equal(d.items[0].line, 6);
    assert_int_equal(d.items[0].col, 8);
    kt_diag_free(&d);
}

static char *repeat(const char *a, int n, const char *b, int m)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la * (size_t)n + lb * (size_t)m + 1), *p = s;
    for (int i = 0; i < n; i++, p += la)
        memcpy(p, a, la);
    for (int i = 0; i < m; i++, p += lb)
        memcpy(p, b, lb);
    *p = '\0';
    return s;
}

static void test_limits(void **state)
{
    (void)state;
    char *deep = repeat("[", KT_YAML_MAX_DEPTH + 1, "]", KT_YAML_MAX_DEPTH + 1);
    expect_error(deep, 1, KT_YAML_MAX_DEPTH + 1, "nesting deeper than 64 levels");
    free(deep);
    char *ok = repeat("[", KT_YAML_MAX_DEPTH, "]", KT_YAML_MAX_DEPTH);
    kt_diag d;
    kt_node *root = load(&d, ok);
    assert_non_null(root);
    kt_node_free(root);
    kt_diag_free(&d);
    free(ok);
    /* an alias that would push a deep anchor past the depth limit */
    char *nest = repeat("[", 40, "]", 40);
    char *text = malloc(strlen(nest) * 2 + 64);
    sprintf(text, "a: &n %s\nb: [[[[[[[[[[[[[[[[[[[[[[[[[[[*n]]]]]]]]]]]]]]]]]]]]]]]]]]]\n", nest);
    expect_error(text, 2, 31, "alias '*n' nests the document deeper than 64 levels");
    free(text);
    free(nest);

    char *wide = repeat("- 0\n", KT_YAML_MAX_NODES + 1, "", 0);
    assert_null(load(&d, wide));
    assert_string_equal(d.items[0].message, "document has more than 100000 nodes");
    assert_int_equal(d.items[0].line, KT_YAML_MAX_NODES);
    kt_diag_free(&d);
    free(wide);

    size_t big = (size_t)KT_YAML_MAX_BYTES + 1;
    char *huge = malloc(big);
    memset(huge, ' ', big);
    kt_diag_init(&d);
    kt_node *out = (kt_node *)&d;
    assert_int_equal(kt_yaml_load(&out, "t.yaml", huge, big, &d), -1);
    assert_null(out);
    assert_string_equal(d.items[0].message, "file is too large: 4194305 bytes (limit 4194304)");
    kt_diag_free(&d);
    free(huge);
}

static void test_yaml11_booleans(void **state)
{
    (void)state;
    expect_error("flush_cache: yes\n", 1, 14,
                 "'yes' is not a boolean in YAML 1.2; write true or false (or quote it for a "
                 "string)");
    expect_error("a: [On]\n", 1, 5,
                 "'On' is not a boolean in YAML 1.2; write true or false (or quote it for a "
                 "string)");
    expect_error("a: N\n", 1, 4,
                 "'N' is not a boolean in YAML 1.2; write true or false (or quote it for a "
                 "string)");
    /* all of them are reported, not only the first */
    kt_diag d;
    assert_null(load(&d, "a: off\nb: no\nc: 'no'\n"));
    assert_int_equal(d.n, 2);
    assert_int_equal(d.items[1].line, 2);
    kt_diag_free(&d);
    /* quoted values are strings; keys are never booleans in JSON */
    kt_node *root = load(&d, "a: 'yes'\nb: \"off\"\non: 1\nc: True\nd: FALSE\ne: yess\n");
    assert_non_null(root);
    int b = -1;
    assert_int_equal(kt_node_scalar_type(kt_node_get(root, "a")), KT_SCALAR_STRING);
    assert_int_equal(kt_node_bool(kt_node_get(root, "a"), &b), -1);
    assert_int_equal(kt_node_bool(kt_node_get(root, "c"), &b), 0);
    assert_int_equal(b, 1);
    assert_int_equal(kt_node_bool(kt_node_get(root, "d"), &b), 0);
    assert_int_equal(b, 0);
    assert_int_equal(kt_node_scalar_type(kt_node_get(root, "e")), KT_SCALAR_STRING);
    assert_string_equal(kt_node_str(kt_node_get(root, "on")), "1");
    kt_node_free(root);
    kt_diag_free(&d);
}

static void test_tags(void **state)
{
    (void)state;
    kt_diag d;
    kt_node *root = load(&d, "a: !!str 12\nb: ! 13\nc: !!map {k: v}\n");
    assert_non_null(root);
    assert_int_equal(kt_node_scalar_type(kt_node_get(root, "a")), KT_SCALAR_STRING);
    assert_int_equal(kt_node_scalar_type(kt_node_get(root, "b")), KT_SCALAR_STRING);
    kt_node_free(root);
    kt_diag_free(&d);
    expect_error("a: !!python/object x\n", 1, 4,
                 "unsupported tag 'tag:yaml.org,2002:python/object'");
}

static void test_a_nul_in_a_string_is_an_error_not_a_cut(void **state)
{
    (void)state;
    static const char message[] =
        "the string contains a NUL byte (\\0), which no name, path or value may hold";
    expect_error("name: \"b\\u0000x\"\n", 1, 7, message); /* not cut to "b" */
    expect_error("v: \"lognormal\\0x\"\n", 1, 4, message);
    expect_error("{\"k\\x00\": 1}\n", 1, 2, message); /* keys too */
}

static kt_scalar_type type_of(const char *text);

static void test_scalar_types(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        kt_scalar_type type;
    } cases[] = {
        {"", KT_SCALAR_NULL},          {"~", KT_SCALAR_NULL},       {"null", KT_SCALAR_NULL},
        {"Null", KT_SCALAR_NULL},      {"NULL", KT_SCALAR_NULL},    {"nULL", KT_SCALAR_STRING},
        {"'null'", KT_SCALAR_STRING},  {"true", KT_SCALAR_BOOL},    {"True", KT_SCALAR_BOOL},
        {"TRUE", KT_SCALAR_BOOL},      {"tRUE", KT_SCALAR_STRING},  {"0", KT_SCALAR_INT},
        {"-12", KT_SCALAR_INT},        {"+12", KT_SCALAR_INT},      {"007", KT_SCALAR_INT},
        {"0o17", KT_SCALAR_INT},       {"0x1F", KT_SCALAR_INT},     {"0o8", KT_SCALAR_STRING},
        {"-0x1", KT_SCALAR_STRING},    {"1_000", KT_SCALAR_STRING}, {"0x", KT_SCALAR_STRING},
        {"1.5", KT_SCALAR_FLOAT},      {"-.5", KT_SCALAR_FLOAT},    {"1.", KT_SCALAR_FLOAT},
        {"1e3", KT_SCALAR_FLOAT},      {"1.0e-2", KT_SCALAR_FLOAT}, {"2E+5", KT_SCALAR_FLOAT},
        {".inf", KT_SCALAR_FLOAT},     {"-.Inf", KT_SCALAR_FLOAT},  {".NaN", KT_SCALAR_FLOAT},
        {"-.nan", KT_SCALAR_STRING},   {".", KT_SCALAR_STRING},     {"1e", KT_SCALAR_STRING},
        {"e3", KT_SCALAR_STRING},      {"1.2.3", KT_SCALAR_STRING}, {"\"12\"", KT_SCALAR_STRING},
        {"|\n  12", KT_SCALAR_STRING}, {"bf16", KT_SCALAR_STRING},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kt_scalar_type t = type_of(cases[i].text);
        if (t != cases[i].type)
            fail_msg("'%s' resolved to %d, expected %d", cases[i].text, t, cases[i].type);
    }
}

/* Loads "v: TEXT" and returns the tree; *v is the value node. */
static kt_node *load_value(const char *text, const kt_node **v)
{
    char doc[128];
    snprintf(doc, sizeof(doc), "v: %s\n", text);
    kt_diag d;
    kt_node *root = load(&d, doc);
    kt_diag_free(&d);
    assert_non_null(root);
    *v = kt_node_get(root, "v");
    return root;
}

/* kt_node_int/double on the value of "v: TEXT"; returns their result code. */
static int int_of(const char *text, int64_t *out)
{
    const kt_node *v;
    kt_node *root = load_value(text, &v);
    int rc = kt_node_int(v, out);
    kt_node_free(root);
    return rc;
}

static int double_of(const char *text, double *out)
{
    const kt_node *v;
    kt_node *root = load_value(text, &v);
    int rc = kt_node_double(v, out);
    kt_node_free(root);
    return rc;
}

/* Resolves 'text' as the single value of a one-key document. */
static kt_scalar_type type_of(const char *text)
{
    const kt_node *v;
    kt_node *root = load_value(text, &v);
    kt_scalar_type t = kt_node_scalar_type(v);
    kt_node_free(root);
    return t;
}

static void test_int_conversion(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_int_equal(int_of("9223372036854775807", &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(int_of("-9223372036854775808", &v), 0);
    assert_true(v == INT64_MIN);
    assert_int_equal(int_of("9223372036854775808", &v), -1);
    assert_int_equal(int_of("-9223372036854775809", &v), -1);
    assert_int_equal(int_of("99999999999999999999999", &v), -1);
    assert_int_equal(int_of("0x7fffffffffffffff", &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(int_of("0x8000000000000000", &v), -1);
    assert_int_equal(int_of("0o17", &v), 0);
    assert_int_equal(v, 15);
    assert_int_equal(int_of("0x1F", &v), 0);
    assert_int_equal(v, 31);
    assert_int_equal(int_of("+42", &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(int_of("-7", &v), 0);
    assert_int_equal(v, -7);
    /* JSON Schema's integers include 4.0; fractions and non-numbers are not */
    assert_int_equal(int_of("4.0", &v), 0);
    assert_int_equal(v, 4);
    assert_int_equal(int_of("1e3", &v), 0);
    assert_int_equal(v, 1000);
    assert_int_equal(int_of("4.5", &v), -1);
    assert_int_equal(int_of("1e19", &v), -1);
    assert_int_equal(int_of(".inf", &v), -1);
    assert_int_equal(int_of("'4'", &v), -1);
    assert_int_equal(int_of("four", &v), -1);
    assert_int_equal(int_of("true", &v), -1);
    assert_int_equal(kt_node_int(NULL, &v), -1);
}

static void test_double_conversion(void **state)
{
    (void)state;
    double d = 0;
    assert_int_equal(double_of("1.0e-2", &d), 0);
    assert_true(d == 1.0e-2);
    assert_int_equal(double_of("-3", &d), 0);
    assert_true(d == -3.0);
    assert_int_equal(double_of("0x10", &d), 0);
    assert_true(d == 16.0);
    assert_int_equal(double_of("1e308", &d), 0);
    assert_int_equal(double_of("1e999", &d), -1);
    assert_int_equal(double_of("-1e999", &d), -1);
    assert_int_equal(double_of("1e-400", &d), 0);
    assert_true(d >= 0 && d < 1e-300);
    assert_int_equal(double_of(".inf", &d), 0);
    assert_true(isinf(d) && d > 0);
    assert_int_equal(double_of("-.INF", &d), 0);
    assert_true(isinf(d) && d < 0);
    assert_int_equal(double_of(".nan", &d), 0);
    assert_true(isnan(d));
    assert_int_equal(double_of("five", &d), -1);
    assert_int_equal(double_of("\"1.5\"", &d), -1);
    assert_int_equal(double_of("null", &d), -1);
}

static void test_documents(void **state)
{
    (void)state;
    expect_error("a: 1\n---\nb: 2\n", 2, 1, "expected one YAML document, found a second one");
    expect_error("", 0, 0, "empty document");
    expect_error("# only a comment\n", 0, 0, "empty document");
    expect_error("---\n...\n", 0, 0, "empty document");
    expect_error("~\n", 0, 0, "empty document");
    kt_diag d;
    kt_node *root = load(&d, "--- \na: 1\n...\n");
    assert_non_null(root);
    kt_node_free(root);
    kt_diag_free(&d);
    /* a non-scalar key is reported, not crashed on */
    expect_error("? [a, b]\n: 1\n", 1, 3, "mapping keys must be scalars");
}

static void test_to_json(void **state)
{
    (void)state;
    kt_diag d;
    kt_node *root = load(&d, "s: 'x'\ni: 0x10\nf: 1.5e0\nb: false\nn: ~\nl: [1, two]\n"
                             "m: {k: 7}\nbig: 18446744073709551616\n");
    cJSON *json = kt_node_to_json(root);
    char *text = cJSON_PrintUnformatted(json);
    assert_string_equal(text, "{\"s\":\"x\",\"i\":16,\"f\":1.5,\"b\":false,\"n\":null,"
                              "\"l\":[1,\"two\"],\"m\":{\"k\":7},\"big\":1.8446744073709552e+19}");
    free(text);
    cJSON_Delete(json);
    kt_node_free(root);
    kt_diag_free(&d);
}

/* A small xorshift generator, so failures reproduce. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Loads 'len' bytes; the only requirements are: no crash, and a tree exactly when no error
 * was reported. AddressSanitizer builds (KT_SANITIZE=ON) turn leaks and overreads into
 * failures. */
static void load_any(const char *bytes, size_t len)
{
    kt_diag d;
    kt_diag_init(&d);
    kt_node *root = NULL;
    int rc = kt_yaml_load(&root, "fuzz.yaml", bytes, len, &d);
    assert_true(rc == 0 ? root != NULL && d.n_errors == 0 : root == NULL && d.n_errors > 0);
    if (root) {
        cJSON *json = kt_node_to_json(root);
        assert_non_null(json);
        cJSON_Delete(json);
    }
    kt_node_free(root);
    kt_diag_free(&d);
}

static void test_hostile_bytes(void **state)
{
    (void)state;
    static const char spec[] = "version: 1\n"
                               "name: ffd-decode\n"
                               "op: attention_decode\n"
                               "models: [llama-3.2-1b, {name: m, hidden: 64}]\n"
                               "base: &p {delta: 5.0, block: 128}\n"
                               "candidates:\n"
                               "  - name: \"ffd-d5\"\n"
                               "    params: *p\n"
                               "  - {name: 'x', params: {delta: .inf}}\n"
                               "thresholds:\n"
                               "  latency: {min_speedup: 1.05}\n"
                               "desc: |\n"
                               "  text\n";
    const size_t n = sizeof(spec) - 1;
    for (size_t cut = 0; cut <= n; cut++)
        load_any(spec, cut);
    uint64_t seed = 0x9e3779b97f4a7c15u;
    char buf[sizeof(spec)];
    static const char alphabet[] = "-:[]{},&*!|>'\"#?%@` \n\t0aY.\\\xc3\xff";
    for (int round = 0; round < 3000; round++) {
        memcpy(buf, spec, n);
        int edits = 1 + (int)(next_random(&seed) % 6);
        for (int e = 0; e < edits; e++) {
            size_t at = next_random(&seed) % n;
            buf[at] = alphabet[next_random(&seed) % (sizeof(alphabet) - 1)];
        }
        load_any(buf, n);
    }
    for (int round = 0; round < 2000; round++) {
        size_t len = next_random(&seed) % 96;
        for (size_t i = 0; i < len; i++)
            buf[i] = round % 2 ? (char)(next_random(&seed) & 0xff)
                               : alphabet[next_random(&seed) % (sizeof(alphabet) - 1)];
        load_any(buf, len);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marks_and_structure),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_merge_keys),
        cmocka_unit_test(test_alias_bomb),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_yaml11_booleans),
        cmocka_unit_test(test_tags),
        cmocka_unit_test(test_a_nul_in_a_string_is_an_error_not_a_cut),
        cmocka_unit_test(test_scalar_types),
        cmocka_unit_test(test_int_conversion),
        cmocka_unit_test(test_double_conversion),
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_to_json),
        cmocka_unit_test(test_hostile_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
