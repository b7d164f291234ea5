/* test_provenance.c - git state, the work tree patch, URL stripping and the JSON builders,
 * against real temporary repositories made with the git command. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "archive/provenance.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fixture {
    char tmp[64];       /* the temporary folder, HOME for git */
    char repo[128];     /* tmp/repo */
    char cwd[PATH_MAX]; /* to return to */
} fixture;

/* Runs a shell command (formatted) and fails the test when it does not exit 0. */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("command failed (%d): %s", rc, cmd);
}

/* The first line the (formatted) command prints, without its newline. */
static void sh_read(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sh_read(char *out, size_t len, const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(out, (int)len, p));
    out[strcspn(out, "\n")] = '\0';
    assert_int_equal(pclose(p), 0);
}

static void write_bytes(const char *dir, const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    write_bytes(dir, name, text, strlen(text));
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx)
        return -1;
    snprintf(fx->tmp, sizeof(fx->tmp), "/tmp/kt_prov.XXXXXX");
    if (!getcwd(fx->cwd, sizeof(fx->cwd)) || !mkdtemp(fx->tmp)) {
        free(fx);
        return -1;
    }
    snprintf(fx->repo, sizeof(fx->repo), "%s/repo", fx->tmp);
    /* keep the user's and the system's git configuration out of the tests */
    setenv("HOME", fx->tmp, 1);
    setenv("XDG_CONFIG_HOME", fx->tmp, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    unsetenv("GIT_DIR");
    unsetenv("GIT_WORK_TREE");
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    char cmd[256];
    if (chdir(fx->cwd) != 0)
        return -1;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->tmp);
    int rc = system(cmd);
    free(fx);
    return rc == 0 ? 0 : -1;
}

/* A repository on branch main with a.txt, b.txt, gone.txt, run.sh, bin.dat (binary) and a
 * .gitignore for build/, one commit tagged v1.0. */
static void make_repo(const fixture *fx)
{
    unsigned char bin[512];
    for (size_t i = 0; i < sizeof(bin); i++)
        bin[i] = (unsigned char)(i * 7 + (i >> 3));
    sh("git init -q -b main '%s'", fx->repo);
    sh("cd '%s' && git config user.name t && git config user.email t@example.com", fx->repo);
    write_text(fx->repo, "a.txt", "alpha\nbeta\ngamma\n");
    write_text(fx->repo, "b.txt", "one\ntwo\n");
    write_text(fx->repo, "gone.txt", "to be deleted\n");
    write_text(fx->repo, "run.sh", "echo hi\n");
    write_text(fx->repo, ".gitignore", "build/\n");
    write_bytes(fx->repo, "bin.dat", bin, sizeof(bin));
    sh("cd '%s' && git add -A && git commit -qm init && git tag v1.0", fx->repo);
}

static void collect(kt_git_state *st, const char *dir)
{
    kt_diag diag;
    kt_diag_init(&diag);
    assert_int_equal(kt_git_state_collect(st, dir, &diag), 0);
    assert_int_equal(diag.n_errors, 0);
    assert_int_equal(diag.n, st->available ? 0 : 1);
    kt_diag_free(&diag);
}

