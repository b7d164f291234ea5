/* kernel_place.c - placements of the kernel kind: each arm whose prepare is cheap is prepared
 * into KT_PLACEMENTS states per input set, and each pair runs both arms on their states of one
 * drawn index (docs/statistics.md, "Placement"). */
#include "arm/kernel/kernel_arm.h"

#include <stdio.h>

/* Whether arm 'arm' gets more prepared states (kt_kernel_settle): it is prepared, its prepare
 * took under KT_PLACEMENT_MAX_PREPARE_S, and the copies take at most KT_PLACEMENT_MAX_BYTES of
 * the backend's memory. An arm whose prepare allocates nothing through the backend (a plugin
 * with its own allocator) keeps one state. */
static int placements_allowed(point_run *r, int arm)
{
    const kt_arm_result *res = kt_kernel_arm_result(r, arm);
    double extra = res->variant_bytes * (KT_PLACEMENTS - 1) * r->n_sets;
    return r->prepared[arm] && !res->failed && res->variant_bytes > 0 &&
           extra <= KT_PLACEMENT_MAX_BYTES && res->prepare_ns * 1e-9 < KT_PLACEMENT_MAX_PREPARE_S;
}

/* Releases placement 'j' of arm 'arm' on sets 0 .. last. */
static void release_placement(point_run *r, int arm, int j, int last)
{
    const kt_variant *v = kt_kernel_spec_arm(r, arm)->variant;
    for (int s = 0; s <= last; s++) {
        if (r->placed[arm][s][j])
            v->release(r->placed[arm][s][j], r->backend);
        r->placed[arm][s][j] = NULL;
    }
}

/* State 'j' of arm 'arm' on every input set, each through one checked call: 0 when made, 1
 * when a prepare failed (the states made so far serve: not the arm's fault), -1 when a call on
 * it failed its check (the arm fails). */
static int add_placement(point_run *r, int arm, int j)
{
    kt_arm_result *res = kt_kernel_arm_result(r, arm);
    const kt_variant *v = kt_kernel_spec_arm(r, arm)->variant;
    for (int s = 0; s < r->n_sets; s++) {
        kt_call call = kt_kernel_arm_call(r, arm, s);
        kt_numerics n;
        char why[512];
        kt_error_clear();
        if (v->prepare(&r->placed[arm][s][j], &call) < 0) {
            release_placement(r, arm, j, s);
            return 1;
        }
        int err = kt_check_call(&n, r->inst[s], v, r->placed[arm][s][j], &call);
        if (err < 0)
            kt_kernel_fail_arm(res, "run failed in its state prepared %d times: %s (input set %d)",
                               j + 1, kt_error_or_code(err), s);
        else if (kt_kernel_numerics_problem(&n, "", why, sizeof(why)))
            kt_kernel_fail_arm(res, "%s (its state prepared %d times, input set %d)", why, j + 1,
                               s);
        if (res->failed) {
            release_placement(r, arm, j, s);
            return -1;
        }
    }
    return 0;
}

/* Prepares every arm that qualifies (placements_allowed) into KT_PLACEMENTS states per input
 * set, state by state across the arms so that no arm's states all come after another's. Where
 * a kernel's buffers lie moves its time for as long as they lie there (docs/statistics.md,
 * "Placement"): with one state per arm and set, that is a fixed bias of the run. Each pair then
 * runs both arms on their states of one drawn index (kt_kernel_place), and the verdict counts
 * the spread between those indices (kt_candidate_evaluate). */
static void add_placements(point_run *r)
{
    for (int arm = 0; arm <= (int)r->out->n_cands; arm++) {
        r->n_placed[arm] = r->prepared[arm] ? 1 : 0;
        for (int s = 0; s < r->n_sets && r->prepared[arm]; s++)
            r->placed[arm][s][0] = r->state[arm][s];
        kt_kernel_arm_result(r, arm)->placements = r->n_placed[arm];
    }
    for (int j = 1; j < KT_PLACEMENTS; j++)
        for (int arm = 0; arm <= (int)r->out->n_cands; arm++) {
            if (r->n_placed[arm] != j || !placements_allowed(r, arm))
                continue;
            int made = add_placement(r, arm, j);
            if (made < 0)
                r->prepared[arm] = 0;
            if (made != 0)
                continue;
            r->n_placed[arm] = j + 1;
            kt_kernel_arm_result(r, arm)->placements = j + 1;
        }
}

/* Arm 'arm' runs on 'set' in its state of index 'u' (modulo the states it has). */
void kt_kernel_place(point_run *r, int arm, int set, int u)
{
    if (r->n_placed[arm] > 1)
        r->state[arm][set] = r->placed[arm][set][u % r->n_placed[arm]];
}

/* After every arm's prepare: the placements; an interrupt stops the start-up here, a baseline
 * that failed in them fails the point. */
int kt_kernel_settle(point_run *r)
{
    if (kt_kernel_interrupted(r)) {
        snprintf(r->out->error, sizeof(r->out->error), "interrupted during start-up");
        return -2;
    }
    add_placements(r);
    if (r->out->baseline.failed) {
        kt_kernel_fail_any_arm(r, 0, r->out->baseline.failure);
        return -2;
    }
    return 0;
}
