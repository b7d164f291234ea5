/* provenance_git.c - the git state of the work tree, its patch against HEAD, and remote URLs
 * without credentials, through libgit2. */
#include "archive/archive.h"
#include "archive/provenance.h"
#include "archive/provenance_filter.h"

#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>

/* Replaces '*dst' with a copy of 'src' (NULL stays NULL). Returns 0 or -1. */
static int set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = NULL;
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -1;
}

static const char *git_message(void)
{
    const git_error *e = git_error_last();
    return e && e->message ? e->message : "unknown libgit2 error";
}

void kt_git_state_free(kt_git_state *st)
{
    if (!st)
        return;
    free(st->reason);
    free(st->workdir);
    free(st->branch);
    free(st->describe);
    free(st->remote_url);
    memset(st, 0, sizeof(*st));
}

/* Says in 'reason' (malloc'd) why 'dir' did not open as a repository, for error 'rc'. */
static char *open_failure(int rc, const char *given)
{
    char *reason = NULL, real[PATH_MAX];
    const char *dir = realpath(given, real) ? real : given; /* '.' says nothing in a message */
    int n;
    if (rc == GIT_ENOTFOUND)
        n = asprintf(&reason, "not a git repository (or any parent): '%s'", dir);
    else if (rc == GIT_EOWNER)
        n = asprintf(&reason,
                     "repository at '%s' is owned by another user (see git's safe.directory)", dir);
    else
        n = asprintf(&reason, "cannot open a git repository at '%s': %s", dir, git_message());
    return n < 0 ? NULL : reason;
}

/* libgit2 1.5 reports a repository owned by another user as GIT_ENOTFOUND when no
 * safe.directory is configured at all (GIT_EOWNER only when one is). Tells the two apart from
 * the file system, not from the message: walks up from 'dir' to the first folder holding a
 * ".git" and says whether that folder belongs to someone else. */
static int owned_by_another_user(const char *dir)
{
    char *path = realpath(dir, NULL);
    int other = 0;
    if (!path)
        return 0;
    for (;;) {
        char dotgit[PATH_MAX];
        struct stat st;
        if (snprintf(dotgit, sizeof(dotgit), "%s/.git", *path ? path : "") < (int)sizeof(dotgit) &&
            lstat(dotgit, &st) == 0) {
            struct stat top;
            other = stat(*path ? path : "/", &top) == 0 && top.st_uid != geteuid();
            break;
        }
        char *slash = strrchr(path, '/');
        if (!slash || !*path)
            break;
        *slash = '\0';
    }
    free(path);
    return other;
}

/* Opens the repository found from 'start_dir', then from ".". On failure returns the error
 * and sets '*reason' for the more telling failure (anything but "not found" wins). */
static int discover(git_repository **repo, char **reason, const char *start_dir)
{
    const char *dirs[2] = {start_dir, "."};
    int best = 0;
    *repo = NULL;
    *reason = NULL;
    for (int i = 0; i < 2; i++) {
        if (!dirs[i])
            continue;
        int rc = git_repository_open_ext(repo, dirs[i], 0, NULL);
        if (rc == GIT_ENOTFOUND && owned_by_another_user(dirs[i]))
            rc = GIT_EOWNER;
        if (rc == 0) {
            free(*reason);
            *reason = NULL;
            return 0;
        }
        if (!*reason || (best == GIT_ENOTFOUND && rc != GIT_ENOTFOUND)) {
            free(*reason);
            *reason = open_failure(rc, dirs[i]);
            best = rc;
        }
    }
    return best ? best : GIT_ENOTFOUND;
}

/* The branch HEAD points at, for an unborn HEAD ("refs/heads/main" -> "main"). */
static const char *unborn_branch(git_repository *repo, git_reference **head)
{
    if (git_reference_lookup(head, repo, "HEAD") != 0)
        return "HEAD";
    const char *target = git_reference_symbolic_target(*head);
    if (!target)
        return "HEAD";
    return strncmp(target, "refs/heads/", 11) == 0 ? target + 11 : target;
}

static int collect_describe(kt_git_state *out, git_commit *commit)
{
    git_describe_options opts;
    git_describe_format_options fopts;
    git_describe_result *res = NULL;
    git_buf buf = {0};
    git_describe_options_init(&opts, GIT_DESCRIBE_OPTIONS_VERSION);
    git_describe_format_options_init(&fopts, GIT_DESCRIBE_FORMAT_OPTIONS_VERSION);
    opts.describe_strategy = GIT_DESCRIBE_TAGS;
    opts.show_commit_oid_as_fallback = 1;
    int rc = git_describe_commit(&res, (git_object *)commit, &opts);
    if (rc == 0)
        rc = git_describe_format(&buf, res, &fopts);
    if (rc == 0)
        rc = set_str(&out->describe, buf.ptr);
    git_buf_dispose(&buf);
    git_describe_result_free(res);
    return rc;
}

