/* plugin_table.c - the plugins loaded into this process, by index: path, file identity,
 * ABI version. */
#include "plugin_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct loaded_plugin {
    char *path; /* realpath */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    uint32_t abi;
} loaded_plugin;

static loaded_plugin *plugins;
static int n_plugins;

int kt_plugin_count(void)
{
    return n_plugins;
}

const char *kt_plugin_path(int i)
{
    return i >= 0 && i < n_plugins ? plugins[i].path : "(built-in)";
}

uint32_t kt_plugin_abi(int i)
{
    return i >= 0 && i < n_plugins ? plugins[i].abi : 0;
}

int kt_plugin_table_find(const struct stat *st)
{
    for (int i = 0; i < n_plugins; i++)
        if (plugins[i].dev == st->st_dev && plugins[i].ino == st->st_ino &&
            plugins[i].size == st->st_size && plugins[i].mtime.tv_sec == st->st_mtim.tv_sec &&
            plugins[i].mtime.tv_nsec == st->st_mtim.tv_nsec)
            return i;
    return -1;
}

int kt_plugin_table_add(const char *real, const struct stat *st, uint32_t abi)
{
    loaded_plugin *grown = realloc(plugins, (size_t)(n_plugins + 1) * sizeof(*plugins));
    if (!grown)
        return kt_error_code(KT_ENOMEM, "out of memory");
    plugins = grown;
    loaded_plugin *p = &plugins[n_plugins];
    p->path = strdup(real);
    if (!p->path)
        return kt_error_code(KT_ENOMEM, "out of memory");
    p->dev = st->st_dev;
    p->ino = st->st_ino;
    p->size = st->st_size;
    p->mtime = st->st_mtim;
    p->abi = abi;
    return n_plugins++;
}
