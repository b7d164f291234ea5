/* fuzz_result.c - libFuzzer target: the result loader ('show', 'compare', --resume) on any
 * bytes: the capped parse, then the points and verdicts read back. */
#include "archive/run_archive.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *doc = NULL;
    if (kt_run_archive_parse_result(&doc, (const char *)data, size, "fuzz.json") == 0) {
        kt_run_result run;
        memset(&run, 0, sizeof(run));
        kt_run_result_from_json(&run, doc);
        kt_run_result_free(&run);
    }
    cJSON_Delete(doc);
    return 0;
}
