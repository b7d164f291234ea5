/* test_worker.c - a point in a child process: the result that comes back through the pipe
 * equals the same point run in this process; a crashing candidate costs only its own verdict
 * (REJECT naming the signal and the step), a crashing baseline costs the point (an error,
 * every candidate INCONCLUSIVE); a hung candidate is killed; progress is forwarded; and
 * kt_point_seed depends on exactly the seed and the point id. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "arm/kernel/check.h"
#include "spec/matrix.h"
#include "measure/worker.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static kt_matrix matrix;

/* Baseline params 'base' and candidates 'cands' (YAML list items) on one sim point; also
 * expands the matrix into 'matrix'. */
static kt_spec *worker_spec(const char *base, const char *cands)
{
    char yaml[2048];
    snprintf(yaml, sizeof(yaml),
             "version: 1\nname: w\nop: synthetic\nbackend: sim\n"
             "batch_sizes: [2]\ncontext_lengths: [32]\n"
             "inputs: {distribution: uniform, seed: 11, sets: 2}\n"
             "baseline: {variant: lognormal, params: {%s}}\ncandidates:\n%s"
             "trials: {warmup: 1, min_repetitions: 10, max_repetitions: 30, order: random}\n",
             base, cands);
    kt_spec *spec = NULL;
    kt_diag diag;
    kt_diag_init(&diag);
    if (kt_spec_parse(&spec, "w.yaml", yaml, strlen(yaml), NULL, &diag) == 0)
        kt_matrix_expand(&matrix, spec, &diag);
    kt_diag_print(&diag, stderr);
    assert_int_equal(diag.n_errors, 0);
    kt_diag_free(&diag);
    return spec;
}

static void done_spec(kt_spec *spec)
{
    kt_matrix_free(&matrix);
    kt_spec_free(spec);
}

static kt_worker_options options(double hang_timeout_s)
{
    kt_worker_options o;
    memset(&o, 0, sizeof(o));
    o.backend = "sim";
    o.threads = 1;
    o.hang_timeout_s = hang_timeout_s;
    return o;
}

/* kt_worker_run_point with SIGSEGV at its default action: cmocka catches it in the test
 * process, and a forked worker would inherit that handler instead of dying. */
static int run_worker(kt_point_result *out, const kt_spec *spec, const kt_worker_options *opts)
{
    void (*previous)(int) = signal(SIGSEGV, SIG_DFL);
    int rc = kt_worker_run_point(out, spec, &matrix.points[0], opts);
    signal(SIGSEGV, previous);
    return rc;
}

static int progress_calls, progress_last[2];

static void count_progress(void *ctx, int reps, int max_reps)
{
    (void)ctx;
    progress_calls++;
    progress_last[0] = reps;
    progress_last[1] = max_reps;
}

static void test_point_seed(void **state)
{
    (void)state;
    kt_spec a, b;
    kt_point p, q;
    memset(&a, 0, sizeof(a));
    memset(&p, 0, sizeof(p));
    a.seed = 7;
    b = a;
    strcpy(p.id, "b1/t64");
    q = p;
    q.batch_size = 99; /* only the id identifies the point */
    assert_true(kt_point_seed(&a, &p) == kt_point_seed(&b, &q));
    strcpy(q.id, "b1/t65");
    assert_true(kt_point_seed(&a, &p) != kt_point_seed(&a, &q));
    b.seed = 8;
    assert_true(kt_point_seed(&a, &p) != kt_point_seed(&b, &p));
    /* trial.c derives a point's inputs and order coin from this same mix, so the sim's
     * durations (seeded with kt_point_seed in the worker) stay tied to them */
    assert_true(kt_point_seed(&a, &p) == kt_seed_mix(7, kt_hash_bytes("b1/t64", 6)));
}

