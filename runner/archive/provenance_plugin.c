/* provenance_plugin.c - what identifies each plugin a run loaded: its file (sha256, size,
 * ELF build-id), the plugin ABI it was built for, and the git state of the work tree it lies
 * in. */
#include "archive/provenance_plugin.h"
#include "archive/provenance.h"

#include <elf.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The NT_GNU_BUILD_ID note of a 64-bit ELF file, as hex, from its PT_NOTE segments. */
int kt_elf_build_id(char *out, size_t len, const char *path)
{
    out[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    Elf64_Ehdr eh;
    int found = -1;
    if (fread(&eh, sizeof(eh), 1, f) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
        goto done;
    for (int i = 0; i < eh.e_phnum && found < 0; i++) {
        Elf64_Phdr ph;
        if (fseek(f, (long)(eh.e_phoff + (Elf64_Off)i * sizeof(ph)), SEEK_SET) != 0 ||
            fread(&ph, sizeof(ph), 1, f) != 1)
            break;
        if (ph.p_type != PT_NOTE || ph.p_filesz > (1 << 16))
            continue;
        unsigned char *notes = malloc(ph.p_filesz ? ph.p_filesz : 1);
        if (!notes || fseek(f, (long)ph.p_offset, SEEK_SET) != 0 ||
            fread(notes, 1, ph.p_filesz, f) != ph.p_filesz) {
            free(notes);
            break;
        }
        for (size_t off = 0; off + sizeof(Elf64_Nhdr) <= ph.p_filesz && found < 0;) {
            Elf64_Nhdr nh;
            memcpy(&nh, notes + off, sizeof(nh));
            size_t name_at = off + sizeof(nh), desc_at = name_at + ((nh.n_namesz + 3u) & ~3u);
            size_t next = desc_at + ((nh.n_descsz + 3u) & ~3u);
            if (next > ph.p_filesz)
                break;
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                memcmp(notes + name_at, "GNU", 4) == 0 && 2 * nh.n_descsz < len) {
                for (size_t b = 0; b < nh.n_descsz; b++)
                    snprintf(out + 2 * b, 3, "%02x", notes[desc_at + b]);
                found = 0;
            }
            off = next;
        }
        free(notes);
    }
done:
    fclose(f);
    return found;
}

/* The git state of the work tree holding 'real', or JSON null when it lies in none. */
static cJSON *plugin_git(const char *real)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", real);
    kt_git_state st;
    cJSON *out = NULL;
    if (kt_git_state_collect(&st, dirname(dir), NULL) == 0 && st.available && st.workdir &&
        strncmp(real, st.workdir, strlen(st.workdir)) == 0)
        out = kt_provenance_git_json(&st);
    kt_git_state_free(&st);
    return out ? out : cJSON_CreateNull();
}

cJSON *kt_provenance_plugins_json(const kt_spec *spec)
{
    cJSON *list = cJSON_CreateArray();
    for (size_t i = 0; list && i < spec->n_plugins; i++) {
        const kt_spec_plugin *p = &spec->plugins[i];
        cJSON *o = cJSON_CreateObject();
        const char *real = kt_plugin_path(p->index);
        char build_id[160], abi[24];
        uint32_t v = kt_plugin_abi(p->index);
        snprintf(abi, sizeof(abi), "%u.%u", v >> 16, v & 0xffff);
        cJSON_AddStringToObject(o, "path", p->path);
        cJSON_AddStringToObject(o, "resolved", real);
        cJSON_AddStringToObject(o, "sha256", p->sha256);
        cJSON_AddNumberToObject(o, "size", (double)p->size);
        if (kt_elf_build_id(build_id, sizeof(build_id), real) == 0)
            cJSON_AddStringToObject(o, "build_id", build_id);
        else
            cJSON_AddNullToObject(o, "build_id");
        cJSON_AddStringToObject(o, "abi_version", abi);
        cJSON_AddItemToObject(o, "git", plugin_git(real));
        cJSON_AddItemToArray(list, o);
    }
    return list;
}

int kt_provenance_plugin_changes(char *msg, size_t len, const cJSON *old_plugins,
                                 const cJSON *new_plugins)
{
    int changed = 0;
    msg[0] = '\0';
    const cJSON *n;
    cJSON_ArrayForEach(n, new_plugins)
    {
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(n, "path");
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(n, "sha256");
        const cJSON *o;
        cJSON_ArrayForEach(o, old_plugins)
        {
            const cJSON *opath = cJSON_GetObjectItemCaseSensitive(o, "path");
            const cJSON *osha = cJSON_GetObjectItemCaseSensitive(o, "sha256");
            if (!cJSON_IsString(path) || !cJSON_IsString(opath) || !cJSON_IsString(sha) ||
                !cJSON_IsString(osha) || strcmp(path->valuestring, opath->valuestring) != 0 ||
                strcmp(sha->valuestring, osha->valuestring) == 0)
                continue;
            if (!changed++)
                snprintf(msg, len, "plugin '%s' changed: sha256 %.12s before, %.12s now",
                         path->valuestring, osha->valuestring, sha->valuestring);
        }
    }
    return changed;
}
