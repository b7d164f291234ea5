/* test_writers.c - the table of output formats (report/writers.c): every row is found by its
 * name and has a writer, an unknown name is an error, the CI options name their rows, nothing
 * asked for reads no archive, and a row writes what its function writes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "report/writers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"text", "json",    "state",        "junit",       "markdown",
                                    "html", "history", "history-json", "history-html"};

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const kt_writer *w = kt_writer_find(names[i]);
        assert_non_null(w);
        assert_string_equal(w->name, names[i]);
        assert_non_null(w->write);
    }
    assert_string_equal(kt_writer_find("html")->extension, "html");
    assert_null(kt_writer_find("yaml"));
    assert_int_equal(kt_write("yaml", stdout, &(kt_output){0}), -1);
    assert_string_equal(kt_error_last(), "no output format 'yaml'");
}

static void test_ci_files(void **state)
{
    (void)state;
    kt_ci_files ci = {0};
    assert_int_equal(kt_ci_files_ask(&ci, "--json", "x.json"), 0);
    assert_int_equal(kt_ci_files_write(&ci, "/nonexistent/archive"), 0); /* nothing asked */
    assert_int_equal(kt_ci_files_ask(&ci, "--junit", "out.xml"), 1);
    assert_int_equal(kt_ci_files_ask(&ci, "--markdown", "out.md"), 1);
    size_t asked = 0;
    for (size_t i = 0; i < KT_WRITERS_MAX; i++)
        asked += ci.path[i] != NULL;
    assert_int_equal(asked, 2);
    assert_int_equal(kt_ci_files_write(&ci, "/nonexistent/archive"), -1);
}

/* What 'fn' wrote to a temporary file, NUL-terminated (the caller frees it). */
static char *written(int (*fn)(FILE *, const void *), const void *arg)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fn(f, arg), 0);
    long n = ftell(f);
    char *text = calloc((size_t)n + 1, 1);
    rewind(f);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return text;
}

static int text_row(FILE *f, const void *arg)
{
    return kt_write("text", f, arg);
}

static int print_summary(FILE *f, const void *arg)
{
    const kt_output *o = arg;
    kt_print_summary(f, o->run, o->facts); /* a file is no terminal: no colour either way */
    return 0;
}

static int junit_row(FILE *f, const void *arg)
{
    return kt_write("junit", f, arg);
}

static void test_rows_write_their_format(void **state)
{
    (void)state;
    kt_run_result run;
    memset(&run, 0, sizeof(run));
    kt_summary_facts facts;
    kt_summary_facts_init(&facts, "baseline", "all", 1.05, 0.95);
    kt_output o = {.run = &run, .facts = &facts};
    char *a = written(text_row, &o), *b = written(print_summary, &o);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "overall: "));
    free(a);
    free(b);

    kt_report_input in;
    memset(&in, 0, sizeof(in));
    in.doc = cJSON_Parse("{\"spec\": {\"parsed\": {\"name\": \"demo\"}}}");
    o = (kt_output){.archives = &in, .n_archives = 1};
    char *xml = written(junit_row, &o);
    assert_non_null(strstr(xml, "<testsuite name=\"demo\" tests=\"0\" failures=\"0\""));
    free(xml);
    cJSON_Delete(in.doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_ci_files),
        cmocka_unit_test(test_rows_write_their_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
