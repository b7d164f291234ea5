/* provenance_plugin.h - the plugins of a run in result.json's provenance. */
#ifndef KT_PROVENANCE_PLUGIN_H
#define KT_PROVENANCE_PLUGIN_H

#include "spec/spec.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* [{path (as written), resolved, sha256, size, build_id (hex or null), abi_version
 * ("1.0"), git (the work tree holding the file, or null)}, ...] in spec order. */
cJSON *kt_provenance_plugins_json(const kt_spec *spec);

/* Writes the hex NT_GNU_BUILD_ID of the ELF file 'path' to 'out'; returns 0, or -1 when it
 * has none (or is unreadable). */
int kt_elf_build_id(char *out, size_t len, const char *path);

/* How many plugins of 'new_plugins' have a different sha256 than the one of the same path
 * ("path" as written in the spec) in 'old_plugins' (provenance.plugins arrays, either may be
 * NULL); 'msg' describes the first. */
int kt_provenance_plugin_changes(char *msg, size_t len, const cJSON *old_plugins,
                                 const cJSON *new_plugins);

#endif
