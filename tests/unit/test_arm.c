/* test_arm.c - the table of kinds of arm (runner/arm/arm.c): every kind has the operations the
 * trial engine calls, declares what differs (numerics, clock, isolation, checks), and a spec's
 * arms are of the kind its op says. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "arm/arm.h"
#include "spec/command_spec.h"
#include "spec/service_spec.h"

#include <string.h>

static void every_kind_has_the_engines_operations(void **state)
{
    (void)state;
    size_t n = 0;
    for (const kt_arm_kind *k; (k = kt_arm_kind_at(n)); n++) {
        assert_non_null(k->name);
        assert_ptr_equal(kt_arm_kind_find(k->name), k);
        assert_non_null(k->open);
        assert_non_null(k->describe);
        assert_non_null(k->prepare);
        assert_non_null(k->call);
        assert_non_null(k->check);
        assert_non_null(k->release);
        assert_non_null(k->close);
        /* placements need a way to run on a state; a fixed clock needs its resolution */
        assert_true(!k->placements || k->place);
        assert_true(k->clock != KT_ARM_CLOCK_CHILD || k->tick_ns > 0);
        /* the profile pass reads the meters that the kind says it reports */
        assert_true(!k->profile || (k->usage & KT_ARM_USAGE_COUNTERS));
    }
    assert_int_equal(n, 3);
    assert_null(kt_arm_kind_find("python"));
}

static void the_kinds_declare_what_differs(void **state)
{
    (void)state;
    const kt_arm_kind *kernel = kt_arm_kind_find("kernel"), *command = kt_arm_kind_find("command");
    assert_non_null(kernel);
    assert_non_null(command);
    /* kernels: a float64 reference, the backend's timer, a forked worker, each call checked */
    assert_int_equal(kernel->numerics, KT_ARM_NUMERICS_FLOAT64);
    assert_int_equal(kernel->clock, KT_ARM_CLOCK_BACKEND);
    assert_true(kernel->isolated && kernel->needs_backend && kernel->checks_each_call);
    assert_true(kernel->placements && kernel->grouped && kernel->shuffles);
    /* commands: outputs against the baseline's, the wall clock of a child, in ktrial itself */
    assert_int_equal(command->numerics, KT_ARM_NUMERICS_OUTPUT);
    assert_int_equal(command->clock, KT_ARM_CLOCK_CHILD);
    assert_true(command->tick_ns == 1.0);
    assert_false(command->isolated || command->needs_backend || command->checks_each_call);
    assert_true(command->usage & KT_ARM_USAGE_RSS);
    assert_non_null(command->calibrate);
    assert_non_null(command->metric);
    assert_null(kernel->metric);
    /* services: servers under load in ktrial itself, their answers compared as each round
     * ends (no check after a pair), their samples times (no metric of their own) */
    const kt_arm_kind *service = kt_arm_kind_find("service");
    assert_non_null(service);
    assert_int_equal(service->clock, KT_ARM_CLOCK_CHILD);
    assert_false(service->isolated || service->needs_backend || service->placements);
    assert_true(service->usage & KT_ARM_USAGE_RSS);
    assert_null(service->metric);
}

static void a_specs_arms_are_of_its_ops_kind(void **state)
{
    (void)state;
    kt_spec spec;
    kt_command_spec cs;
    memset(&spec, 0, sizeof(spec));
    memset(&cs, 0, sizeof(cs));
    assert_ptr_equal(kt_arm_kind_of(&spec), kt_arm_kind_find("kernel"));
    snprintf(cs.metric, sizeof(cs.metric), "tokens_per_s");
    cs.higher = 1;
    spec.command = &cs;
    const kt_arm_kind *k = kt_arm_kind_of(&spec);
    assert_ptr_equal(k, kt_arm_kind_find("command"));
    int higher = 0;
    assert_string_equal(k->metric(&spec, &higher), "tokens_per_s");
    assert_int_equal(higher, 1);
    kt_service_spec ss;
    memset(&ss, 0, sizeof(ss));
    spec.service = &ss; /* a service spec's arms are servers, whatever else it holds */
    assert_ptr_equal(kt_arm_kind_of(&spec), kt_arm_kind_find("service"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kind_has_the_engines_operations),
        cmocka_unit_test(the_kinds_declare_what_differs),
        cmocka_unit_test(a_specs_arms_are_of_its_ops_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
