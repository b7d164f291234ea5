/* test_schema.c - the draft-07 subset over YAML nodes: each keyword passes and fails with
 * its exact message and place, paths through nesting, $ref, and oneOf/anyOf reporting. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "spec/schema.h"

#include <stdlib.h>
#include <string.h>

/* Validates YAML 'text' against JSON 'schema'; returns kt_schema_validate's result, with
 * the messages left in 'd' (caller frees). */
static int check(kt_diag *d, const char *schema, const char *text)
{
    cJSON *s = cJSON_Parse(schema);
    if (!s)
        fail_msg("test schema does not parse: %s", schema);
    kt_node *doc = NULL;
    kt_diag_init(d);
    if (kt_yaml_load(&doc, "s.yaml", text, strlen(text), d) != 0)
        fail_msg("test document does not load: %s", text);
    int rc = kt_schema_validate(s, doc, "s.yaml", d);
    assert_int_equal(rc, rc < 0 ? -1 : (int)d->n_errors);
    kt_node_free(doc);
    cJSON_Delete(s);
    return rc;
}

static void expect_valid(const char *schema, const char *text)
{
    kt_diag d;
    int rc = check(&d, schema, text);
    if (rc != 0)
        fail_msg("expected no violation, got %d: %s", rc, d.n ? d.items[0].message : "");
    kt_diag_free(&d);
}

/* Asserts exactly one violation, 'message' at 'line':'col'. */
static void expect_one(const char *schema, const char *text, int line, int col, const char *message)
{
    kt_diag d;
    int rc = check(&d, schema, text);
    if (rc != 1)
        fail_msg("expected 1 violation, got %d (first: %s)", rc, d.n ? d.items[0].message : "");
    assert_string_equal(d.items[0].message, message);
    assert_string_equal(d.items[0].file, "s.yaml");
    assert_int_equal(d.items[0].line, line);
    assert_int_equal(d.items[0].col, col);
    kt_diag_free(&d);
}

static void test_type(void **state)
{
    (void)state;
    const char *s = "{\"type\": \"object\", \"properties\": {"
                    "\"delta\": {\"type\": \"number\"}, \"n\": {\"type\": \"integer\"},"
                    "\"s\": {\"type\": \"string\"}, \"b\": {\"type\": \"boolean\"},"
                    "\"z\": {\"type\": \"null\"}, \"l\": {\"type\": \"array\"},"
                    "\"either\": {\"type\": [\"integer\", \"string\"]}}}";
    expect_valid(s, "delta: 5\nn: 4.0\ns: '5'\nb: false\nz: ~\nl: []\neither: x\n");
    expect_valid(s, "delta: -.inf\nn: -3\neither: 7\n");
    expect_one(s, "delta: five\n", 1, 8, "delta: expected number, got string \"five\"");
    expect_one(s, "n: 4.5\n", 1, 4, "n: expected integer, got number 4.5");
    expect_one(s, "n: \"4\"\n", 1, 4, "n: expected integer, got string \"4\"");
    expect_one(s, "s: 5\n", 1, 4, "s: expected string, got integer 5");
    expect_one(s, "b: yes please\n", 1, 4, "b: expected boolean, got string \"yes please\"");
    expect_one(s, "z: 0\n", 1, 4, "z: expected null, got integer 0");
    expect_one(s, "l: {a: 1}\n", 1, 4, "l: expected array, got object");
    expect_one(s, "either: 1.5\n", 1, 9, "either: expected integer or string, got number 1.5");
    expect_one(s, "- 1\n", 1, 1, "expected object, got array");
}

static void test_nested_paths(void **state)
{
    (void)state;
    const char *s = "{\"properties\": {\"candidates\": {\"items\": {\"properties\": {"
                    "\"params\": {\"properties\": {\"delta\": {\"type\": \"number\"}}}}}}}}";
    expect_one(s,
               "candidates:\n"
               "  - name: a\n"
               "    params: {delta: 5.0}\n"
               "  - name: b\n"
               "    params:\n"
               "      delta: five\n",
               6, 14, "candidates[1].params.delta: expected number, got string \"five\"");
    /* every violation is reported, each once */
    kt_diag d;
    assert_int_equal(check(&d, s, "candidates: [{params: {delta: p}}, {params: {delta: q}}]\n"), 2);
    assert_string_equal(d.items[1].message,
                        "candidates[1].params.delta: expected number, got string \"q\"");
    kt_diag_free(&d);
}

