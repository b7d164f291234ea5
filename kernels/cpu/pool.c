/* pool.c - the CPU kernels' thread pool (see pool.h). */
#include "pool.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

enum { MAX_WORKERS = 63, SPIN = 2000 };
#define CLOSED UINT32_MAX

/* One job at a time. 'gen' numbers jobs (the futex idle workers sleep on); 'claim' packs the
 * job's generation (high 32 bits) and the next unclaimed item (low 32) so a worker that read an
 * old generation can never claim an item of a newer job; 'slots' packs the generation and the
 * next free participant number the same way. A new job first closes 'claim' (new generation,
 * item CLOSED) and only then writes its fields (release): a worker that sees a new field value
 * (acquire) then fails its claim on the old generation. fn and ctx are read only after a claim
 * succeeds, when the job cannot end (that item is not done) or be replaced. */
typedef struct pool {
    pid_t pid; /* the process that started the workers (a fork child has none) */
    int n_workers;
    pthread_t workers[MAX_WORKERS];
    pthread_mutex_t lock; /* serialises kt_pool_for callers */
    _Atomic uint32_t gen;
    _Atomic uint64_t claim;
    _Atomic uint64_t slots;
    _Atomic uint32_t done;
    _Atomic(kt_pool_fn) fn;
    _Atomic(void *) ctx;
    _Atomic uint32_t n;
    _Atomic int threads;
} pool;

static pool the_pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* threads_affinity: the mode, and the CPUs compact pins to (the allowed set when it was set). */
static int affinity_mode = KT_POOL_AFFINITY_NONE;
static cpu_set_t affinity_allowed;
static int affinity_cpus[CPU_SETSIZE], affinity_n;

/* Pins thread 'th' to CPU number 'index' (mod affinity_n) of the compact list, or gives it back the
 * whole allowed set (mode none). Best effort: a refused pin leaves the thread where it was. */
static void pin(pthread_t th, int index)
{
    if (affinity_n == 0)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(affinity_cpus[index % affinity_n], &one);
    pthread_setaffinity_np(th, sizeof(cpu_set_t),
                           affinity_mode == KT_POOL_AFFINITY_COMPACT ? &one : &affinity_allowed);
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t expected)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr, int count)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

/* Claims the next item of job 'g' into '*item'; 0 when the job has none left or is gone. */
static int claim_item(pool *p, uint32_t g, uint32_t n, uint32_t *item)
{
    uint64_t c = atomic_load_explicit(&p->claim, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(c >> 32) != g || (uint32_t)c >= n)
            return 0;
        if (atomic_compare_exchange_weak_explicit(&p->claim, &c, c + 1, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            *item = (uint32_t)c;
            return 1;
        }
    }
}

/* Runs items of job 'g' as participant 'slot' until none are left. */
static void drain(pool *p, uint32_t g, int slot)
{
    uint32_t n = atomic_load_explicit(&p->n, memory_order_acquire), item;
    while (claim_item(p, g, n, &item)) {
        kt_pool_fn fn = atomic_load_explicit(&p->fn, memory_order_relaxed);
        fn(atomic_load_explicit(&p->ctx, memory_order_relaxed), item, slot);
        if (atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel) + 1 == n)
            futex_wake(&p->done, 1);
    }
}

