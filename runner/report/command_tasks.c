/* command_tasks.c - 'ktrial show' for command trials: per candidate and point, the tasks whose
 * outputs differ most from their reference, with the file kept for review. */
#include "report/command_tasks.h"
#include "util/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOWN 5

typedef struct task_diff {
    int task;
    double rel_l2, cosine, max_abs;
} task_diff;

static int by_rel_l2(const void *a, const void *b)
{
    double x = ((const task_diff *)a)->rel_l2, y = ((const task_diff *)b)->rel_l2;
    return (y > x) - (y < x); /* descending */
}

static const char *extension(const char *format)
{
    if (strcmp(format, "json-numbers") == 0)
        return "json";
    return strcmp(format, "text") == 0 ? "txt" : format;
}

void kt_print_command_tasks(FILE *out, const cJSON *doc, const char *dir)
{
    const cJSON *parsed =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "spec"), "parsed");
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(parsed, "command");
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(cmd, "tasks");
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(cmd, "output_format");
    if (!cJSON_IsArray(tasks) || !cJSON_IsString(format))
        return;
    int n_tasks = cJSON_GetArraySize(tasks), header = 0;
    task_diff *d = calloc((size_t)(n_tasks ? n_tasks : 1), sizeof(*d));
    const cJSON *point, *cand;
    cJSON_ArrayForEach(point, cJSON_GetObjectItemCaseSensitive(doc, "points"))
    {
        char id[192] = "";
        kt_json_get_str(point, "id", id, sizeof(id));
        cJSON_ArrayForEach(cand, cJSON_GetObjectItemCaseSensitive(point, "candidates"))
        {
            int n = 0;
            const cJSON *num;
            cJSON_ArrayForEach(num, cJSON_GetObjectItemCaseSensitive(cand, "numerics"))
            {
                int t = (int)kt_json_get_real(num, "input_set", -1);
                double rel = kt_json_get_real(num, "rel_l2", NAN);
                if (!d || t < 0 || t >= n_tasks || !(rel > 0))
                    continue;
                d[n++] = (task_diff){t, rel, kt_json_get_real(num, "cosine", NAN),
                                     kt_json_get_real(num, "max_abs", NAN)};
            }
            if (n == 0)
                continue;
            qsort(d, (size_t)n, sizeof(*d), by_rel_l2);
            char name[64] = "";
            kt_json_get_str(cand, "name", name, sizeof(name));
            if (!header++)
                fprintf(out, "\ntasks whose outputs differ most (worst call of each task):\n");
            fprintf(out, "  %s at %s:\n", name, id);
            for (int i = 0; i < n && i < SHOWN; i++) {
                const char *task = cJSON_GetArrayItem(tasks, d[i].task)->valuestring;
                fprintf(out,
                        "    %-24s rel_l2 %-10.3g cosine %-10.6f max_abs %-10.3g "
                        "%s/outputs/%s/%s/%s.%s\n",
                        task, d[i].rel_l2, d[i].cosine, d[i].max_abs, dir, id, name, task,
                        extension(format->valuestring));
            }
        }
    }
    free(d);
}
