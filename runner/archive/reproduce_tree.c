/* reproduce_tree.c - an archive's commit plus its git.diff, checked out into a new folder
 * through libgit2 without touching the repository's index, HEAD or work tree (see
 * reproduce_tree.h). */
#include "archive/reproduce_tree.h"

#include "kernel.h"
#include "util/read_file.h"

#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KT_PATCH_MAX ((size_t)256 << 20)

static const char *git_message(void)
{
    const git_error *e = git_error_last();
    return e && e->message ? e->message : "unknown libgit2 error";
}

/* The lines "# ktrial: not copied" at the patch's top: files provenance left out. */
static size_t not_copied(const char *patch, char *first, size_t len)
{
    size_t n = 0;
    const char *p = patch;
    static const char mark[] = "# ktrial: not copied";
    first[0] = '\0';
    while (*p == '#') {
        size_t line = strcspn(p, "\n");
        if (strncmp(p, mark, sizeof(mark) - 1) == 0 && n++ == 0)
            snprintf(first, len, "%.*s", (int)line, p);
        p += line + (p[line] == '\n');
    }
    return n;
}

/* Reads the patch and checks it is the one recorded, whole. 0, or -1 with the reason. */
static int read_patch(char **text, size_t *len, const kt_recorded_tree *rec)
{
    git_oid oid;
    char id[GIT_OID_HEXSZ + 1], first[512];
    if (kt_read_file(text, len, rec->diff_path, KT_PATCH_MAX) < 0) {
        char why[512];
        snprintf(why, sizeof(why), "%s", kt_error_last());
        return kt_error_set("the archive records a dirty tree but its git.diff does not read: %s",
                            why);
    }
    size_t capped = not_copied(*text, first, sizeof(first));
    if (capped)
        return kt_error_set("the recorded diff was capped: %zu file%s not copied into git.diff "
                            "(%s), so the tree cannot be rebuilt as it was",
                            capped, capped == 1 ? "" : "s", first);
    if (git_odb_hash(&oid, *text, *len, GIT_OBJECT_BLOB) != 0)
        return kt_error_set("cannot hash git.diff: %s", git_message());
    git_oid_tostr(id, sizeof(id), &oid);
    if (!rec->diff_blob_id || strcmp(id, rec->diff_blob_id) != 0)
        return kt_error_set("git.diff is not the diff the run recorded (blob %s, provenance says "
                            "%s): it was edited or replaced",
                            id, rec->diff_blob_id ? rec->diff_blob_id : "none");
    return 0;
}

/* Checks out 'index' (or 'tree' when 'index' is NULL) into 'dest' alone. */
static int checkout(git_repository *repo, git_index *index, git_tree *tree, const char *dest)
{
    git_checkout_options opts;
    git_checkout_options_init(&opts, GIT_CHECKOUT_OPTIONS_VERSION);
    opts.checkout_strategy =
        GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_UPDATE_INDEX | GIT_CHECKOUT_DONT_WRITE_INDEX;
    opts.target_directory = dest;
    opts.disable_filters = 0; /* line endings as a checkout would write them */
    return index ? git_checkout_index(repo, index, &opts)
                 : git_checkout_tree(repo, (const git_object *)tree, &opts);
}

int kt_reproduce_tree(const kt_recorded_tree *rec, const char *repo_dir, const char *dest,
                      size_t *files)
{
    git_repository *repo = NULL;
    git_commit *commit = NULL;
    git_tree *tree = NULL;
    git_diff *diff = NULL;
    git_index *index = NULL;
    git_oid oid;
    char *patch = NULL;
    size_t len = 0;
    int rc = -1;
    *files = 0;
    git_libgit2_init();
    if (git_repository_open_ext(&repo, repo_dir, 0, NULL) != 0) {
        kt_error_set("no git repository at '%s' to take commit %.7s from: %s", repo_dir,
                     rec->commit, git_message());
        goto done;
    }
    if (git_oid_fromstr(&oid, rec->commit) != 0 || git_commit_lookup(&commit, repo, &oid) != 0) {
        kt_error_set("commit %s is not in the repository at '%s' (fetch it, or run reproduce in "
                     "a clone that has it)",
                     rec->commit,
                     git_repository_workdir(repo) ? git_repository_workdir(repo)
                                                  : git_repository_path(repo));
        goto done;
    }
    if (git_commit_tree(&tree, commit) != 0) {
        kt_error_set("cannot read the tree of %.7s: %s", rec->commit, git_message());
        goto done;
    }
    if (rec->diff_path) {
        if (read_patch(&patch, &len, rec) < 0)
            goto done;
        if (git_diff_from_buffer(&diff, patch, len) != 0 ||
            git_apply_to_tree(&index, repo, tree, diff, NULL) != 0) {
            kt_error_set("git.diff does not apply to %.7s: %s", rec->commit, git_message());
            goto done;
        }
        *files = git_diff_num_deltas(diff);
    }
    if (checkout(repo, index, tree, dest) != 0) {
        kt_error_set("cannot check %.7s out into '%s': %s", rec->commit, dest, git_message());
        goto done;
    }
    rc = 0;
done:
    free(patch);
    git_index_free(index);
    git_diff_free(diff);
    git_tree_free(tree);
    git_commit_free(commit);
    git_repository_free(repo);
    git_libgit2_shutdown();
    return rc;
}