/* commit, short id, branch, detached, describe. */
static int collect_head(kt_git_state *out, git_repository *repo)
{
    git_reference *head = NULL;
    git_commit *commit = NULL;
    int rc = git_repository_head(&head, repo);
    if (rc == 0)
        rc = git_commit_lookup(&commit, repo, git_reference_target(head));
    if (rc != 0)
        goto done;
    git_oid_tostr(out->commit, sizeof(out->commit), git_commit_id(commit));
    out->commit_time = (long long)git_commit_time(commit);
    memcpy(out->short_id, out->commit, 7);
    out->short_id[7] = '\0';
    out->detached = git_repository_head_detached(repo) == 1;
    if (!out->detached && (rc = set_str(&out->branch, git_reference_shorthand(head))) != 0)
        goto done;
    rc = collect_describe(out, commit);
done:
    git_commit_free(commit);
    git_reference_free(head);
    return rc;
}

/* The URL of "origin", else of the first remote in configuration order; none is not an
 * error. Read from the configuration directly: git_remote_lookup and git_remote_list leak
 * pcre2 match data in libgit2 1.5 (git_regexp_match on a non-match). The URL is the one
 * configured, before any url.<base>.insteadOf rewriting. */
static int collect_remote(kt_git_state *out, git_repository *repo)
{
    git_config *cfg = NULL;
    git_config_iterator *it = NULL;
    git_config_entry *entry;
    const char *url = NULL;
    int rc = git_repository_config_snapshot(&cfg, repo);
    if (rc != 0)
        return rc;
    rc = git_config_get_string(&url, cfg, "remote.origin.url");
    if (rc == GIT_ENOTFOUND && (rc = git_config_iterator_new(&it, cfg)) == 0) {
        while ((rc = git_config_next(&entry, it)) == 0) {
            size_t n = strlen(entry->name);
            if (strncmp(entry->name, "remote.", 7) == 0 && n > 11 &&
                strcmp(entry->name + n - 4, ".url") == 0) {
                url = entry->value;
                break;
            }
        }
        rc = rc == GIT_ITEROVER ? 0 : rc;
    }
    if (rc == 0 && url) {
        size_t len = strlen(url) + 1;
        free(out->remote_url);
        out->remote_url = malloc(len);
        rc = out->remote_url ? kt_strip_url_credentials(out->remote_url, len, url) : -1;
    }
    git_config_iterator_free(it);
    git_config_free(cfg);
    return rc;
}

/* Counts like 'git status': a path may be both staged and unstaged; ignored paths are not
 * listed at all. A conflicted path counts as unstaged. */
static int collect_status(kt_git_state *out, git_repository *repo)
{
    git_status_options opts;
    git_status_list *list = NULL;
    git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);
    opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
    opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS;
    int rc = git_status_list_new(&list, repo, &opts);
    if (rc != 0)
        return rc;
    const unsigned staged = GIT_STATUS_INDEX_NEW | GIT_STATUS_INDEX_MODIFIED |
                            GIT_STATUS_INDEX_DELETED | GIT_STATUS_INDEX_RENAMED |
                            GIT_STATUS_INDEX_TYPECHANGE;
    const unsigned unstaged = GIT_STATUS_WT_MODIFIED | GIT_STATUS_WT_DELETED |
                              GIT_STATUS_WT_TYPECHANGE | GIT_STATUS_WT_RENAMED |
                              GIT_STATUS_CONFLICTED;
    out->staged = out->unstaged = out->untracked = 0;
    size_t n = git_status_list_entrycount(list);
    for (size_t i = 0; i < n; i++) {
        unsigned s = git_status_byindex(list, i)->status;
        out->staged += (s & staged) != 0;
        out->unstaged += (s & unstaged) != 0;
        out->untracked += (s & GIT_STATUS_WT_NEW) != 0;
    }
    out->dirty = out->staged + out->unstaged + out->untracked > 0;
    git_status_list_free(list);
    return 0;
}

static int filter_delta(const git_diff *so_far, const git_diff_delta *delta, const char *pathspec,
                        void *payload)
{
    (void)so_far;
    (void)pathspec;
    return kt_diff_filter_skip(payload, delta->new_file.path, delta->status == GIT_DELTA_UNTRACKED);
}

