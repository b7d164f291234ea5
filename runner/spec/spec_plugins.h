/* spec_plugins.h - a spec's 'plugins:' list: loading each library, recording what identifies
 * it (sha256, size), and which plugin an arm takes its variant from. */
#ifndef KT_SPEC_PLUGINS_H
#define KT_SPEC_PLUGINS_H

#include "util/diag.h"
#include "spec/spec.h"

struct kt_node;

/* 'written' relative to the folder of 'spec_path' (absolute paths stay as they are), malloc'd;
 * NULL when out of memory. */
char *kt_spec_resolve_path(const char *spec_path, const char *written);

/* Loads every entry of spec->root's 'plugins' (paths relative to the spec's folder) into
 * spec->plugins; each failure is an error at its entry, "plugins[i]: 'path': reason".
 * Returns 0 when it added no error. */
int kt_spec_load_plugins(kt_spec *spec, kt_diag *diag);

/* Whether registry plugin 'plugin' (kt_variant_plugin / kt_op_plugin) is one the spec lists;
 * built-ins (KT_PLUGIN_BUILTIN) always are. */
int kt_spec_uses_plugin(const kt_spec *spec, int plugin);

/* The spec's entry whose path is 'written' (as written, or the same file), or NULL. */
const kt_spec_plugin *kt_spec_plugin_named(const kt_spec *spec, const char *written);

/* The spec's entry of registry plugin 'plugin', or NULL (a built-in). */
const kt_spec_plugin *kt_spec_plugin_of(const kt_spec *spec, int plugin);

/* Resolves an arm's variant: from 'from' when not NULL, else a built-in, else the one listed
 * plugin that has it. Two listed plugins with the name and no 'from' is an error at the
 * later one's entry. Returns the variant or NULL (*ambiguous set when that was why). */
const kt_variant *kt_spec_find_variant(const kt_spec *spec, const char *name,
                                       const kt_spec_plugin *from, kt_diag *diag, int *ambiguous);

#endif
