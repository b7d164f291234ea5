/* spec_json.h - the resolved spec as JSON (defaults filled in), for result.json. */
#ifndef KT_SPEC_JSON_H
#define KT_SPEC_JSON_H

#include "spec.h"

#include <cjson/cJSON.h>

cJSON *kt_spec_to_json(const kt_spec *spec);

#endif
