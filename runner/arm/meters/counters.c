/* counters.c - see counters.h. perf_event_open(2) per thread of the process, user space only
 * (exclude_kernel), which perf_event_paranoid <= 2 allows for one's own threads. */
#include "arm/meters/counters.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct counter_def {
    uint32_t type;
    uint64_t config;
} counter_def;

#define CACHE(id, op, result) ((id) | ((op) << 8) | ((result) << 16))

/* In the order of kt_counter_name (result/usage.c). */
static const counter_def DEFS[] = {
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {PERF_TYPE_HW_CACHE,
     CACHE(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
};
#define N_DEFS ((int)(sizeof(DEFS) / sizeof(DEFS[0])))

int kt_counters_paranoid(void)
{
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    int v = -100;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -100;
        fclose(f);
    }
    return v;
}

static int thread_ids(pid_t *out, int max)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < max)
        if (e->d_name[0] != '.')
            out[n++] = (pid_t)atoi(e->d_name);
    if (d)
        closedir(d);
    return n;
}

static int open_counter(const counter_def *def, pid_t tid)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = def->type;
    attr.config = def->config;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* RAPL energy in joules: [0] package, [1] DRAM, summed over sockets; NAN when absent. */
static void read_rapl(double out[2], char *why, size_t why_len)
{
    out[0] = out[1] = NAN;
    DIR *d = opendir("/sys/class/powercap");
    if (!d) {
        snprintf(why, why_len, "not available on this machine: no /sys/class/powercap (RAPL)");
        return;
    }
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d))) {
        char path[512], name[64];
        if (strncmp(e->d_name, "intel-rapl:", 11) != 0 && strncmp(e->d_name, "amd-rapl:", 9) != 0)
            continue;
        snprintf(path, sizeof(path), "/sys/class/powercap/%s/name", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f || !fgets(name, sizeof(name), f)) {
            if (f)
                fclose(f);
            continue;
        }
        fclose(f);
        int which = strncmp(name, "package", 7) == 0 ? 0 : strncmp(name, "dram", 4) == 0 ? 1 : -1;
        snprintf(path, sizeof(path), "/sys/class/powercap/%s/energy_uj", e->d_name);
        unsigned long long uj = 0;
        f = fopen(path, "r");
        if (which < 0 || !f || fscanf(f, "%llu", &uj) != 1) {
            if (f)
                fclose(f);
            if (which >= 0 && !found)
                snprintf(why, why_len, "not available on this machine: cannot read %s: %s", path,
                         strerror(errno));
            continue;
        }
        fclose(f);
        out[which] = (isnan(out[which]) ? 0 : out[which]) + (double)uj * 1e-6;
        found = 1;
    }
    closedir(d);
    if (found)
        why[0] = '\0';
    else if (!why[0])
        snprintf(why, why_len,
                 "not available on this machine: no RAPL domain in /sys/class/powercap");
}

void kt_counters_start(kt_counter_set *s)
{
    memset(s, 0, sizeof(*s));
    pid_t tids[256];
    s->v.threads = thread_ids(tids, 256);
    s->v.n = N_DEFS;
    s->n_fds = s->v.threads;
    for (int i = 0; i < N_DEFS; i++) {
        kt_counter *c = &s->v.c[i];
        c->name = kt_counter_name(i);
        c->supported = 1;
        for (int t = 0; t < s->v.threads; t++) {
            s->fds[i][t] = open_counter(&DEFS[i], tids[t]);
            if (s->fds[i][t] < 0 && c->supported) {
                int e = errno;
                c->supported = 0;
                snprintf(c->unsupported, sizeof(c->unsupported), "%s%s", strerror(e),
                         e == EACCES || e == EPERM ? " (see /proc/sys/kernel/perf_event_paranoid)"
                         : e == ENOENT || e == ENODEV || e == EOPNOTSUPP
                             ? " (no such event here: this CPU or VM exposes no hardware PMU)"
                             : "");
            }
        }
    }
    read_rapl(s->rapl_start, s->v.energy_unavailable, sizeof(s->v.energy_unavailable));
    for (int i = 0; i < N_DEFS; i++)
        for (int t = 0; t < s->v.threads; t++)
            if (s->fds[i][t] >= 0) {
                ioctl(s->fds[i][t], PERF_EVENT_IOC_RESET, 0);
                ioctl(s->fds[i][t], PERF_EVENT_IOC_ENABLE, 0);
            }
}

void kt_counters_stop(kt_counter_set *s, int calls)
{
    double per = calls > 0 ? 1.0 / calls : 1.0;
    s->v.calls = calls;
    for (int i = 0; i < s->v.n; i++) {
        double sum = 0;
        for (int t = 0; t < s->n_fds; t++) {
            int fd = s->fds[i][t];
            if (fd < 0)
                continue;
            ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
            uint64_t v = 0;
            if (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
                sum += (double)v;
            close(fd);
        }
        s->v.c[i].value = s->v.c[i].supported ? sum * per : NAN;
    }
    double end[2];
    char why[160] = "";
    read_rapl(end, why, sizeof(why));
    for (int k = 0; k < 2; k++)
        s->v.energy_j[k] = isnan(end[k]) || isnan(s->rapl_start[k]) || end[k] < s->rapl_start[k]
                               ? NAN
                               : (end[k] - s->rapl_start[k]) * per;
}
