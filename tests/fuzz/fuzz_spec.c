/* fuzz_spec.c - libFuzzer target: the whole spec loader (YAML, schema, meaning) on any bytes. */
#include "spec/spec.h"
#include "util/diag.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kt_spec *spec = NULL;
    kt_diag diag;
    kt_diag_init(&diag);
    kt_spec_options opts = {"sim", 0};
    kt_spec_parse(&spec, "fuzz.yaml", (const char *)data, size, &opts, &diag);
    kt_spec_free(spec);
    kt_diag_free(&diag);
    return 0;
}