static void test_enum_const(void **state)
{
    (void)state;
    const char *s = "{\"properties\": {\"dtype\": {\"enum\": [\"fp32\", \"fp16\", \"bf16\"]},"
                    "\"n\": {\"enum\": [1, 2, null]}, \"v\": {\"const\": 1}}}";
    expect_valid(s, "dtype: bf16\nn: 1.0\nv: 1\n");
    expect_valid(s, "n: ~\n");
    expect_one(s, "dtype: fp64\n", 1, 8, "dtype: expected one of fp32, fp16, bf16, got \"fp64\"");
    expect_one(s, "dtype: fp31\n", 1, 8,
               "dtype: expected one of fp32, fp16, bf16, got \"fp31\"; did you mean 'fp32'?");
    expect_one(s, "n: '1'\n", 1, 4, "n: expected one of 1, 2, null, got \"1\"");
    expect_one(s, "n: true\n", 1, 4, "n: expected one of 1, 2, null, got true");
    expect_one(s, "v: 2\n", 1, 4, "v: expected 1, got 2");
    expect_one(s, "v: [1]\n", 1, 4, "v: expected 1, got an array");
}

static void test_required_and_unknown_keys(void **state)
{
    (void)state;
    const char *s = "{\"properties\": {"
                    "\"thresholds\": {\"properties\": {\"latency\": {\"type\": \"object\","
                    "  \"required\": [\"min_speedup\"]}}},"
                    "\"trials\": {\"additionalProperties\": false, \"properties\": {"
                    "  \"warmup\": {}, \"min_repetitions\": {}}},"
                    "\"params\": {\"additionalProperties\": {\"type\": \"number\"}}}}";
    expect_valid(s, "thresholds: {latency: {min_speedup: 1.05}}\ntrials: {warmup: 3}\n"
                    "params: {a: 1, b: 2.5}\n");
    expect_one(s, "thresholds:\n  latency:\n    confidence: 0.95\n", 3, 5,
               "thresholds.latency: missing required key 'min_speedup'");
    expect_one(s, "trials:\n  warmup: 3\n  warmpu: 3\n", 3, 3,
               "trials: unknown key 'warmpu'; did you mean 'warmup'?");
    expect_one(s, "trials: {colour: red}\n", 1, 10, "trials: unknown key 'colour'");
    expect_one(s, "params: {a: 1, b: x}\n", 1, 19, "params.b: expected number, got string \"x\"");
}

static void test_numbers(void **state)
{
    (void)state;
    const char *s = "{\"properties\": {\"batch_sizes\": {\"items\": {\"type\": \"integer\","
                    "\"exclusiveMinimum\": 0, \"maximum\": 4096}},"
                    "\"conf\": {\"minimum\": 0.5, \"exclusiveMaximum\": 1}}}";
    expect_valid(s, "batch_sizes: [1, 4096]\nconf: 0.5\n");
    expect_valid(s, "conf: 0.999\n");
    expect_one(s, "batch_sizes: [1, 0]\n", 1, 18, "batch_sizes[1]: must be > 0, got 0");
    expect_one(s, "batch_sizes: [4097]\n", 1, 15, "batch_sizes[0]: must be <= 4096, got 4097");
    expect_one(s, "conf: 0.25\n", 1, 7, "conf: must be >= 0.5, got 0.25");
    expect_one(s, "conf: 1.0\n", 1, 7, "conf: must be < 1, got 1.0");
    /* bounds apply to numbers only; other types pass them */
    expect_valid(s, "conf: high\n");
}

static void test_strings(void **state)
{
    (void)state;
    const char *s = "{\"properties\": {\"name\": {\"pattern\": \"^[a-z0-9._-]+$\"},"
                    "\"short\": {\"minLength\": 2, \"maxLength\": 4},"
                    "\"tag\": {\"pattern\": \"^v\\\\d+(\\\\.\\\\d+)?$\"},"
                    "\"word\": {\"pattern\": \"^[\\\\w-]+\\\\s?$\"}}}";
    expect_valid(s, "name: ab.c\nshort: abcd\ntag: v1.25\nword: a_b-c \n");
    expect_valid(s, "short: ab\n");
    expect_one(s, "name: \"My Exp\"\n", 1, 7, "name: \"My Exp\" does not match ^[a-z0-9._-]+$");
    expect_one(s, "short: a\n", 1, 8, "short: \"a\" is shorter than 2 characters");
    expect_one(s, "short: abcde\n", 1, 8, "short: \"abcde\" is longer than 4 characters");
    expect_one(s, "tag: v1.x\n", 1, 6, "tag: \"v1.x\" does not match ^v\\d+(\\.\\d+)?$");
    expect_one(s, "word: a+b\n", 1, 7, "word: \"a+b\" does not match ^[\\w-]+\\s?$");
    /* length counts characters, not bytes */
    const char *u = "{\"maxLength\": 2, \"minLength\": 2}";
    expect_valid(u, "\"\xc3\xa9\xc3\xa9\"\n");
}

