/* plugin_internal.h - the loader's state for one plugin while its kt_plugin_init runs. */
#ifndef KT_PLUGIN_INTERNAL_H
#define KT_PLUGIN_INTERNAL_H

#include "kernel.h"

#include <sys/stat.h>

#define KT_PLUGIN_MAX_ITEMS 64

typedef struct kt_plugin_host {
    const char *path;
    char error[512]; /* the first registration error, "" when none */
    kt_op *ops[KT_PLUGIN_MAX_ITEMS];
    int op_shadowed[KT_PLUGIN_MAX_ITEMS]; /* an earlier plugin provides an op of that name */
    int n_ops;
    kt_variant *variants[KT_PLUGIN_MAX_ITEMS];
    int n_variants;
} kt_plugin_host;

/* Check one registration and keep a copy in 'h'; KT_OK or a negative code with the reason
 * set (and kept in h->error). */
int kt_plugin_check_op(kt_plugin_host *h, const kt_op *op);
int kt_plugin_check_variant(kt_plugin_host *h, const kt_variant *v);

/* The loaded-plugin table (plugin_table.c): the index of a file already loaded (same
 * device, inode, size and mtime) or -1; adding returns the new index or a negative code. */
int kt_plugin_table_find(const struct stat *st);
int kt_plugin_table_add(const char *real, const struct stat *st, uint32_t abi);

#endif
