/* reproduce_tree.h - the code state an archive recorded, written out again: the commit of
 * provenance.git checked out into a new folder through libgit2, with the archive's git.diff
 * applied on top (tracked edits, staged or not, and untracked files with their contents). */
#ifndef KT_REPRODUCE_TREE_H
#define KT_REPRODUCE_TREE_H

#include <stddef.h>

/* What an archive says about its code state (read from result.json by the caller). */
typedef struct kt_recorded_tree {
    const char *commit;       /* provenance.git.commit, 40 hex */
    const char *diff_path;    /* the archive's git.diff; NULL when the tree was clean */
    const char *diff_blob_id; /* provenance.git.diff_blob_id the patch must hash to */
} kt_recorded_tree;

/* Writes the commit's files into 'dest' (which must exist and be empty), then the patch.
 * The repository is found from 'repo_dir' (the recorded work tree, or where ktrial runs); its
 * index, HEAD and work tree are never touched. Refuses, returning -1 with the reason as the
 * message: a commit the repository does not hold, a git.diff missing, edited (its blob id is
 * not the recorded one), capped (it names files it did not copy: "# ktrial: not copied"), or
 * that does not apply. Sets '*files' to the files the patch touches. */
int kt_reproduce_tree(const kt_recorded_tree *rec, const char *repo_dir, const char *dest,
                      size_t *files);

#endif