static void test_clean_repo(void **state)
{
    fixture *fx = *state;
    char head[64];
    kt_git_state st;
    make_repo(fx);
    sh("cd '%s' && git remote add origin https://me:s3cret@example.com/team/k.git", fx->repo);
    sh("mkdir -p '%s/build' && echo x > '%s/build/out.o'", fx->repo, fx->repo);
    collect(&st, fx->repo);
    assert_true(st.available);
    assert_null(st.reason);
    sh_read(head, sizeof(head), "git -C '%s' rev-parse HEAD", fx->repo);
    assert_string_equal(st.commit, head);
    assert_int_equal(strlen(st.short_id), 7);
    assert_memory_equal(st.short_id, head, 7);
    assert_string_equal(st.branch, "main");
    assert_false(st.detached);
    assert_string_equal(st.describe, "v1.0");
    assert_string_equal(st.remote_url, "https://example.com/team/k.git");
    assert_false(st.dirty); /* the ignored build/out.o does not count */
    assert_int_equal(st.staged + st.unstaged + st.untracked, 0);
    assert_string_equal(st.diff_blob_id, "");
    assert_int_equal(st.diff_bytes, 0);
    kt_git_state_free(&st);

    /* no "origin": the first remote configured */
    sh("cd '%s' && git remote rename origin zeta && git remote add alpha ssh://u:pw@h/a.git",
       fx->repo);
    collect(&st, fx->repo);
    assert_string_equal(st.remote_url, "https://example.com/team/k.git");
    kt_git_state_free(&st);
    sh("cd '%s' && git remote remove zeta && git remote remove alpha", fx->repo);
    collect(&st, fx->repo);
    assert_null(st.remote_url);
    kt_git_state_free(&st);

    /* one commit past the tag: describe says so */
    write_text(fx->repo, "a.txt", "changed\n");
    sh("cd '%s' && git commit -qam second", fx->repo);
    collect(&st, fx->repo);
    char expect[64];
    snprintf(expect, sizeof(expect), "v1.0-1-g%s", st.short_id);
    assert_string_equal(st.describe, expect);
    kt_git_state_free(&st);
}

static void test_dirty_counts(void **state)
{
    fixture *fx = *state;
    kt_git_state st;
    make_repo(fx);
    write_text(fx->repo, "a.txt", "alpha\nBETA\ngamma\n"); /* unstaged */
    write_text(fx->repo, "b.txt", "one\ntwo\nthree\n");    /* staged */
    sh("cd '%s' && git add b.txt", fx->repo);
    sh("mkdir -p '%s/newdir/deeper' '%s/build'", fx->repo, fx->repo);
    write_text(fx->repo, "newdir/n1.txt", "n1\n"); /* untracked, inside a new folder */
    write_text(fx->repo, "newdir/deeper/n2.txt", "n2\n");
    write_text(fx->repo, "build/ignored.o", "ignored\n");
    write_text(fx->repo, "skip.log", "ignored too\n");
    sh("echo '*.log' >> '%s/.git/info/exclude'", fx->repo);
    collect(&st, fx->repo);
    assert_true(st.dirty);
    assert_int_equal(st.staged, 1);
    assert_int_equal(st.unstaged, 1);
    assert_int_equal(st.untracked, 2);
    assert_int_equal(strlen(st.diff_blob_id), 40);
    assert_true(st.diff_bytes > 0);
    kt_git_state_free(&st);

    /* staged and then changed again: both staged and unstaged, like git status */
    write_text(fx->repo, "b.txt", "one\ntwo\nthree\nfour\n");
    collect(&st, fx->repo);
    assert_int_equal(st.staged, 1);
    assert_int_equal(st.unstaged, 2);
    kt_git_state_free(&st);
}

/* The key property: the patch applied to a fresh clone at the recorded commit reproduces the
 * work tree, text, binary, new, deleted and mode-changed files alike. */
