/* json.c - exact doubles and explicit non-finite values in cJSON documents. */
#include "util/json.h"
#include "util/sanitize.h"
#include "util/dotted_path.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *kt_json_real(double v)
{
    if (isnan(v))
        return cJSON_CreateString("NaN");
    if (isinf(v))
        return cJSON_CreateString(v > 0 ? "Infinity" : "-Infinity");
    char buf[40];
    if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, sizeof(buf), "%.0f", v);
    else
        snprintf(buf, sizeof(buf), "%.17g", v);
    return cJSON_CreateRaw(buf);
}

cJSON *kt_json_add_real(cJSON *obj, const char *key, double v)
{
    cJSON *item = kt_json_real(v);
    if (item)
        cJSON_AddItemToObject(obj, key, item);
    return item;
}

double kt_json_real_value(const cJSON *item, double fallback)
{
    if (!item)
        return fallback;
    if (cJSON_IsNumber(item))
        return item->valuedouble;
    if (cJSON_IsRaw(item) && item->valuestring)
        return strtod(item->valuestring, NULL);
    if (cJSON_IsString(item)) {
        if (strcmp(item->valuestring, "NaN") == 0)
            return NAN;
        if (strcmp(item->valuestring, "Infinity") == 0)
            return INFINITY;
        if (strcmp(item->valuestring, "-Infinity") == 0)
            return -INFINITY;
    }
    return fallback;
}

double kt_json_get_real(const cJSON *obj, const char *key, double fallback)
{
    return kt_json_real_value(cJSON_GetObjectItemCaseSensitive(obj, key), fallback);
}

const char *kt_json_get_str(const cJSON *obj, const char *key, char *buf, size_t len)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    /* read from files that may be hostile and are printed: control characters escaped */
    return kt_sanitize(buf, len, cJSON_IsString(item) ? item->valuestring : "");
}

int kt_json_get_bool(const cJSON *obj, const char *key, int fallback)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsBool(item) ? cJSON_IsTrue(item) : fallback;
}

cJSON *kt_json_add_str_or_null(cJSON *obj, const char *key, const char *s)
{
    if (s && *s)
        return cJSON_AddStringToObject(obj, key, s);
    return cJSON_AddNullToObject(obj, key);
}

char *kt_json_print(const cJSON *item)
{
    return cJSON_Print(item);
}

const cJSON *kt_json_at_path(const cJSON *obj, const char *dotted_path)
{
    const char *p = dotted_path;
    char key[128];
    int more = 0;
    while (obj && (more = kt_path_next_key(&p, key, sizeof(key))) > 0)
        obj = cJSON_GetObjectItemCaseSensitive(obj, key);
    return more < 0 ? NULL : obj;
}
