/* test_schema_files.c - every spec file of the test corpora through the YAML and schema
 * stages (kt_yaml_load, then kt_schema_validate), nothing else.
 *
 * It writes one line per file, "SCHEMA SPEC accept|reject|yaml-error" (paths relative to the
 * source tree), to $KT_AGREEMENT_OUT, else $KT_BUILD_DIR/schema_agreement.txt.
 * tests/cli/test_schema_agreement.py runs this program and asks python3-jsonschema the
 * same question about every accept/reject line; the answers must agree.
 * Here it checks what holds whatever the schema says: good specs pass both stages, and the
 * keyword cases (ok-*, bad-*, yamlerr-*) get the answer their name promises. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "spec/schema.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_DIRS_MAX 4

static const struct {
    const char *schema;
    const char *dirs[SPEC_DIRS_MAX]; /* NULL-terminated; a missing folder is skipped */
} corpora[] = {
    {"schemas/experiment.schema.json",
     {"tests/specs/good", "tests/specs/bad", "tests/specs/schema_agreement/experiment", NULL}},
    {"tests/specs/schema_agreement/keywords.schema.json",
     {"tests/specs/schema_agreement/keywords", NULL}},
};

/* Reads a whole file; NULL when it cannot. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size + 1))) {
            *len = fread(buf, 1, (size_t)size, f);
            buf[*len] = '\0';
        }
    }
    fclose(f);
    return buf;
}

static int is_yaml(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 5 && strcmp(e->d_name + n - 5, ".yaml") == 0;
}

/* The answer for one spec: "accept", "reject" or "yaml-error". */
static const char *verdict(const cJSON *schema, const char *path, const char *shown)
{
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text)
        fail_msg("cannot read '%s'", path);
    kt_diag d;
    kt_diag_init(&d);
    kt_node *doc = NULL;
    const char *answer = "yaml-error";
    if (kt_yaml_load(&doc, shown, text, len, &d) == 0) {
        int n = kt_schema_validate(schema, doc, shown, &d);
        if (n < 0) {
            kt_diag_print(&d, stderr);
            fail_msg("the schema for '%s' is unusable", shown);
        }
        answer = n == 0 ? "accept" : "reject";
    }
    kt_diag_print(&d, stderr); /* shown by ctest --output-on-failure, for debugging */
    kt_node_free(doc);
    kt_diag_free(&d);
    free(text);
    return answer;
}

/* What the file's place promises, or NULL when only the agreement test can judge it. */
static const char *promised(const char *dir, const char *name)
{
    if (strcmp(dir, "tests/specs/good") == 0)
        return "accept";
    if (!strstr(dir, "schema_agreement/keywords"))
        return NULL;
    if (strncmp(name, "ok-", 3) == 0)
        return "accept";
    if (strncmp(name, "bad-", 4) == 0)
        return "reject";
    if (strncmp(name, "yamlerr-", 8) == 0)
        return "yaml-error";
    return NULL;
}

static void test_corpora(void **state)
{
    (void)state;
    const char *src = getenv("KT_SOURCE_DIR"), *out_path = getenv("KT_AGREEMENT_OUT");
    const char *build = getenv("KT_BUILD_DIR");
    if (!src)
        skip();
    char path[4096], default_out[4096];
    if (!out_path) {
        snprintf(default_out, sizeof(default_out), "%s/schema_agreement.txt", build ? build : ".");
        out_path = default_out;
    }
    FILE *out = fopen(out_path, "w");
    if (!out)
        fail_msg("cannot write '%s'", out_path);
    int wrong = 0, files = 0;
    for (size_t c = 0; c < sizeof(corpora) / sizeof(corpora[0]); c++) {
        snprintf(path, sizeof(path), "%s/%s", src, corpora[c].schema);
        size_t len = 0;
        char *text = read_file(path, &len);
        cJSON *schema = text ? cJSON_Parse(text) : NULL;
        free(text);
        if (!schema)
            fail_msg("cannot read the schema '%s'", path);
        for (int k = 0; k < SPEC_DIRS_MAX && corpora[c].dirs[k]; k++) {
            const char *dir = corpora[c].dirs[k];
            struct dirent **names = NULL;
            snprintf(path, sizeof(path), "%s/%s", src, dir);
            int n = scandir(path, &names, is_yaml, alphasort);
            for (int i = 0; i < n; i++) {
                char shown[1024];
                snprintf(shown, sizeof(shown), "%s/%s", dir, names[i]->d_name);
                snprintf(path, sizeof(path), "%s/%s", src, shown);
                const char *answer = verdict(schema, path, shown);
                const char *want = promised(dir, names[i]->d_name);
                fprintf(out, "%s %s %s\n", corpora[c].schema, shown, answer);
                if (want && strcmp(want, answer) != 0) {
                    fprintf(stderr, "%s: expected %s, got %s\n", shown, want, answer);
                    wrong++;
                }
                files++;
                free(names[i]);
            }
            free(names);
        }
        cJSON_Delete(schema);
    }
    assert_int_equal(fclose(out), 0);
    assert_true(files > 0);
    assert_int_equal(wrong, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpora),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