/* Noisy durations: the pairs depend on the backend's seed, which must be the point seed. */
static void test_same_as_in_process(void **state)
{
    (void)state;
    kt_spec *spec = worker_spec("median_us: 100, spread: 0.3",
                                "  - {name: c, variant: lognormal, params: {median_us: 95, "
                                "spread: 0.3}}\n");
    const kt_point *point = &matrix.points[0];
    kt_worker_options opts = options(30);
    opts.on_progress = count_progress;
    progress_calls = 0;
    kt_point_result w, local;
    assert_int_equal(run_worker(&w, spec, &opts), 0);
    kt_backend *backend = NULL;
    assert_int_equal(kt_backend_open(&backend, "sim", 1, kt_point_seed(spec, point)), 0);
    assert_int_equal(kt_trial_run_point(&local, spec, point, backend, NULL), 0);
    kt_backend_close(backend);

    assert_string_equal(w.point.id, point->id);
    assert_string_equal(w.error, "");
    assert_int_equal(w.n_cands, 1);
    const kt_candidate_result *a = &w.cands[0], *b = &local.cands[0];
    assert_int_equal(a->n_pairs, b->n_pairs);
    assert_true(a->n_pairs >= 10);
    for (size_t i = 0; i < a->n_pairs; i++) {
        assert_true(a->pairs[i].base_ns == b->pairs[i].base_ns);
        assert_true(a->pairs[i].cand_ns == b->pairs[i].cand_ns);
        assert_int_equal(a->pairs[i].candidate_first, b->pairs[i].candidate_first);
    }
    assert_true(a->speedup == b->speedup && a->ci_low == b->ci_low && a->ci_high == b->ci_high);
    assert_int_equal(a->verdict, b->verdict);
    assert_string_equal(a->reasons[0], b->reasons[0]);
    /* progress went through the pipe, one message per look */
    assert_int_equal(progress_calls, a->looks);
    assert_true(progress_last[1] == 30 && progress_last[0] == (int)a->n_pairs);
    kt_point_result_free(&w);
    kt_point_result_free(&local);
    done_spec(spec);
}

static void test_candidate_crash(void **state)
{
    (void)state;
    kt_spec *spec =
        worker_spec("median_us: 100, spread: 0",
                    "  - {name: segv, variant: lognormal, params: {median_us: 10, fail: crash}}\n"
                    "  - {name: fine, variant: lognormal, params: {median_us: 80, spread: 0}}\n");
    kt_worker_options opts = options(30);
    kt_point_result r;
    assert_int_equal(run_worker(&r, spec, &opts), 0);
    assert_string_equal(r.error, "");
    assert_int_equal(r.n_cands, 2);
    const kt_candidate_result *segv = &r.cands[0];
    assert_string_equal(segv->arm.name, "segv");
    assert_int_equal(segv->verdict, KT_VERDICT_REJECT);
    assert_int_equal(segv->n_pairs, 0);
    if (!strstr(segv->reasons[0], "crashed with signal 11") ||
        !strstr(segv->reasons[0], "during correctness") ||
        !strstr(segv->reasons[0], matrix.points[0].id))
        fail_msg("reason: '%s'", segv->reasons[0]);
    assert_int_equal(r.cands[1].verdict, KT_VERDICT_KEEP);
    assert_true(fabs(r.cands[1].speedup - 1.25) < 1e-12);
    kt_point_result_free(&r);
    done_spec(spec);
}

static void test_baseline_crash(void **state)
{
    (void)state;
    kt_spec *spec = worker_spec("median_us: 100, fail: crash",
                                "  - {name: one, variant: lognormal, params: {median_us: 80}}\n"
                                "  - {name: two, variant: lognormal, params: {median_us: 70}}\n");
    kt_worker_options opts = options(30);
    kt_point_result r;
    assert_int_equal(run_worker(&r, spec, &opts), 0);
    if (!strstr(r.error, "baseline crashed with signal 11"))
        fail_msg("error: '%s'", r.error);
    assert_string_equal(r.point.id, matrix.points[0].id);
    assert_string_equal(r.stop_reason, "failed");
    assert_int_equal(r.n_cands, 2);
    for (int k = 0; k < 2; k++) {
        const kt_candidate_result *c = &r.cands[k];
        assert_string_equal(c->arm.name, k == 0 ? "one" : "two");
        assert_string_equal(c->arm.variant, "lognormal");
        assert_int_equal(c->verdict, KT_VERDICT_INCONCLUSIVE);
        assert_non_null(strstr(c->reasons[0], "not measured: baseline crashed"));
    }
    kt_point_result_free(&r);
    done_spec(spec);
}