/* The patch of the work tree against the tree of 'commit_hex' (malloc'd into '*out'): first
 * a "# ktrial: not copied" line for each file left out (git apply skips lines before the
 * first diff), then the patch without them. */
static int diff_patch(char **out, size_t *out_len, git_repository *repo, const char *commit_hex)
{
    git_oid oid;
    git_commit *commit = NULL;
    git_tree *tree = NULL;
    git_diff *diff = NULL;
    git_buf buf = {0};
    git_diff_options opts;
    kt_diff_filter filter = {git_repository_workdir(repo), 0, NULL, 0, 0};
    git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
    opts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
                 GIT_DIFF_SHOW_UNTRACKED_CONTENT | GIT_DIFF_SHOW_BINARY;
    opts.notify_cb = filter_delta;
    opts.payload = &filter;
    *out = NULL;
    *out_len = 0;
    int rc = git_oid_fromstr(&oid, commit_hex);
    if (rc == 0)
        rc = git_commit_lookup(&commit, repo, &oid);
    if (rc == 0)
        rc = git_commit_tree(&tree, commit);
    if (rc == 0)
        rc = git_diff_tree_to_workdir_with_index(&diff, repo, tree, &opts);
    if (rc == 0)
        rc = git_diff_to_buf(&buf, diff, GIT_DIFF_FORMAT_PATCH);
    if (rc == 0 && filter.failed)
        rc = -1;
    if (rc == 0) {
        *out_len = filter.notes_len + buf.size;
        *out = malloc(*out_len + 1);
        if (!*out)
            rc = -1;
    }
    if (rc == 0) {
        if (filter.notes_len)
            memcpy(*out, filter.notes, filter.notes_len);
        if (buf.size)
            memcpy(*out + filter.notes_len, buf.ptr, buf.size);
        (*out)[*out_len] = '\0';
    }
    free(filter.notes);
    git_buf_dispose(&buf);
    git_diff_free(diff);
    git_tree_free(tree);
    git_commit_free(commit);
    return rc;
}

static int blob_id(char out[41], const char *data, size_t bytes)
{
    git_oid oid;
    int rc = git_odb_hash(&oid, data, bytes, GIT_OBJECT_BLOB);
    if (rc == 0)
        git_oid_tostr(out, 41, &oid);
    return rc;
}

/* Everything but the availability: head, remote, status, and the patch's id when dirty. */
static int collect_open(kt_git_state *out, git_repository *repo)
{
    char *patch = NULL;
    size_t bytes = 0;
    int rc = collect_head(out, repo);
    if (rc == 0)
        rc = collect_remote(out, repo);
    if (rc == 0)
        rc = collect_status(out, repo);
    if (rc == 0 && out->dirty)
        rc = diff_patch(&patch, &bytes, repo, out->commit);
    if (rc == 0 && out->dirty)
        rc = blob_id(out->diff_blob_id, patch, bytes);
    out->diff_bytes = out->dirty ? bytes : 0;
    free(patch);
    return rc;
}

static int unavailable(kt_git_state *out, kt_diag *diag, char *reason)
{
    out->available = 0;
    free(out->reason);
    out->reason = reason;
    if (!reason)
        return -1;
    if (diag)
        kt_diag_warning(diag, NULL, 0, 0, "git: %s; provenance has no code state", reason);
    return 0;
}

int kt_git_state_collect(kt_git_state *out, const char *start_dir, kt_diag *diag)
{
    git_repository *repo = NULL;
    git_reference *head = NULL;
    char *reason = NULL;
    int rc = 0;
    memset(out, 0, sizeof(*out));
    git_libgit2_init();
    if (discover(&repo, &reason, start_dir) != 0) {
        rc = unavailable(out, diag, reason);
        goto done;
    }
    const char *workdir = git_repository_workdir(repo);
    if (!workdir) {
        rc = asprintf(&reason, "'%s' is a bare repository", git_repository_path(repo));
        rc = unavailable(out, diag, rc < 0 ? NULL : reason);
        goto done;
    }
    if (git_repository_head_unborn(repo) == 1) {
        const char *branch = unborn_branch(repo, &head);
        rc = asprintf(&reason, "branch '%s' of '%s' has no commits yet", branch, workdir);
        rc = unavailable(out, diag, rc < 0 ? NULL : reason);
        goto done;
    }
    if ((rc = set_str(&out->workdir, workdir)) != 0)
        goto done;
    out->available = 1;
    if ((rc = collect_open(out, repo)) != 0) {
        out->available = 0;
        rc = -1;
        if (asprintf(&reason, "cannot read the git state of '%s': %s", workdir, git_message()) >= 0)
            out->reason = reason;
    }
done:
    git_reference_free(head);
    git_repository_free(repo);
    git_libgit2_shutdown();
    return rc;
}

