/* pool.h - the CPU kernels' thread pool: a parallel for whose waits back off to futexes and
 * whose caller never waits for a thread that has not started.
 *
 * OpenMP's parallel region ends in a barrier every team thread must reach. When a co-runner
 * holds one of the cores, the thread that shares that core is runnable but not running, and
 * the whole call waits for the scheduler to give it a slice: a 1 ms decode becomes 20 ms. Here
 * the n items are claimed one at a time from an atomic counter by whoever is running (the
 * caller first): a worker that wakes late finds nothing left and goes back to sleep, and the
 * call ends when every claimed item is done. Idle workers spin briefly (about 20 us), then
 * sleep on a futex, so they cost nothing between calls and, being sleepers, get the CPU back
 * quickly from a co-runner when woken. */
#ifndef KT_CPU_POOL_H
#define KT_CPU_POOL_H

#include <stdint.h>

/* Work item 'i' of a kt_pool_for, run by the participant numbered 'slot' (0 for the caller,
 * < the 'threads' given): per-slot scratch is safe, as one slot runs one item at a time. */
typedef void (*kt_pool_fn)(void *ctx, int64_t i, int slot);

/* Runs fn(ctx, i, slot) for every i in [0, n) on at most 'threads' threads, the caller one of
 * them, and returns when all are done. Items run in no fixed order: fn must not depend on
 * which slot runs an item. Calls from several threads at once are serialised. Falls back to
 * running everything on the caller when worker threads cannot be created. */
void kt_pool_for(int threads, int64_t n, kt_pool_fn fn, void *ctx);

/* threads_affinity: compact pins the caller to the first CPU of the process's allowed set and
 * worker k to the (k+1)-th (wrapping), so a call's threads share no core while there are cores
 * for them; none (the default) lets the scheduler move them. */
enum { KT_POOL_AFFINITY_NONE, KT_POOL_AFFINITY_COMPACT };

/* Sets the affinity mode of the calling thread (the one that calls kt_pool_for) and of every
 * worker, present and future. The allowed set is read at the first call, so 'none' later
 * restores it. Returns the number of CPUs in that set (0: unknown, nothing pinned). */
int kt_pool_set_affinity(int mode);

/* Run-queue wait (ns) summed over this process's threads: the time they were runnable but not
 * running, from /proc/self/task/<tid>/schedstat; -1 when unavailable. */
int64_t kt_pool_runq_wait_ns(void);

#endif
