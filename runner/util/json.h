/* json.h - cJSON helpers for numbers that must survive a round trip.
 *
 * Finite doubles are printed with 17 significant digits (exact round trip); NaN and the
 * infinities, which JSON cannot hold, are written as the strings "NaN", "Infinity" and
 * "-Infinity" so a reader can tell them from a missing value. */
#ifndef KT_JSON_H
#define KT_JSON_H

#include <cjson/cJSON.h>

cJSON *kt_json_real(double v);
cJSON *kt_json_add_real(cJSON *obj, const char *key, double v);
/* Reads a number or one of the three strings; 'fallback' when absent or of another type. */
double kt_json_get_real(const cJSON *obj, const char *key, double fallback);
double kt_json_real_value(const cJSON *item, double fallback);
/* Reads a string member into 'buf' ("" when absent), control characters escaped (see
 * util/sanitize.h): result files are read back and printed. */
const char *kt_json_get_str(const cJSON *obj, const char *key, char *buf, size_t len);
int kt_json_get_bool(const cJSON *obj, const char *key, int fallback);
/* The item at a dotted key path ("provenance.run.shard"), or NULL. */
const cJSON *kt_json_at_path(const cJSON *obj, const char *dotted_path);
/* Adds a string, or null when 's' is NULL or empty. */
cJSON *kt_json_add_str_or_null(cJSON *obj, const char *key, const char *s);
/* Prints 'item' with two-space indentation; the caller frees. */
char *kt_json_print(const cJSON *item);

#endif
