/* provenance.h - what a run records about the code, the machine and the build: the git state
 * of the work tree (libgit2), the host, the build, the device, and the run itself. */
#ifndef KT_PROVENANCE_H
#define KT_PROVENANCE_H

#include "util/diag.h"
#include "kernel.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <time.h>

/* The state of the repository around the code, as of one moment. Strings are heap-owned by
 * the struct (kt_git_state_free); NULL means "none" (branch when detached, remote when there
 * is no remote). When 'available' is 0 only 'reason' is set. */
typedef struct kt_git_state {
    int available;
    char *reason;     /* why git is unavailable: not a repository, unborn, owned by another user */
    char *workdir;    /* the work tree's root, with a trailing slash */
    char commit[41];  /* full sha of HEAD */
    char short_id[8]; /* the first 7 characters of 'commit' */
    long long commit_time; /* the commit's committer time, seconds since the epoch (UTC) */
    char *branch;          /* "main"; NULL when detached */
    int detached;
    char *describe;        /* git describe --tags, falling back to the abbreviated commit id */
    char *remote_url;      /* "origin" (else the first remote), credentials stripped; may be NULL */
    int dirty;             /* staged + unstaged + untracked > 0; ignored files never count */
    int staged;            /* paths whose index entry differs from HEAD */
    int unstaged;          /* tracked paths whose work tree file differs from the index */
    int untracked;         /* new paths, neither tracked nor ignored */
    char diff_blob_id[41]; /* blob id of the patch (as 'git hash-object'); "" when clean */
    size_t diff_bytes;     /* the patch's size in bytes; 0 when clean */
    int changed_during_run; /* set by kt_git_state_recheck */
} kt_git_state;

/* Collects the state of the repository found by discovery from 'start_dir' (may be NULL),
 * then from the current folder. Never fails for a missing, unborn, bare or foreign-owned
 * repository: 'out->available' is 0, 'out->reason' says why, and a warning goes to 'diag'
 * (may be NULL). Returns 0, or -1 on memory exhaustion or an unexpected libgit2 error, with
 * the message as 'out->reason'. 'out' must be freed with kt_git_state_free in every case. */
int kt_git_state_collect(kt_git_state *out, const char *start_dir, kt_diag *diag);
void kt_git_state_free(kt_git_state *st);

/* The full patch of the work tree against HEAD, staged and unstaged changes together,
 * untracked files with their contents, binary files as git binary patches with full index
 * lines: 'git apply' of it onto a checkout of 'st->commit' reproduces the work tree.
 * '*patch_out' is malloc'd (NUL-terminated, the terminator not counted in '*bytes_out').
 * Fills 'blob_id_out' with the patch's blob id. Returns 0 or -1 with kt_error_last() set. */
int kt_git_diff(char **patch_out, size_t *bytes_out, char blob_id_out[41], const kt_git_state *st);

/* Writes the patch to 'dir/name' (kt_archive_write: a fresh temporary and a rename, no link
 * followed) and records its blob id and size in 'st'. Returns 0, or -1 with kt_error_last()
 * set. The patch never holds files named like secrets, nor untracked files over 1 MiB (or
 * past 16 MiB of them): a "# ktrial: not copied" line at its top names each, with size and
 * sha256 for the large ones (see provenance_filter.h). */
int kt_git_diff_write(kt_git_state *st, const char *dir, const char *name);

/* Looks at the repository again (at the end of a run): sets 'st->changed_during_run' and
 * '*changed_out' to 1 when HEAD, the branch, the counts or the patch differ from what was
 * collected. A repository that was unavailable stays so and counts as unchanged. Returns 0,
 * or -1 with kt_error_last() set. */
int kt_git_state_recheck(int *changed_out, kt_git_state *st);

/* Copies 'url' into 'out' without secrets: http(s) URLs lose their whole user-info part
 * (a token is often given as the user name), other URLs with an authority (ssh://, git://)
 * lose the password but keep the user name; a query string or fragment is dropped (it may
 * hold ?access_token=...); scp-like "user@host:path" and local paths are kept as they are
 * (they cannot hold a password). Returns 0, or -1 when 'out' is too small
 * ('out' is then truncated). */
int kt_strip_url_credentials(char *out, size_t len, const char *url);

/* The JSON objects. Each returns a new object owned by the caller, or NULL on memory
 * exhaustion. */
cJSON *kt_provenance_git_json(const kt_git_state *st);
/* {hostname, os, kernel, arch, cpu_model, cores, memory_bytes}. */
cJSON *kt_provenance_host_json(void);
/* {ktrial_version, ktrial_commit, build_type, compiler, flags, libyaml, libgit2, cjson,
 * openblas, and with CUDA: cuda_compiler, cuda_runtime (built against), cublaslt}; the driver is in
 * the device probe. */
cJSON *kt_provenance_build_json(void);
/* {backend, available, reason (null when available), info: {key: value, ...}}. */
cJSON *kt_provenance_device_json(const char *backend, const kt_device_info *info);
/* {git, host, build}: the parts that do not depend on the backend or the run. */
cJSON *kt_provenance_json(const kt_git_state *st);

#define KT_RUN_ID_LEN 48

/* Adds "run": {start_utc, end_utc (null while running), argv: [...]} to 'prov' and returns
 * that object (so the caller can add seeds), or NULL on memory exhaustion. */
cJSON *kt_provenance_add_run(cJSON *prov, time_t start, time_t end, int argc, char *const *argv);

/* One entry of provenance.run.sessions, a run's sessions (the first, then one per --resume):
 * {start_utc, end_utc (null while running), argv, commit (null without git), diff_blob_id (null
 * when clean), points: what the session added to points.jsonl, null when 'points' < 0}. */
cJSON *kt_provenance_session_json(const kt_git_state *git, time_t start, time_t end, int argc,
                                  char *const *argv, double points);
/* The sessions a result.json records, for the one a --resume adds (a copy, the caller's). An
 * archive written before sessions were recorded gives its last session, points null. NULL on
 * memory exhaustion. */
cJSON *kt_provenance_prior_sessions(const cJSON *doc);

/* A new run id, "20240501T123456Z-1a2b3c4d": the start time and 32 random bits. It names
 * one archive for good (kept by --resume) and fills samples.csv's run_id column. */
void kt_run_id_new(char out[KT_RUN_ID_LEN], time_t start);

/* Formats 't' as ISO 8601 UTC, "2024-05-01T12:34:56Z". Returns 0 or -1. */
int kt_utc_iso8601(char out[32], time_t t);

#endif
