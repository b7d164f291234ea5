/* schema_hint.h - the hint for a key written under the wrong parent (schema_hint.c). */
#ifndef KT_SCHEMA_HINT_H
#define KT_SCHEMA_HINT_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Looks for 'key', unknown in the object at path 'here' ("thresholds.latency"), anywhere else
 * in 'root''s properties: writes "'max_rel_l2' belongs under thresholds.numerics" (the key
 * itself) or "did you mean thresholds.numerics.max_rel_l2?" (a near miss of it) to 'out' and
 * returns 1; 0 when neither is found. */
int kt_schema_key_elsewhere(char *out, size_t len, const cJSON *root, const char *key,
                            const char *here);

#endif
