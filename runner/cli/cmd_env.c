/* cmd_env.c - 'ktrial env': the provenance a run would record, without running. */
#include "cli/commands.h"
#include "cli/options.h"
#include "archive/provenance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints one object as aligned "key  value" lines, nested objects indented under their key;
 * null shows as "-". */
static void print_object(const cJSON *obj, int indent)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, obj)
    {
        if (cJSON_IsObject(it)) {
            printf("%*s%s\n", indent, "", it->string);
            print_object(it, indent + 2);
        } else if (cJSON_IsString(it)) {
            printf("%*s%-*s %s\n", indent, "", 24 - indent, it->string, it->valuestring);
        } else if (cJSON_IsBool(it)) {
            printf("%*s%-*s %s\n", indent, "", 24 - indent, it->string,
                   cJSON_IsTrue(it) ? "yes" : "no");
        } else if (cJSON_IsNumber(it)) {
            printf("%*s%-*s %.17g\n", indent, "", 24 - indent, it->string, it->valuedouble);
        } else {
            printf("%*s%-*s -\n", indent, "", 24 - indent, it->string);
        }
    }
}

/* {backend name: device object} for every backend this build has. */
static cJSON *devices_json(void)
{
    cJSON *devices = cJSON_CreateObject();
    for (int b = 0; devices && b < kt_backend_count(); b++) {
        const kt_backend_iface *be = kt_backend_at(b);
        kt_device_info info;
        memset(&info, 0, sizeof(info));
        be->probe(&info);
        cJSON *dev = kt_provenance_device_json(be->name, &info);
        if (!dev || !cJSON_AddItemToObject(devices, be->name, dev)) {
            cJSON_Delete(dev);
            cJSON_Delete(devices);
            return NULL;
        }
    }
    return devices;
}

int cmd_env(int argc, char **argv)
{
    int json = 0, rc = KT_EXIT_SOFTWARE;
    kt_git_state git;
    kt_diag diag;
    cJSON *prov = NULL, *devices = NULL;
    char *text = NULL;
    int bad = kt_opt_parse_json_only(&json, "env", argc, argv);
    if (bad)
        return bad;
    kt_diag_init(&diag);
    if (kt_git_state_collect(&git, NULL, &diag) != 0)
        fprintf(stderr, "warning: git: %s\n", git.reason ? git.reason : "out of memory");
    kt_diag_print(&diag, stderr);
    prov = kt_provenance_json(&git);
    devices = devices_json();
    if (!prov || !devices || !cJSON_AddItemToObject(prov, "devices", devices)) {
        cJSON_Delete(devices);
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    if (json) {
        text = cJSON_Print(prov);
        if (!text) {
            fprintf(stderr, "error: out of memory\n");
            goto done;
        }
        printf("%s\n", text);
    } else {
        print_object(prov, 0);
    }
    rc = fflush(stdout) == 0 ? KT_EXIT_KEEP : KT_EXIT_IOERR;
done:
    free(text);
    cJSON_Delete(prov);
    kt_git_state_free(&git);
    kt_diag_free(&diag);
    return rc;
}
