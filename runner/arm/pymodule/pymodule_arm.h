/* pymodule_arm.h - private to the pymodule kind of arm (arm/pymodule/): its operations
 * (pymodule_arm.c), which pymodule_kind.c puts in the kind's table. */
#ifndef KT_PYMODULE_ARM_H
#define KT_PYMODULE_ARM_H

#include "arm/arm.h"

int kt_pymodule_open(kt_arm_set **set, int *n_sets, const kt_arm_env *env);
void kt_pymodule_describe(kt_arm_set *s, int arm);
int kt_pymodule_prepare(kt_arm_set *s, int arm);
int kt_pymodule_call(kt_arm_set *s, int arm, const kt_arm_at *at, kt_arm_sample *out);
int kt_pymodule_check(kt_arm_set *s, int arm, const kt_arm_at *at, int ref);
void kt_pymodule_release(kt_arm_set *s, int arm);
void kt_pymodule_close(kt_arm_set *s);

#endif