static void test_arrays(void **state)
{
    (void)state;
    const char *s = "{\"properties\": {\"l\": {\"minItems\": 1, \"maxItems\": 3,"
                    "\"uniqueItems\": true}, \"t\": {\"items\": [{\"type\": \"string\"},"
                    "{\"type\": \"integer\"}]}}}";
    expect_valid(s, "l: [1, '1', true]\n");
    expect_valid(s, "l: [{a: 1, b: 2}, {a: 1, b: 3}]\nt: [x, 1, anything]\n");
    expect_one(s, "l: []\n", 1, 4, "l: expected at least 1 item, got 0");
    expect_one(s, "l: [1, 2, 3, 4]\n", 1, 4, "l: expected at most 3 items, got 4");
    expect_one(s, "l: [4, 8, 4.0]\n", 1, 11, "l[2]: duplicate of item [0]");
    expect_one(s, "l: [{a: 1, b: 2}, {b: 2, a: 1}]\n", 1, 19, "l[1]: duplicate of item [0]");
    expect_one(s, "l: [x, \"x\"]\n", 1, 8, "l[1]: duplicate of item [0]");
    expect_one(s, "t: [1, 1]\n", 1, 5, "t[0]: expected string, got integer 1");
}

static void test_refs(void **state)
{
    (void)state;
    const char *s = "{\"definitions\": {\"pos\": {\"type\": \"integer\", \"minimum\": 1},"
                    "\"a~b/c\": {\"type\": \"string\"}},"
                    "\"properties\": {\"n\": {\"$ref\": \"#/definitions/pos\", \"type\": "
                    "\"string\"}, \"w\": {\"$ref\": \"#/definitions/a~0b~1c\"},"
                    "\"self\": {\"$ref\": \"#\"}}}";
    /* draft-07 ignores the siblings of $ref: "type": "string" does not apply */
    expect_valid(s, "n: 3\nw: x\nself: {n: 1, self: {w: z}}\n");
    expect_one(s, "n: 0\n", 1, 4, "n: must be >= 1, got 0");
    expect_one(s, "self: {self: {n: x}}\n", 1, 18,
               "self.self.n: expected integer, got string \"x\"");
    kt_diag d;
    assert_int_equal(
        check(&d, "{\"properties\": {\"n\": {\"$ref\": \"#/definitions/nope\"}}}", "n: 1\n"), -1);
    assert_string_equal(d.items[0].message,
                        "invalid schema: unresolvable $ref '#/definitions/nope'");
    kt_diag_free(&d);
    assert_int_equal(check(&d, "{\"$ref\": \"#\"}", "n: 1\n"), -1);
    kt_diag_free(&d);
    assert_int_equal(check(&d, "{\"type\": \"integr\"}", "n: 1\n"), -1);
    assert_string_equal(d.items[0].message, "invalid schema: unknown type \"integr\"");
    kt_diag_free(&d);
    assert_int_equal(check(&d, "{\"pattern\": \"[\\\\-]\"}", "x\n"), -1);
    kt_diag_free(&d);
}

static const char *const models_schema =
    "{\"definitions\": {\"inline_model\": {\"type\": \"object\", \"required\": [\"name\", "
    "\"hidden\"], \"properties\": {\"name\": {\"type\": \"string\"}, \"hidden\": "
    "{\"type\": \"integer\", \"minimum\": 1}}, \"additionalProperties\": false}},"
    "\"properties\": {\"models\": {\"items\": {\"oneOf\": [{\"type\": \"string\"},"
    "{\"$ref\": \"#/definitions/inline_model\"}]}},"
    "\"order\": {\"oneOf\": [{\"const\": \"random\"}, {\"const\": \"alternate\"}]},"
    "\"threads\": {\"anyOf\": [{\"const\": 0}, {\"type\": \"integer\", \"minimum\": 2}]},"
    "\"both\": {\"oneOf\": [{\"type\": \"integer\"}, {\"minimum\": 0}]}}}";