static void test_diff_reproduces_work_tree(void **state)
{
    fixture *fx = *state;
    kt_git_state st;
    char path[512], hashed[64], clone[128];
    unsigned char bin[700];
    make_repo(fx);
    for (size_t i = 0; i < sizeof(bin); i++)
        bin[i] = (unsigned char)(i * 13 + 1);
    bin[100] = 0;
    write_text(fx->repo, "a.txt", "alpha\nbeta changed\ngamma\nmore\n");
    write_text(fx->repo, "b.txt", "staged change\n");
    sh("cd '%s' && git add b.txt", fx->repo);
    write_bytes(fx->repo, "bin.dat", bin, sizeof(bin)); /* a binary modification */
    sh("rm '%s/gone.txt' && chmod +x '%s/run.sh'", fx->repo, fx->repo);
    sh("mkdir -p '%s/src/new' '%s/build'", fx->repo, fx->repo);
    write_text(fx->repo, "src/new/kernel.c", "int main(void) { return 0; }\n");
    write_bytes(fx->repo, "src/new/table.bin", bin + 3, 300); /* an untracked binary file */
    write_text(fx->repo, "build/out.o", "ignored\n");
    write_text(fx->repo, "empty.txt", "");
    write_text(fx->repo, "with space \xc3\xa9.txt", "no newline at the end");
    write_text(fx->repo, "b.txt", "staged change\nthen unstaged, no newline");

    collect(&st, fx->repo);
    char collected_id[41];
    memcpy(collected_id, st.diff_blob_id, sizeof(collected_id));
    snprintf(path, sizeof(path), "%s/git.diff", fx->tmp);
    assert_int_equal(kt_git_diff_write(&st, fx->tmp, "git.diff"), 0);
    assert_string_equal(st.diff_blob_id, collected_id);

    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((size_t)sb.st_size, st.diff_bytes);
    sh_read(hashed, sizeof(hashed), "git hash-object '%s'", path);
    assert_string_equal(st.diff_blob_id, hashed);

    snprintf(clone, sizeof(clone), "%s/clone", fx->tmp);
    sh("git clone -q '%s' '%s' && cd '%s' && git checkout -q %s && git apply '%s'", fx->repo, clone,
       clone, st.commit, path);
    /* same files with the same bytes, nothing more, nothing less (ignored build/ aside) */
    sh("diff -r --no-dereference -x .git -x build '%s' '%s'", fx->repo, clone);
    snprintf(path, sizeof(path), "%s/run.sh", clone);
    assert_int_equal(stat(path, &sb), 0);
    assert_true(sb.st_mode & S_IXUSR);
    snprintf(path, sizeof(path), "%s/gone.txt", clone);
    assert_int_not_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/build/out.o", clone);
    assert_int_not_equal(access(path, F_OK), 0);
    kt_git_state_free(&st);
}

static void test_detached_head(void **state)
{
    fixture *fx = *state;
    kt_git_state st;
    make_repo(fx);
    sh("cd '%s' && git checkout -q --detach HEAD", fx->repo);
    collect(&st, fx->repo);
    assert_true(st.available);
    assert_true(st.detached);
    assert_null(st.branch);
    assert_int_equal(strlen(st.commit), 40);
    cJSON *j = kt_provenance_git_json(&st);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "branch")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "detached")));
    cJSON_Delete(j);
    kt_git_state_free(&st);
}

static void test_not_a_repository(void **state)
{
    fixture *fx = *state;
    kt_git_state st;
    kt_diag diag;
    char plain[128];
    snprintf(plain, sizeof(plain), "%s/plain", fx->tmp);
    sh("mkdir -p '%s'", plain);
    assert_int_equal(chdir(plain), 0); /* "." is no repository either */
    kt_diag_init(&diag);
    assert_int_equal(kt_git_state_collect(&st, plain, &diag), 0);
    assert_false(st.available);
    assert_non_null(strstr(st.reason, "not a git repository"));
    assert_int_equal(diag.n, 1);
    assert_int_equal(diag.items[0].severity, KT_DIAG_WARNING);
    assert_int_equal(diag.n_errors, 0);
    cJSON *j = kt_provenance_git_json(&st);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "available")));
    assert_string_equal(cJSON_GetObjectItem(j, "reason")->valuestring, st.reason);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "commit")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "dirty")));
    cJSON_Delete(j);
    kt_diag_free(&diag);
    kt_git_state_free(&st);
}

/* The spec's folder first, then the current folder. */
static void test_discovery_order(void **state)
{
    fixture *fx = *state;
    kt_git_state st;
    char other[128], plain[128], expect[160];
    make_repo(fx);
    snprintf(other, sizeof(other), "%s/other", fx->tmp);
    snprintf(plain, sizeof(plain), "%s/plain", fx->tmp);
    sh("git init -q -b dev '%s' && cd '%s' && git -c user.name=t -c user.email=t@e "
       "commit -q --allow-empty -m x && mkdir -p '%s'",
       other, other, plain);
    sh("mkdir -p '%s/sub/dir'", fx->repo);
    assert_int_equal(chdir(other), 0);
    snprintf(expect, sizeof(expect), "%s/sub/dir", fx->repo);
    collect(&st, expect); /* a subfolder of repo: repo wins over "." */
    snprintf(expect, sizeof(expect), "%s/", fx->repo);
    assert_string_equal(st.workdir, expect);
    assert_string_equal(st.branch, "main");
    kt_git_state_free(&st);
    collect(&st, plain); /* not a repository: "." (other) is used */
    assert_string_equal(st.branch, "dev");
    kt_git_state_free(&st);
}

