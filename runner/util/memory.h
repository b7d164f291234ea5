/* memory.h - how much memory this process may still take: the kernel's MemAvailable, and its
 * cgroup's limit (v2 memory.max less memory.current) where one is set, whichever is less. */
#ifndef KT_MEMORY_H
#define KT_MEMORY_H

#include <stddef.h>

/* The path of this process's cgroup v2 file 'name' ("memory.events") in 'out'. Returns 0, or
 * -1 when the process is in no cgroup v2 hierarchy. */
int kt_cgroup_file(char *out, size_t len, const char *name);

/* Bytes this process may still allocate, and in 'what' which limit that is ("MemAvailable",
 * "the cgroup's memory.max"); NAN when neither can be read. */
double kt_memory_available(char *what, size_t len);

#endif
