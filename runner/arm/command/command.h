/* command.h - calibration calls of the command kind of arm: what one call of each arm costs,
 * for plans (a command's cost is known only by running it). The trials themselves run through
 * the trial engine (measure/trial.h) like every kind of arm. */
#ifndef KT_ARM_COMMAND_H
#define KT_ARM_COMMAND_H

#include "spec/spec.h"

/* The seconds of one call of 'arm' (0 the baseline, k+1 candidate k) at 'point' on the first
 * task, for plans: one real call, its output discarded. NAN when it fails, with '*failed_s' the
 * seconds its setup and call took to fail. */
double kt_command_calibrate(const kt_spec *spec, const kt_point *point, int arm, double *failed_s);

/* Calibrates spec->command->call_seconds (what the plan reads) with one call per arm at
 * 'point' on the first task. Returns the number of arms whose call succeeded. */
int kt_command_calibrate_spec(const kt_spec *spec, const kt_point *point);

#endif