/* A baseline that passes its checks and crashes in the timed pairs is a point error, not a
 * candidate's crash (each timed call names its arm before it runs). */
static void test_baseline_crash_in_pairs(void **state)
{
    (void)state;
    kt_spec *spec = worker_spec("median_us: 100, fail: crash, fail_after: 3",
                                "  - {name: one, variant: lognormal, params: {median_us: 80}}\n");
    kt_worker_options opts = options(30);
    kt_point_result r;
    assert_int_equal(run_worker(&r, spec, &opts), 0);
    if (!strstr(r.error, "baseline crashed with signal 11") ||
        !strstr(r.error, "during repetitions"))
        fail_msg("error: '%s'", r.error);
    assert_int_equal(r.cands[0].verdict, KT_VERDICT_INCONCLUSIVE);
    kt_point_result_free(&r);
    done_spec(spec);
}

/* A candidate that sleeps 1 s in each call says nothing for longer than the hang timeout. */
static void test_hung_candidate(void **state)
{
    (void)state;
    kt_spec *spec =
        worker_spec("median_us: 100, spread: 0",
                    "  - {name: slow, variant: lognormal, params: {sleep_us: 1000000}}\n"
                    "  - {name: fine, variant: lognormal, params: {median_us: 80, spread: 0}}\n");
    kt_worker_options opts = options(0.6);
    kt_point_result r;
    assert_int_equal(run_worker(&r, spec, &opts), 0);
    assert_string_equal(r.error, "");
    assert_int_equal(r.cands[0].verdict, KT_VERDICT_REJECT);
    if (!strstr(r.cands[0].reasons[0], "hung: no progress") ||
        !strstr(r.cands[0].reasons[0], "during correctness, killed"))
        fail_msg("reason: '%s'", r.cands[0].reasons[0]);
    assert_int_equal(r.cands[1].verdict, KT_VERDICT_KEEP);
    kt_point_result_free(&r);
    done_spec(spec);
}

static size_t frame(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = kt_worker_frame_line(out, cap, fmt, ap);
    va_end(ap);
    return n;
}

/* An error line longer than the old 256-byte buffer kept its text but lost its newline, so
 * the supervisor never saw the message; every frame is now one whole line. */
static void test_long_error_line_keeps_its_newline(void **state)
{
    (void)state;
    char msg[700], line[KT_WORKER_LINE_MAX];
    memset(msg, 'x', sizeof(msg) - 1);
    msg[sizeof(msg) - 1] = '\0';
    size_t n = frame(line, sizeof(line), "error %s\n", msg);
    assert_int_equal(n, strlen(line));
    assert_int_equal(n, 6 + 699 + 1);
    assert_int_equal(line[n - 1], '\n');
    assert_ptr_equal(strchr(line, '\n'), line + n - 1);

    char huge[3000];
    memset(huge, 'y', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    n = frame(line, sizeof(line), "error %s\n", huge);
    assert_int_equal(n, sizeof(line) - 1);
    assert_int_equal(line[n - 1], '\n');
    assert_ptr_equal(strchr(line, '\n'), line + n - 1);

    n = frame(line, sizeof(line), "error %s\n", "two\nlines");
    assert_string_equal(line, "error two lines\n");
}

int main(void)
{
    /* the crashes are intended: no core files */
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_point_seed),
        cmocka_unit_test(test_same_as_in_process),
        cmocka_unit_test(test_candidate_crash),
        cmocka_unit_test(test_baseline_crash),
        cmocka_unit_test(test_baseline_crash_in_pairs),
        cmocka_unit_test(test_hung_candidate),
        cmocka_unit_test(test_long_error_line_keeps_its_newline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
