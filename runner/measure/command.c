/* command.c - a point of op 'command' run by the trial engine with the run's hooks (what
 * `ktrial run` hands a command trial: where to keep outputs, progress, Ctrl-C). */
#include "measure/command.h"

int kt_command_run_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                         const kt_command_hooks *hooks)
{
    kt_trial_hooks h = {0};
    if (hooks) {
        h.on_progress = hooks->on_progress;
        h.ctx = hooks->ctx;
        h.interrupted = hooks->interrupted;
        h.quick = hooks->quick;
    }
    return kt_trial_run_point_keeping(out, spec, point, NULL, &h, hooks ? hooks->keep : NULL);
}
