/* arm.c - the table of kinds of arm, and which kind a spec's arms are (arm.h). A new kind is
 * one folder under arm/ with its kt_arm_kind, plus one row here. */
#include "arm/arm.h"

#include <string.h>

static const kt_arm_kind *const kinds[] = {&kt_arm_kernel, &kt_arm_command, &kt_arm_service};

const kt_arm_kind *kt_arm_kind_of(const kt_spec *spec)
{
    return spec->service ? &kt_arm_service : spec->command ? &kt_arm_command : &kt_arm_kernel;
}

const kt_arm_kind *kt_arm_kind_at(size_t i)
{
    return i < sizeof(kinds) / sizeof(kinds[0]) ? kinds[i] : NULL;
}

const kt_arm_kind *kt_arm_kind_find(const char *name)
{
    for (size_t i = 0; kt_arm_kind_at(i); i++)
        if (strcmp(kinds[i]->name, name) == 0)
            return kinds[i];
    return NULL;
}