int kt_git_diff(char **patch_out, size_t *bytes_out, char blob_id_out[41], const kt_git_state *st)
{
    git_repository *repo = NULL;
    int rc = -1;
    *patch_out = NULL;
    *bytes_out = 0;
    if (!st->available)
        return kt_error_set("no git state to diff: %s", st->reason ? st->reason : "unknown");
    git_libgit2_init();
    if (git_repository_open(&repo, st->workdir) != 0 ||
        diff_patch(patch_out, bytes_out, repo, st->commit) != 0 ||
        blob_id(blob_id_out, *patch_out, *bytes_out) != 0) {
        kt_error_set("cannot diff '%s' against %s: %s", st->workdir, st->short_id, git_message());
        free(*patch_out);
        *patch_out = NULL;
        *bytes_out = 0;
        goto done;
    }
    rc = 0;
done:
    git_repository_free(repo);
    git_libgit2_shutdown();
    return rc;
}

int kt_git_diff_write(kt_git_state *st, const char *dir, const char *name)
{
    char *patch = NULL;
    char id[41];
    size_t bytes = 0;
    if (kt_git_diff(&patch, &bytes, id, st) != 0)
        return -1;
    int rc = kt_archive_write(dir, name, patch, bytes); /* O_EXCL temporary, no links */
    if (rc == 0) {
        memcpy(st->diff_blob_id, id, sizeof(id));
        st->diff_bytes = bytes;
    }
    free(patch);
    return rc;
}

static int str_differ(const char *a, const char *b)
{
    if (!a || !b)
        return a != b;
    return strcmp(a, b) != 0;
}

int kt_git_state_recheck(int *changed_out, kt_git_state *st)
{
    git_repository *repo = NULL;
    kt_git_state now;
    int rc = 0;
    *changed_out = 0;
    memset(&now, 0, sizeof(now));
    if (!st->available)
        return 0;
    git_libgit2_init();
    if (git_repository_open(&repo, st->workdir) != 0) {
        /* the repository went away under the run: that is a change */
        *changed_out = 1;
        goto done;
    }
    if (git_repository_head_unborn(repo) == 1 || collect_head(&now, repo) != 0) {
        *changed_out = 1;
        goto done;
    }
    if (strcmp(now.commit, st->commit) != 0 || str_differ(now.branch, st->branch)) {
        *changed_out = 1;
        goto done;
    }
    /* same HEAD: compare the counts and the patch */
    if (collect_open(&now, repo) != 0) {
        rc = kt_error_set("cannot read the git state of '%s': %s", st->workdir, git_message());
        goto done;
    }
    *changed_out = now.staged != st->staged || now.unstaged != st->unstaged ||
                   now.untracked != st->untracked || strcmp(now.diff_blob_id, st->diff_blob_id);
done:
    if (rc == 0)
        st->changed_during_run = *changed_out;
    kt_git_state_free(&now);
    git_repository_free(repo);
    git_libgit2_shutdown();
    return rc;
}

int kt_strip_url_credentials(char *out, size_t len, const char *url)
{
    const char *scheme_end = strstr(url, "://");
    const char *slash = strchr(url, '/');
    /* scp-like "user@host:path" and local paths: nothing secret can be in them */
    if (!scheme_end || (slash && slash < scheme_end)) {
        int n = snprintf(out, len, "%s", url);
        return n < 0 || (size_t)n >= len ? -1 : 0;
    }
    const char *auth = scheme_end + 3;
    size_t auth_len = strcspn(auth, "/?#");
    /* a query or fragment may carry a token (?access_token=...): never kept */
    size_t keep = strcspn(url, "?#");
    const char *at = NULL;
    for (const char *p = auth; p < auth + auth_len; p++)
        if (*p == '@')
            at = p; /* the last '@': a password may contain an unescaped one */
    if (!at) {
        int n = snprintf(out, len, "%.*s", (int)keep, url);
        return n < 0 || (size_t)n >= len ? -1 : 0;
    }
    int is_http = (scheme_end - url == 4 && strncasecmp(url, "http", 4) == 0) ||
                  (scheme_end - url == 5 && strncasecmp(url, "https", 5) == 0);
    const char *colon = memchr(auth, ':', (size_t)(at - auth));
    int user_len = is_http ? 0 : (int)((colon ? colon : at) - auth);
    int n = snprintf(out, len, "%.*s%.*s%s%.*s", (int)(auth - url), url, user_len, auth,
                     user_len ? "@" : "", (int)(url + keep - (at + 1)), at + 1);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}
