/* memory.c - the memory a run may still take (see memory.h). */
#include "util/memory.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int kt_cgroup_file(char *out, size_t len, const char *name)
{
    char line[512];
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return -1;
    out[0] = '\0';
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, len, "/sys/fs/cgroup%s/%s", strcmp(line + 3, "/") ? line + 3 : "", name);
        }
    fclose(f);
    return out[0] ? 0 : -1;
}

/* The first number in the file 'path' (after 'key' when given); NAN when absent ("max"). */
static double read_number(const char *path, const char *key)
{
    char line[256];
    double v = NAN;
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    while (fgets(line, sizeof(line), f)) {
        double x;
        if (key ? sscanf(line, key, &x) == 1 : sscanf(line, "%lf", &x) == 1) {
            v = x;
            break;
        }
    }
    fclose(f);
    return v;
}

double kt_memory_available(char *what, size_t len)
{
    double kib = read_number("/proc/meminfo", "MemAvailable: %lf kB");
    double avail = kib * 1024.0;
    snprintf(what, len, "MemAvailable");
    char max_path[640], cur_path[640];
    if (kt_cgroup_file(max_path, sizeof(max_path), "memory.max") == 0 &&
        kt_cgroup_file(cur_path, sizeof(cur_path), "memory.current") == 0) {
        double room = read_number(max_path, NULL) - read_number(cur_path, NULL);
        if (isfinite(room) && (isnan(avail) || room < avail)) {
            avail = room > 0 ? room : 0;
            snprintf(what, len, "the cgroup's memory.max");
        }
    }
    return avail;
}