static void test_one_of_any_of(void **state)
{
    (void)state;
    const char *s = models_schema;
    expect_valid(s, "models: [llama, {name: m, hidden: 64}]\norder: alternate\n"
                    "threads: 0\nboth: -1\n");
    expect_valid(s, "threads: 8\nboth: 0.5\n");
    /* no branch takes an integer: a type error naming the branches' types */
    expect_one(s, "models: [5]\n", 1, 10, "models[0]: expected string or object, got integer 5");
    /* the object branch is the one meant: its own errors, at their own places */
    expect_one(s, "models:\n  - name: m\n    hidden: 0\n", 3, 13,
               "models[0].hidden: must be >= 1, got 0");
    expect_one(s, "models: [{name: m}]\n", 1, 10, "models[0]: missing required key 'hidden'");
    expect_one(s, "models: [{name: m, hiden: 3, hidden: 3}]\n", 1, 20,
               "models[0]: unknown key 'hiden'; did you mean 'hidden'?");
    /* branches of the same type: a summary of what would do */
    expect_one(s, "order: randm\n", 1, 8,
               "order: expected one of: \"random\", \"alternate\"; got \"randm\"");
    expect_one(s, "threads: 1\n", 1, 10, "threads: expected one of: 0, integer; got 1");
    expect_one(s, "threads: many\n", 1, 10, "threads: expected integer, got string \"many\"");
    expect_one(s, "both: 3\n", 1, 7,
               "both: matches more than one of the allowed forms (integer and a schema)");
}

static void test_all_of_not_and_boolean_schemas(void **state)
{
    (void)state;
    const char *s = "{\"properties\": {"
                    "\"a\": {\"allOf\": [{\"type\": \"integer\"}, {\"maximum\": 9}]},"
                    "\"b\": {\"not\": {\"const\": \"auto\"}},"
                    "\"c\": {\"not\": {\"required\": [\"x\"]}},"
                    "\"d\": false, \"e\": true}}";
    expect_valid(s, "a: 9\nb: cpu\nc: {y: 1}\ne: [anything]\n");
    expect_one(s, "a: 10\n", 1, 4, "a: must be <= 9, got 10");
    expect_one(s, "b: auto\n", 1, 4, "b: must not be \"auto\"");
    expect_one(s, "c: {x: 1}\n", 1, 4, "c: matches the schema under 'not'");
    expect_one(s, "d: 1\n", 1, 4, "d: no value is allowed here");
    /* unknown keywords are annotations and change nothing */
    expect_valid("{\"title\": \"t\", \"description\": \"d\", \"default\": 1, \"$comment\": \"c\","
                 "\"examples\": [2], \"$schema\": \"http://json-schema.org/draft-07/schema#\"}",
                 "x: 1\n");
}

static void test_counts_every_violation(void **state)
{
    (void)state;
    const char *s = "{\"type\": \"object\", \"required\": [\"version\", \"name\"],"
                    "\"additionalProperties\": false, \"properties\": {\"version\": {\"const\": 1},"
                    "\"name\": {\"type\": \"string\"}, \"dtype\": {\"enum\": [\"fp32\"]}}}";
    kt_diag d;
    assert_int_equal(check(&d, s, "version: 2\ndtype: fp16\nextra: 1\n"), 4);
    kt_diag_sort(&d);
    assert_string_equal(d.items[0].message, "missing required key 'name'");
    assert_int_equal(d.items[0].line, 1);
    assert_int_equal(d.items[0].col, 1);
    assert_string_equal(d.items[1].message, "version: expected 1, got 2");
    assert_string_equal(d.items[2].message, "dtype: expected one of fp32, got \"fp16\"");
    assert_string_equal(d.items[3].message, "unknown key 'extra'");
    kt_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type),
        cmocka_unit_test(test_nested_paths),
        cmocka_unit_test(test_enum_const),
        cmocka_unit_test(test_required_and_unknown_keys),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_refs),
        cmocka_unit_test(test_one_of_any_of),
        cmocka_unit_test(test_all_of_not_and_boolean_schemas),
        cmocka_unit_test(test_counts_every_violation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
