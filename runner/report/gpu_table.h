/* gpu_table.h - the HTML report's table of GPU counters and energy per arm and kernel. */
#ifndef KT_GPU_TABLE_H
#define KT_GPU_TABLE_H

#include "result/point.h"

#include <stdio.h>

/* Writes the point's GPU table (nothing when no arm ran the GPU half of the profiling pass). */
void kt_report_gpu_table(FILE *f, const kt_point_result *pt);

#endif