static void test_unborn_branch(void **state)
{
    fixture *fx = *state;
    kt_git_state st;
    sh("git init -q -b trunk '%s'", fx->repo);
    write_text(fx->repo, "x.txt", "x\n");
    collect(&st, fx->repo);
    assert_false(st.available);
    assert_non_null(strstr(st.reason, "no commits yet"));
    assert_non_null(strstr(st.reason, "'trunk'"));
    char *patch = NULL;
    size_t bytes = 1;
    char id[41];
    assert_int_not_equal(kt_git_diff(&patch, &bytes, id, &st), 0);
    assert_null(patch);
    kt_git_state_free(&st);
}

/* Running as root, a repository owned by someone else is refused by libgit2 (GIT_EOWNER)
 * unless it is a safe.directory; we report it instead of failing. */
static void test_owned_by_another_user(void **state)
{
    fixture *fx = *state;
    kt_git_state st;
    if (geteuid() != 0)
        skip();
    make_repo(fx);
    sh("chown -R 65534:65534 '%s'", fx->repo);
    assert_int_equal(chdir(fx->tmp), 0);
    collect(&st, fx->repo);
    if (st.available) /* a libgit2 that trusts root everywhere */
        skip();
    assert_non_null(strstr(st.reason, "owned by another user"));
    kt_git_state_free(&st);
    /* libgit2 1.5 answers differently once some safe.directory exists */
    sh("git config --global safe.directory /elsewhere");
    collect(&st, fx->repo);
    assert_false(st.available);
    assert_non_null(strstr(st.reason, "owned by another user"));
    kt_git_state_free(&st);
    sh("git config --global --add safe.directory '%s'", fx->repo);
    collect(&st, fx->repo);
    assert_true(st.available);
    kt_git_state_free(&st);
}

static void test_recheck(void **state)
{
    fixture *fx = *state;
    kt_git_state st;
    int changed = -1;
    make_repo(fx);
    collect(&st, fx->repo);
    assert_int_equal(kt_git_state_recheck(&changed, &st), 0);
    assert_int_equal(changed, 0);
    assert_false(st.changed_during_run);
    write_text(fx->repo, "a.txt", "edited during the run\n");
    assert_int_equal(kt_git_state_recheck(&changed, &st), 0);
    assert_int_equal(changed, 1);
    assert_true(st.changed_during_run);
    kt_git_state_free(&st);

    /* dirty at the start, edited again: the counts stay, the patch differs */
    collect(&st, fx->repo);
    assert_int_equal(st.unstaged, 1);
    assert_int_equal(kt_git_state_recheck(&changed, &st), 0);
    assert_int_equal(changed, 0);
    write_text(fx->repo, "a.txt", "edited again\n");
    assert_int_equal(kt_git_state_recheck(&changed, &st), 0);
    assert_int_equal(changed, 1);
    kt_git_state_free(&st);

    /* a commit during the run */
    collect(&st, fx->repo);
    sh("cd '%s' && git commit -qam during", fx->repo);
    assert_int_equal(kt_git_state_recheck(&changed, &st), 0);
    assert_int_equal(changed, 1);
    kt_git_state_free(&st);
}

static void test_strip_url_credentials(void **state)
{
    (void)state;
    static const char *const table[][2] = {
        {"https://user:ghp_token@github.com/org/repo.git", "https://github.com/org/repo.git"},
        {"http://glpat-token@gitlab.local:8080/g/r", "http://gitlab.local:8080/g/r"},
        {"HTTPS://u:p@host/x", "HTTPS://host/x"},
        {"https://u:p@ss@host/x?y=@z", "https://host/x"},
        {"https://host/org/repo.git?access_token=SECRET", "https://host/org/repo.git"},
        {"https://u@host/r?private_token=S#frag", "https://host/r"},
        {"ssh://git@host/r.git#t=SECRET", "ssh://git@host/r.git"},
        {"https://github.com/org/repo.git", "https://github.com/org/repo.git"},
        {"ssh://git:pw@host:22/org/repo.git", "ssh://git@host:22/org/repo.git"},
        {"ssh://git@host/org/repo.git", "ssh://git@host/org/repo.git"},
        {"git@github.com:org/repo.git", "git@github.com:org/repo.git"},
        {"/srv/git/repo.git", "/srv/git/repo.git"},
        {"../relative/repo", "../relative/repo"},
        {"file:///srv/git/repo.git", "file:///srv/git/repo.git"},
        {"", ""},
    };
    char out[128];
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        assert_int_equal(kt_strip_url_credentials(out, sizeof(out), table[i][0]), 0);
        assert_string_equal(out, table[i][1]);
    }
    assert_int_equal(kt_strip_url_credentials(out, 10, "https://github.com/org/repo.git"), -1);
    assert_int_equal(kt_strip_url_credentials(out, 10, "git@github.com:org/repo.git"), -1);
}

