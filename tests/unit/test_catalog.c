/* test_catalog.c - the embedded model catalog: every model of docs/reference.md with its figures,
 * lookups, and that loading reports nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "spec/catalog.h"

#include <string.h>

/* The table of docs/reference.md (each model's config.json). */
static const kt_model expected[] = {
    {"llama-3.1-8b", 4096, 32, 8, 128, 14336, 32},
    {"llama-3.1-70b", 8192, 64, 8, 128, 28672, 80},
    {"llama-3.2-1b", 2048, 32, 8, 64, 8192, 16},
    {"qwen2.5-0.5b", 896, 14, 2, 64, 4864, 24},
    {"qwen2.5-7b", 3584, 28, 4, 128, 18944, 28},
    {"qwen2.5-72b", 8192, 64, 8, 128, 29568, 80},
    {"mistral-7b-v0.3", 4096, 32, 8, 128, 14336, 32},
    {"gemma-2-9b", 3584, 16, 8, 256, 14336, 42},
};
#define N_EXPECTED (sizeof(expected) / sizeof(expected[0]))

static void test_every_model_with_its_figures(void **state)
{
    (void)state;
    kt_catalog cat;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_catalog_load(&cat, &d), 0);
    assert_int_equal(d.n, 0);
    assert_int_equal(cat.n, N_EXPECTED);
    for (size_t i = 0; i < N_EXPECTED; i++) {
        const kt_model *m = &cat.models[i]; /* catalog order is the file's order */
        const kt_model *e = &expected[i];
        assert_string_equal(m->name, e->name);
        assert_int_equal(m->hidden, e->hidden);
        assert_int_equal(m->heads, e->heads);
        assert_int_equal(m->kv_heads, e->kv_heads);
        assert_int_equal(m->head_dim, e->head_dim);
        assert_int_equal(m->intermediate, e->intermediate);
        assert_int_equal(m->layers, e->layers);
        /* GQA: every model's heads split evenly over its KV heads */
        assert_int_equal(m->heads % m->kv_heads, 0);
    }
    kt_catalog_free(&cat);
    assert_null(cat.models);
    assert_int_equal(cat.n, 0);
    kt_diag_free(&d);
}

static void test_find(void **state)
{
    (void)state;
    kt_catalog cat;
    kt_diag d;
    kt_diag_init(&d);
    assert_int_equal(kt_catalog_load(&cat, &d), 0);
    const kt_model *m = kt_catalog_find(&cat, "gemma-2-9b");
    assert_non_null(m);
    assert_int_equal(m->head_dim, 256);
    assert_int_equal(kt_catalog_find(&cat, "qwen2.5-7b")->kv_heads, 4);
    assert_null(kt_catalog_find(&cat, "gemma-2-9"));
    assert_null(kt_catalog_find(&cat, ""));
    assert_null(kt_catalog_find(&cat, NULL));
    assert_null(kt_catalog_find(NULL, "gemma-2-9b"));
    kt_catalog_free(&cat);
    kt_catalog_free(&cat); /* freeing twice is harmless */
    kt_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_model_with_its_figures),
        cmocka_unit_test(test_find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
