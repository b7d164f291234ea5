/* limits.h - the limits of an experiment fixed before it runs (pre-registration), and seen to
 * move when they were not.
 *
 * limits_lock.c: the decision-relevant parts of a checked spec (its matrix, inputs, arms,
 * thresholds, trials, budget and aggregate) in a canonical form, so that reformatting or
 * comments change nothing; 'ktrial lock SPEC' writes their sha256, one sha256 per key path (so a
 * changed key can be named), the time and the git commit to SPEC.lock
 * (schemas/lock.schema.json).
 *
 * limits_run.c: what 'run' does with them. A spec with a lock must still match it (else exit 65
 * naming the changed keys, unless --relock, which rewrites the lock and is recorded); a spec
 * without one has its thresholds compared with the last archived run of the same experiment in
 * the results folder. Either way the outcome is provenance.limits of result.json, which
 * report/limits_lines.c prints. */
#ifndef KT_RUN_LIMITS_H
#define KT_RUN_LIMITS_H

#include "run/run.h"
#include "spec/spec.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <time.h>

#define KT_LOCK_FORMAT 1

/* The decision-relevant parts of 'spec' as one canonical object (object keys sorted):
 * {aggregate, arms, budget, inputs, matrix, thresholds, trials}. NULL when out of memory. */
cJSON *kt_limits_canonical(const kt_spec *spec);

/* Calls 'fn' for each key path of a canonical object ("thresholds.latency.min_speedup",
 * "arms.candidates[fast].params.median_us"): objects are walked, an array of named objects is
 * walked by name, any other array or value is one key. Stops at fn's first non-zero return. */
typedef int (*kt_limits_key_fn)(const char *path, const cJSON *value, void *ctx);
int kt_limits_walk(const cJSON *obj, const char *prefix, kt_limits_key_fn fn, void *ctx);

/* The canonical text of 'value' (compact JSON, keys sorted), malloc'd; NULL when out of memory. */
char *kt_limits_text(const cJSON *value);

/* A new lock document for 'spec' made at 'now' with git's state from the spec's folder:
 * {format, experiment, sha256, locked_utc, git: {commit, dirty} | null, keys: {path: sha256}}.
 * NULL with the message set. */
cJSON *kt_limits_lock_new(const kt_spec *spec, time_t now);

/* "SPEC.lock" for 'spec_path'. 0, or -1 when it does not fit. */
int kt_limits_lock_path(char *out, size_t len, const char *spec_path);

/* Reads and checks the lock at 'path' into '*out': 0, 1 when there is none, or -1 with the
 * message set (unreadable, not JSON, or not a lock). */
int kt_limits_lock_read(cJSON **out, const char *path);

/* Writes 'lock' to 'path' (a fresh temporary, fsync, rename). 0, or -1 with the message set. */
int kt_limits_lock_write(const char *path, const cJSON *lock);

/* The key paths whose sha256 differ between 'lock' and 'now' (two lock documents), added or
 * removed ones included, as one malloc'd comma-separated list in '*changed' ("" when they
 * agree; NULL when out of memory). Returns their number. */
size_t kt_limits_lock_diff(char **changed, const cJSON *lock, const cJSON *now);

/* The run's check, before it takes a folder: the lock (refusal, --relock) or the thresholds
 * against the last archived run; sets st->limits (provenance.limits). 0, or the exit code after
 * printing the error. */
int kt_run_check_limits(kt_run *st);

#endif
