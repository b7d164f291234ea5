/* seal.h - the seal of a run folder: result.json records the SHA-256 of every file of the
 * folder that its verdicts rest on (spec.yaml and the specs a resume replaced, points.jsonl,
 * samples.csv, git.diff, the command trials' outputs/), so that a file changed after the run
 * wrote result.json is seen. And the list of problems the readers' checks collect. */
#ifndef KT_ARCHIVE_SEAL_H
#define KT_ARCHIVE_SEAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

/* Problems found in an archive, one sentence each (what disagrees with what). */
typedef struct kt_problems {
    char **lines;
    size_t n, cap;
} kt_problems;

void kt_problems_add(kt_problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kt_problems_free(kt_problems *p);
/* Prints each problem of the archive 'dir' on 'out' as an error (a warning with 'force'), then
 * a line saying it fails verification and what --force does; nothing when there is none. */
void kt_problems_print(FILE *out, const char *dir, const kt_problems *p, int force);

/* The specs a resume replaced are kept as spec-<sha256 prefix>.yaml beside spec.yaml. */
#define KT_SEAL_OLD_SPEC_PREFIX "spec-"

/* {"algorithm": "sha256", "files": {relative path: hex}} over the sealed files of 'dir' as they
 * are now; NULL with the message set when one cannot be read. */
cJSON *kt_seal_json(const char *dir);

/* Compares 'dir' with the seal 'seal' (result.json's "seal"): a sealed file changed or
 * missing, a file of a sealed kind that the seal does not name. Adds a problem for each;
 * returns their number. */
int kt_seal_check(const char *dir, const cJSON *seal, kt_problems *out);

#endif
