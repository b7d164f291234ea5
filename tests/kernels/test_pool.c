/* test_pool.c - the CPU kernels' thread pool: every item runs exactly once on a slot below the
 * thread count, for any item count against any thread count; calls from two threads at once
 * are serialised; a fork child gets workers of its own; and the run-queue wait is readable. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cpu/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct count_job {
    _Atomic int *hits;
    _Atomic int bad_slot;
    _Atomic int in_slot[64]; /* items running on each slot right now */
    _Atomic int overlap;     /* a slot ran two items at once */
    int threads;
} count_job;

static void count_item(void *arg, int64_t i, int slot)
{
    count_job *j = arg;
    if (slot < 0 || slot >= j->threads) {
        atomic_store(&j->bad_slot, 1);
        return;
    }
    if (atomic_fetch_add(&j->in_slot[slot], 1) != 0)
        atomic_store(&j->overlap, 1);
    for (volatile int spin = 0; spin < (int)(i % 7) * 50; spin++)
        ;
    atomic_fetch_add(&j->hits[i], 1);
    atomic_fetch_sub(&j->in_slot[slot], 1);
}

static void check_once(int threads, int64_t n)
{
    count_job j;
    memset(&j, 0, sizeof(j));
    j.threads = threads;
    j.hits = calloc((size_t)(n > 0 ? n : 1), sizeof(*j.hits));
    assert_non_null(j.hits);
    kt_pool_for(threads, n, count_item, &j);
    for (int64_t i = 0; i < n; i++)
        if (atomic_load(&j.hits[i]) != 1)
            fail_msg("threads %d n %lld: item %lld ran %d times", threads, (long long)n,
                     (long long)i, atomic_load(&j.hits[i]));
    assert_int_equal(atomic_load(&j.bad_slot), 0);
    assert_int_equal(atomic_load(&j.overlap), 0);
    free(j.hits);
}

static void test_every_item_once(void **state)
{
    (void)state;
    static const int threads[] = {1, 2, 3, 4, 8, 17};
    static const int64_t counts[] = {0, 1, 2, 3, 7, 64, 1000, 100003};
    for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            check_once(threads[t], counts[c]);
    /* many short jobs back to back: a late worker must never run an item of the next job */
    for (int r = 0; r < 2000; r++)
        check_once(2 + r % 3, 1 + r % 9);
}

static void *caller(void *arg)
{
    (void)arg;
    for (int r = 0; r < 300; r++)
        check_once(3, 1 + r % 50);
    return NULL;
}

static void test_concurrent_callers(void **state)
{
    (void)state;
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, NULL, caller, NULL), 0);
    assert_int_equal(pthread_create(&b, NULL, caller, NULL), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
}

/* The runner forks a worker per point after the parent may have used the pool. */
static void test_fork_child(void **state)
{
    (void)state;
    check_once(4, 100);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        count_job j;
        memset(&j, 0, sizeof(j));
        j.threads = 4;
        j.hits = calloc(1000, sizeof(*j.hits));
        kt_pool_for(4, 1000, count_item, &j);
        for (int i = 0; i < 1000; i++)
            if (atomic_load(&j.hits[i]) != 1)
                _exit(1);
        _exit(atomic_load(&j.bad_slot) ? 2 : 0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Per slot: how many CPUs the thread that ran an item may run on, and which CPU that was. */
typedef struct affinity_seen {
    _Atomic int cpus[64];
    _Atomic int allowed[64];
} affinity_seen;

static void record_affinity(void *ctx, int64_t i, int slot)
{
    affinity_seen *s = ctx;
    cpu_set_t set;
    (void)i;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        atomic_store(&s->allowed[slot], CPU_COUNT(&set));
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                atomic_store(&s->cpus[slot], c);
    }
    for (volatile int k = 0; k < 20000; k++) /* long enough for every worker to take a slot */
        ;
}

/* threads_affinity compact: every participant is pinned to one CPU, the caller and the workers
 * to different CPUs while there are CPUs enough; none gives them back the whole allowed set.
 * Run in a fork child so that pinning the caller does not outlive the test. */
static void test_affinity_compact_and_none(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int n_cpus = kt_pool_set_affinity(KT_POOL_AFFINITY_COMPACT);
        if (n_cpus <= 0)
            _exit(2);
        int threads = n_cpus < 4 ? n_cpus : 4;
        affinity_seen s;
        memset(&s, 0, sizeof(s));
        kt_pool_for(threads, 4000, record_affinity, &s);
        for (int a = 0; a < threads; a++) {
            if (s.allowed[a] == 0)
                continue; /* that slot ran nothing */
            if (s.allowed[a] != 1)
                _exit(3);
            for (int b = 0; b < a; b++)
                if (s.allowed[b] == 1 && s.cpus[a] == s.cpus[b] && threads > 1)
                    _exit(4);
        }
        kt_pool_set_affinity(KT_POOL_AFFINITY_NONE);
        memset(&s, 0, sizeof(s));
        kt_pool_for(threads, 4000, record_affinity, &s);
        for (int a = 0; a < threads; a++)
            if (s.allowed[a] != 0 && s.allowed[a] != n_cpus)
                _exit(5);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_runq_wait(void **state)
{
    (void)state;
    int64_t a = kt_pool_runq_wait_ns();
    if (a < 0)
        skip(); /* no schedstat in this kernel */
    check_once(2, 1000);
    assert_true(kt_pool_runq_wait_ns() >= a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_item_once),
        cmocka_unit_test(test_concurrent_callers),
        cmocka_unit_test(test_fork_child),
        cmocka_unit_test(test_runq_wait),
        cmocka_unit_test(test_affinity_compact_and_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