static void test_json_builders(void **state)
{
    fixture *fx = *state;
    kt_git_state st;
    make_repo(fx);
    collect(&st, fx->repo);
    cJSON *prov = kt_provenance_json(&st);
    assert_non_null(prov);
    cJSON *git = cJSON_GetObjectItem(prov, "git");
    assert_string_equal(cJSON_GetObjectItem(git, "commit")->valuestring, st.commit);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(git, "staged")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(git, "dirty")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(git, "diff_blob_id")));
    cJSON *host = cJSON_GetObjectItem(prov, "host");
    assert_true(cJSON_GetObjectItem(host, "cores")->valuedouble >= 1);
    assert_true(cJSON_GetObjectItem(host, "memory_bytes")->valuedouble > 1e6);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(host, "hostname")));
    assert_true(cJSON_IsString(cJSON_GetObjectItem(host, "kernel")));
    cJSON *build = cJSON_GetObjectItem(prov, "build");
    const char *keys[] = {"ktrial_version", "compiler", "libyaml", "libgit2", "cjson", "openblas"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        cJSON *v = cJSON_GetObjectItem(build, keys[i]);
        assert_true(cJSON_IsString(v));
        assert_true(strlen(v->valuestring) > 0);
    }
    assert_string_equal(cJSON_GetObjectItem(build, "cjson")->valuestring, cJSON_Version());

    char *argv[] = {"ktrial", "run", "x.yaml"};
    cJSON *run = kt_provenance_add_run(prov, 86400, 0, 3, argv);
    assert_non_null(run);
    assert_string_equal(cJSON_GetObjectItem(run, "start_utc")->valuestring, "1970-01-02T00:00:00Z");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(run, "end_utc")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(run, "argv")), 3);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(run, "argv"), 2)->valuestring,
                        "x.yaml");
    assert_ptr_equal(cJSON_GetObjectItem(prov, "run"), run);
    cJSON_Delete(prov);
    kt_git_state_free(&st);

    kt_device_info info;
    memset(&info, 0, sizeof(info));
    kt_device_info_add(&info, "name", "GPU %d", 7);
    kt_device_info_add(&info, "sms", "%d", 132);
    info.available = 1;
    cJSON *dev = kt_provenance_device_json("cuda", &info);
    assert_string_equal(cJSON_GetObjectItem(dev, "backend")->valuestring, "cuda");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(dev, "available")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(dev, "reason")));
    cJSON *items = cJSON_GetObjectItem(dev, "info");
    assert_int_equal(cJSON_GetArraySize(items), 2);
    assert_string_equal(cJSON_GetObjectItem(items, "name")->valuestring, "GPU 7");
    cJSON_Delete(dev);
    info.available = 0;
    snprintf(info.reason, sizeof(info.reason), "no CUDA device");
    dev = kt_provenance_device_json("cuda", &info);
    assert_string_equal(cJSON_GetObjectItem(dev, "reason")->valuestring, "no CUDA device");
    cJSON_Delete(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clean_repo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dirty_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diff_reproduces_work_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_detached_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_repository, setup, teardown),
        cmocka_unit_test_setup_teardown(test_discovery_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unborn_branch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owned_by_another_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recheck, setup, teardown),
        cmocka_unit_test(test_strip_url_credentials),
        cmocka_unit_test_setup_teardown(test_json_builders, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
