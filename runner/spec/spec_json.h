/* spec_json.h - the resolved spec as JSON (defaults filled in), for result.json. */
#ifndef KT_SPEC_JSON_H
#define KT_SPEC_JSON_H

#include "spec/spec.h"

#include <cjson/cJSON.h>

cJSON *kt_spec_to_json(const kt_spec *spec);
/* A params map: numbers, booleans, and enum choices by name. */
cJSON *kt_params_to_json(const kt_param_def *defs, int n, const kt_param_value *values);

#endif
