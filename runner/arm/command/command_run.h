/* command_run.h - private to the command kind of arm (arm/command/): the state of one point's
 * arms (their work folder, placeholder values, costs, last outputs) and what one call returns. */
#ifndef KT_COMMAND_RUN_H
#define KT_COMMAND_RUN_H

#include "arm/arm.h"
#include "result/point.h"
#include "process/process.h"
#include "spec/command_spec.h"

#define MAX_EXTRA 4 /* metrics a command reports besides the measured one, kept per arm */

/* What every call of one arm cost, summed. */
typedef struct arm_costs {
    int64_t calls;
    double wall_s, user_s, sys_s, max_rss_kib;
    double max_rss_floor_kib; /* ktrial's own peak RSS when the call with max_rss_kib began */
    int n_extra;
    char extra_names[MAX_EXTRA][32];
    double extra_sums[MAX_EXTRA];
    int64_t extra_counts[MAX_EXTRA];
    int kept[KT_COMMAND_MAX_TASKS]; /* the task's output was kept */
    int64_t left_behind;            /* calls that left processes running (killed, warned once) */
} arm_costs;

/* One call as made: its sample and where its output went. */
typedef struct call_result {
    double sample; /* ns (wall or 1e9/value for better: higher) or the metric as reported */
    kt_arm_usage usage;
    char output[4200];
    kt_reason_code code; /* KT_REASON_NONE when the call succeeded */
    char why[512];
} call_result;

struct kt_arm_set {
    kt_arm_env env; /* its keep, ctx and interrupted; zero for a calibration call */
    const kt_spec *spec;
    const kt_command_spec *cs;
    const kt_point *point;
    kt_point_result *out;
    char workdir[4096];
    char seed[32], batch[32], context[32];
    arm_costs costs[1 + KT_LIMIT_CANDIDATES];
    call_result last[1 + KT_LIMIT_CANDIDATES]; /* each arm's last call (its output, kept
                                                  until the pair is checked) */
    int set_up[1 + KT_LIMIT_CANDIDATES];       /* its setup ran (its teardown runs) */
    int described[1 + KT_LIMIT_CANDIDATES];
};

typedef struct kt_arm_set crun;

static inline const kt_command_arm *command_arm(const crun *r, int arm)
{
    return arm == 0 ? &r->cs->baseline : &r->cs->candidates[arm - 1];
}

static inline const char *arm_name(const crun *r, int arm)
{
    return arm == 0 ? r->spec->baseline.name : r->spec->candidates[arm - 1].name;
}

static inline kt_arm_result *arm_result(crun *r, int arm)
{
    return arm == 0 ? &r->out->baseline : &r->out->cands[arm - 1].arm;
}

/* The placeholder values of a call of 'arm'; task < 0 for setup and teardown (no task, no
 * output: the per-call names are empty). */
void kt_command_call_vars(kt_command_vars *v, const crun *r, int arm, int task, const char *rep,
                          const char *output);
/* Expands and runs one command of 'arm' ('tmpl' is its run, setup or teardown argv) with the
 * arm's env, cwd and timeout; fills 'res' and, when it fails, cr->code and cr->why (an interrupt
 * also sets r->out->error). Returns 0 or -1. */
int kt_command_run_one(kt_process_result *res, crun *r, int arm, const kt_argv *tmpl,
                       const kt_command_vars *v, call_result *cr);
/* One call of 'arm' on 'task' ('rep' < 0: warmup call -rep): its sample, its costs added to the
 * arm's, a failure's details kept. Returns 0, or -1 with cr->code and cr->why. */
int kt_command_call(crun *r, int arm, int task, int rep, call_result *cr);
/* The arm's costs as its result.json metrics, its peak RSS as its bytes (the memory gate). */
void kt_command_record_costs(crun *r, int arm);
/* The arm's program (argv[0] as run, absolute) and the SHA-256 of its file. */
void kt_command_identify_program(crun *r, int arm);

#endif