/* Takes a participant number in job 'g'; -1 when the job is gone or has all it may use. */
static int take_slot(pool *p, uint32_t g)
{
    uint64_t s = atomic_load_explicit(&p->slots, memory_order_acquire);
    for (;;) {
        int threads = atomic_load_explicit(&p->threads, memory_order_acquire);
        if ((uint32_t)(s >> 32) != g || (int)(uint32_t)s >= threads)
            return -1;
        if (atomic_compare_exchange_weak_explicit(&p->slots, &s, s + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return (int)(uint32_t)s;
    }
}

static void *worker_main(void *arg)
{
    pool *p = arg;
    uint32_t seen = atomic_load_explicit(&p->gen, memory_order_acquire);
    for (;;) {
        uint32_t g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) {
            if (++spins < SPIN)
                cpu_relax();
            else
                futex_wait(&p->gen, seen);
        }
        seen = g;
        int slot = take_slot(p, g);
        if (slot > 0)
            drain(p, g, slot);
    }
    return NULL;
}

/* Starts workers until there are 'want' (at most MAX_WORKERS); returns how many there are. */
static int grow(pool *p, int want)
{
    if (p->pid != getpid()) { /* first use, or a fork child: the parent's threads are not here */
        p->pid = getpid();
        p->n_workers = 0;
    }
    if (want > MAX_WORKERS)
        want = MAX_WORKERS;
    while (p->n_workers < want) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&p->workers[p->n_workers], &attr, worker_main, p);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        if (affinity_mode == KT_POOL_AFFINITY_COMPACT)
            pin(p->workers[p->n_workers], p->n_workers + 1);
        p->n_workers++;
    }
    return p->n_workers;
}

void kt_pool_for(int threads, int64_t n, kt_pool_fn fn, void *ctx)
{
    pool *p = &the_pool;
    if (n <= 0)
        return;
    if (threads <= 1 || n == 1 || n >= CLOSED) {
        for (int64_t i = 0; i < n; i++)
            fn(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&p->lock);
    int workers = grow(p, threads - 1);
    if (threads > workers + 1)
        threads = workers + 1;
    /* the previous job is finished: nobody can claim from it or touch its fields */
    uint32_t g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&p->claim, (uint64_t)g << 32 | CLOSED, memory_order_seq_cst);
    atomic_store_explicit(&p->fn, fn, memory_order_release);
    atomic_store_explicit(&p->ctx, ctx, memory_order_release);
    atomic_store_explicit(&p->n, (uint32_t)n, memory_order_release);
    atomic_store_explicit(&p->threads, threads, memory_order_release);
    atomic_store_explicit(&p->done, 0, memory_order_release);
    atomic_store_explicit(&p->slots, (uint64_t)g << 32 | 1, memory_order_release);
    atomic_store_explicit(&p->claim, (uint64_t)g << 32, memory_order_release);
    atomic_store_explicit(&p->gen, g, memory_order_release);
    if (threads > 1)
        futex_wake(&p->gen, threads - 1);
    drain(p, g, 0);
    uint32_t d;
    int spins = 0;
    while ((d = atomic_load_explicit(&p->done, memory_order_acquire)) != (uint32_t)n) {
        if (++spins < SPIN)
            cpu_relax();
        else
            futex_wait(&p->done, d);
    }
    pthread_mutex_unlock(&p->lock);
}

int64_t kt_pool_runq_wait_ns(void)
{
    DIR *dir = opendir("/proc/self/task");
    if (!dir)
        return -1;
    int64_t total = 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[64], buf[128];
        snprintf(path, sizeof(path), "%s/schedstat", e->d_name);
        int fd = openat(dirfd(dir), path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (len <= 0)
            continue;
        buf[len] = '\0';
        unsigned long long run = 0, wait = 0;
        if (sscanf(buf, "%llu %llu", &run, &wait) == 2) {
            total += (int64_t)wait;
            found = 1;
        }
    }
    closedir(dir);
    return found ? total : -1;
}

int kt_pool_set_affinity(int mode)
{
    pool *p = &the_pool;
    pthread_mutex_lock(&p->lock);
    if (affinity_n == 0) {
        if (sched_getaffinity(0, sizeof(affinity_allowed), &affinity_allowed) == 0)
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &affinity_allowed))
                    affinity_cpus[affinity_n++] = c;
    }
    affinity_mode = mode;
    pin(pthread_self(), 0);
    if (p->pid == getpid())
        for (int i = 0; i < p->n_workers; i++)
            pin(p->workers[i], i + 1);
    pthread_mutex_unlock(&p->lock);
    return affinity_n;
}
