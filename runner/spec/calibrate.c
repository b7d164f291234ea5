/* calibrate.c - the calibration point, the reference's work and how busy the host is (see
 * calibrate.h); measure/calibrate_rates.c measures the rates. */
#include "spec/calibrate.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

double kt_calibration_work(const kt_problem *p)
{
    double out_elems = 0;
    for (int o = 0; o < p->n_outputs; o++)
        out_elems += (double)kt_tensor_elems(&p->tensors[p->n_inputs + o]);
    return p->flops > out_elems ? p->flops : out_elems;
}

kt_point kt_calibration_point(void)
{
    kt_point p;
    memset(&p, 0, sizeof(p));
    snprintf(p.model.name, sizeof(p.model.name), "calibration");
    p.model.hidden = 1024;
    p.model.heads = 8;
    p.model.kv_heads = 2;
    p.model.head_dim = 128;
    p.model.intermediate = 2048;
    p.model.layers = 1;
    p.batch_size = 8;
    p.context_length = 1024;
    p.phase = KT_PHASE_DECODE;
    p.role = KT_ROLE_GATE_UP;
    snprintf(p.id, sizeof(p.id), "calibration");
    return p;
}

kt_point kt_calibration_point_in(kt_phase phase)
{
    kt_point p = kt_calibration_point();
    if (phase == KT_PHASE_PREFILL) {
        p.phase = KT_PHASE_PREFILL;
        p.batch_size = 1;
        p.context_length = 16;
        snprintf(p.id, sizeof(p.id), "calibration-prefill");
    }
    return p;
}

double kt_calibration_busy(void)
{
    double load = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1)
            load = 0;
        fclose(f);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double busy = load / (double)(cores > 0 ? cores : 1);
    return busy > 1.0 ? busy : 1.0;
}
