/* test_archive.c - the run folder: safe names, mkdir -p, atomic writes that leave no
 * temporary file, appends, kt_read_file's size limit; and run_archive.c on top of them:
 * points.jsonl and samples.csv as a run appends them, a line cut by a crash, result.json. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "archive/archive.h"
#include "archive/run_archive.h"
#include "decide/aggregate.h"
#include "util/json.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[PATH_MAX];

static int make_root(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/kt-test-archive-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int remove_root(void **state)
{
    (void)state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* 'root'/'name' into 'buf'. */
static const char *at(char *buf, const char *name)
{
    snprintf(buf, PATH_MAX, "%s/%s", root, name);
    return buf;
}

static char *slurp(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(kt_read_file(&text, &len, path, 1 << 20), 0);
    assert_int_equal(strlen(text), len);
    return text;
}

/* Writes 'len' bytes of 'c' to 'path' with stdio (independent of the code under test). */
static void fill_file(const char *path, char c, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < len; i++)
        fputc(c, f);
    assert_int_equal(fclose(f), 0);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void test_name_ok(void **state)
{
    (void)state;
    char longest[66];
    memset(longest, 'a', 64);
    longest[64] = '\0';
    assert_true(kt_archive_name_ok("sim-quickstart"));
    assert_true(kt_archive_name_ok("a.b_c-9"));
    assert_true(kt_archive_name_ok(longest));
    longest[64] = 'a';
    longest[65] = '\0';
    assert_false(kt_archive_name_ok(longest)); /* 65 bytes */
    const char *const bad[] = {"",      ".",         "..",    "a/b",         "../etc",     "/abs",
                               "Upper", "has space", "tab\t", "caf\xc3\xa9", "semi;colon", "x\\y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (kt_archive_name_ok(bad[i]))
            fail_msg("'%s' accepted", bad[i]);
}

static void test_mkdirs(void **state)
{
    (void)state;
    char path[PATH_MAX], file[PATH_MAX];
    struct stat st;
    assert_int_equal(kt_archive_mkdirs(at(path, "a/b/c")), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(kt_archive_mkdirs(path), 0); /* already there */
    assert_int_equal(kt_archive_mkdirs(at(path, "a/b/c/")), 0);
    fill_file(at(file, "plain"), 'x', 1);
    assert_int_equal(kt_archive_mkdirs(at(path, "plain/sub")), -1);
    assert_non_null(strstr(kt_error_last(), "plain"));
}

static void test_atomic_write(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX];
    assert_int_equal(kt_archive_mkdirs(at(dir, "w")), 0);
    assert_int_equal(kt_archive_write(dir, "result.json", "first version", 13), 0);
    assert_int_equal(kt_archive_write(dir, "result.json", "second", 6), 0);
    snprintf(path, sizeof(path), "%s/result.json", dir);
    char *text = slurp(path);
    assert_string_equal(text, "second"); /* replaced, not appended or overlaid */
    free(text);
    assert_int_equal(count_entries(dir), 1); /* no temporary file left behind */

    assert_int_equal(kt_archive_write(at(dir, "missing-dir"), "x", "x", 1), -1);
    assert_non_null(strstr(kt_error_last(), "missing-dir/x"));
}

static void test_append(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX];
    assert_int_equal(kt_archive_mkdirs(at(dir, "ap")), 0);
    assert_int_equal(kt_archive_append(dir, "points.jsonl", "one\n", 4), 0);
    assert_int_equal(kt_archive_append(dir, "points.jsonl", "two\n", 4), 0);
    assert_int_equal(kt_archive_append(dir, "points.jsonl", "", 0), 0);
    snprintf(path, sizeof(path), "%s/points.jsonl", dir);
    char *text = slurp(path);
    assert_string_equal(text, "one\ntwo\n");
    free(text);
}

/* A link planted at any name the archive writes is never followed. */
static void test_links_not_followed(void **state)
{
    (void)state;
    char dir[PATH_MAX], outside[PATH_MAX], link[PATH_MAX + 64];
    assert_int_equal(kt_archive_mkdirs(at(dir, "links")), 0);
    fill_file(at(outside, "outside.txt"), 'o', 5);
    const char *names[] = {"points.jsonl", "samples.csv"};
    for (int i = 0; i < 2; i++) {
        snprintf(link, sizeof(link), "%s/%s", dir, names[i]);
        assert_int_equal(symlink(outside, link), 0);
        assert_int_equal(kt_archive_append(dir, names[i], "x\n", 2), -1);
        assert_non_null(strstr(kt_error_last(), "symbolic link"));
    }
    /* the temporary name of an atomic write */
    snprintf(link, sizeof(link), "%s/.result.json.tmp.%ld", dir, (long)getpid());
    assert_int_equal(symlink(outside, link), 0);
    assert_int_equal(kt_archive_write(dir, "result.json", "{}", 2), 0);
    /* the final name: rename replaces the link, not its target */
    snprintf(link, sizeof(link), "%s/spec.yaml", dir);
    assert_int_equal(symlink(outside, link), 0);
    assert_int_equal(kt_archive_write(dir, "spec.yaml", "name: x\n", 8), 0);
    char *text = slurp(outside);
    assert_string_equal(text, "ooooo");
    free(text);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISREG(st.st_mode));
}

/* A short write (here: over RLIMIT_FSIZE) cuts the file back; nothing partial stays. */
static void test_short_append_truncates(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX];
    assert_int_equal(kt_archive_mkdirs(at(dir, "short")), 0);
    assert_int_equal(kt_archive_append(dir, "points.jsonl", "one\n", 4), 0);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 10;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = kt_archive_append(dir, "points.jsonl", "a longer second line\n", 21);
    setrlimit(RLIMIT_FSIZE, &old);
    assert_int_equal(rc, -1);
    snprintf(path, sizeof(path), "%s/points.jsonl", dir);
    char *text = slurp(path);
    assert_string_equal(text, "one\n");
    free(text);
}

/* One holder at a time; the second is told who holds it. */
static void test_lock(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    assert_int_equal(kt_archive_mkdirs(at(dir, "lock")), 0);
    assert_int_equal(kt_archive_lock_held(dir), 0);
    int fd = kt_archive_lock(dir);
    assert_true(fd >= 0);
    assert_int_equal(kt_archive_lock_held(dir), 1);
    assert_int_equal(kt_archive_lock(dir), KT_ARCHIVE_BUSY); /* flock: per open file */
    assert_non_null(strstr(kt_error_last(), "in use by another ktrial run (pid "));
    close(fd);
    assert_int_equal(kt_archive_lock_held(dir), 0);
    fd = kt_archive_lock(dir);
    assert_true(fd >= 0);
    close(fd);
}

static void test_read_file_limits(void **state)
{
    (void)state;
    char path[PATH_MAX];
    char *text = NULL;
    size_t len = 0;
    fill_file(at(path, "ten"), 'q', 10);
    assert_int_equal(kt_read_file(&text, &len, path, 9), -1);
    assert_non_null(strstr(kt_error_last(), "over 9 bytes"));
    assert_int_equal(kt_read_file(&text, &len, path, 10), 0);
    assert_int_equal(len, 10);
    assert_string_equal(text, "qqqqqqqqqq");
    free(text);

    /* larger than the first buffer: growth keeps every byte, and the limit still holds */
    fill_file(at(path, "big"), 'z', 100000);
    assert_int_equal(kt_read_file(&text, &len, path, 100000), 0);
    assert_int_equal(len, 100000);
    assert_int_equal(text[99999], 'z');
    assert_int_equal(text[100000], '\0');
    free(text);
    assert_int_equal(kt_read_file(&text, &len, path, 99999), -1);
    assert_int_equal(kt_read_file(&text, &len, path, 4096), -1);

    fill_file(at(path, "empty"), 'e', 0);
    assert_int_equal(kt_read_file(&text, &len, path, 0), 0);
    assert_int_equal(len, 0);
    free(text);
    assert_int_equal(kt_read_file(&text, &len, at(path, "nope"), 10), -1);
    assert_non_null(strstr(kt_error_last(), "nope"));
}

/* ---- run_archive.c --------------------------------------------------------------------- */

static kt_arm cand_arm;
static kt_spec spec;

/* A synthetic/sim spec by hand: baseline "baseline" and one candidate "fast". */
static void make_spec(void)
{
    memset(&spec, 0, sizeof(spec));
    spec.op = kt_op_find("synthetic");
    assert_non_null(spec.op);
    strcpy(spec.backend, "sim");
    spec.dtype = KT_DTYPE_FP32;
    const kt_variant *v = kt_variant_find("synthetic", "sim", "lognormal");
    assert_non_null(v);
    kt_arm *arms[2] = {&spec.baseline, &cand_arm};
    const char *names[2] = {"baseline", "fast"};
    for (int i = 0; i < 2; i++) {
        memset(arms[i], 0, sizeof(kt_arm));
        strcpy(arms[i]->name, names[i]);
        arms[i]->variant = v;
        kt_param_defaults(arms[i]->params, v->params, v->n_params);
    }
    spec.candidates = &cand_arm;
    spec.n_candidates = 1;
}

/* A point 'id' with 'n_pairs' pairs whose times say 'base_ns' against 'cand_ns'. */
static void make_point(kt_point_result *p, kt_candidate_result *c, kt_pair *pairs, const char *id,
                       int n_pairs)
{
    memset(p, 0, sizeof(*p));
    memset(c, 0, sizeof(*c));
    snprintf(p->point.id, sizeof(p->point.id), "%s", id);
    p->point.batch_size = 1;
    p->point.context_length = 64;
    strcpy(p->baseline.name, "baseline");
    strcpy(p->baseline.variant, "lognormal");
    strcpy(p->stop_reason, "decided");
    strcpy(c->arm.name, "fast");
    strcpy(c->arm.variant, "lognormal");
    c->verdict = KT_VERDICT_KEEP;
    c->speedup = c->ci_low = c->ci_high = 1.25;
    c->shift.achieved = 0.95;
    for (int i = 0; i < n_pairs; i++) {
        pairs[i] = (kt_pair){i, i % 2, i % 2, 100000.0 + i, 80000.0 + i, 0, 0, 0, i};
    }
    c->pairs = pairs;
    c->n_pairs = (size_t)n_pairs;
    p->cands = c;
    p->n_cands = 1;
    p->repetitions = n_pairs;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

static int keep_all(const kt_point_result *p, void *ctx)
{
    (void)p;
    (void)ctx;
    return 1;
}

/* Pairs are objects with named fields; results written before that (positional 8-arrays)
 * still read back the same; any other shape is refused. */
static void test_pairs_named_and_legacy(void **state)
{
    (void)state;
    kt_point_result p;
    kt_candidate_result c;
    kt_pair pairs[2];
    make_spec();
    make_point(&p, &c, pairs, "b1/t64", 2);
    pairs[1].throttled = 1;
    pairs[1].cand_noise = 3;
    cJSON *json = kt_point_result_to_json(&p, &spec);
    cJSON *rows = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(json, "candidates"), 0), "pairs");
    assert_int_equal(cJSON_GetArraySize(rows), 2);
    const cJSON *q = cJSON_GetArrayItem(rows, 1);
    assert_true(cJSON_IsObject(q));
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(q, "repetition")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(q, "input_set")->valueint, 1);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "candidate_first")));
    assert_true(kt_json_get_real(q, "baseline_ns", NAN) == 100001.0);
    assert_true(kt_json_get_real(q, "candidate_ns", NAN) == 80001.0);
    assert_true(kt_json_get_real(q, "candidate_noise", NAN) == 3.0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "throttled")));

    kt_point_result back;
    assert_int_equal(kt_point_result_from_json(&back, json), 0);
    assert_int_equal(back.cands[0].n_pairs, 2);
    assert_memory_equal(back.cands[0].pairs, pairs, sizeof(pairs));
    kt_point_result_free(&back);

    /* the legacy rows: [rep, input_set, candidate_first, base_ns, cand_ns, base_noise,
     * cand_noise, throttled] */
    cJSON *legacy = cJSON_CreateArray();
    for (int i = 0; i < 2; i++) {
        const kt_pair *x = &pairs[i];
        const double v[8] = {x->rep,     x->input_set,  x->candidate_first, x->base_ns,
                             x->cand_ns, x->base_noise, x->cand_noise,      x->throttled};
        cJSON_AddItemToArray(legacy, cJSON_CreateDoubleArray(v, 8));
        pairs[i].placement = 0; /* what a legacy row reads back as: it has no placement */
    }
    cJSON_ReplaceItemInObjectCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(json, "candidates"), 0), "pairs",
        legacy);
    assert_int_equal(kt_point_result_from_json(&back, json), 0);
    assert_int_equal(back.cands[0].n_pairs, 2);
    assert_memory_equal(back.cands[0].pairs, pairs, sizeof(pairs));
    kt_point_result_free(&back);

    /* a 7-array is neither */
    cJSON_DeleteItemFromArray(cJSON_GetArrayItem(legacy, 0), 7);
    assert_true(kt_point_result_from_json(&back, json) < 0);
    kt_point_result_free(&back);
    cJSON_Delete(json);
}

static void test_points_and_samples(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX];
    kt_point_result p1, p2;
    kt_candidate_result c1, c2;
    kt_pair pairs1[3], pairs2[2];
    make_spec();
    make_point(&p1, &c1, pairs1, "b1/t64", 3);
    make_point(&p2, &c2, pairs2, "b4/t64", 2);
    c2.verdict = KT_VERDICT_REJECT;
    assert_int_equal(kt_archive_mkdirs(at(dir, "run")), 0);
    kt_samples_ids ids = {"20240501T123456Z-0badcafe", "0123abcd"};
    assert_int_equal(kt_run_archive_point(dir, &p1, &spec, &ids), 0);
    assert_int_equal(kt_run_archive_point(dir, &p2, &spec, &ids), 0);

    snprintf(path, sizeof(path), "%s/samples.csv", dir);
    char *csv = slurp(path);
    /* one header, then two rows (baseline and candidate) per pair */
    assert_int_equal(count_lines(csv), 1 + 2 * 3 + 2 * 2);
    assert_int_equal(strncmp(csv, KT_SAMPLES_HEADER, strlen(KT_SAMPLES_HEADER)), 0);
    assert_null(strstr(csv + 1, "\nrun_id,"));
    /* the run, the code and the axes on every row; synthetic has no model, phase or role:
     * empty cells. Pair 1 of b1/t64 ran the candidate first: candidate at position 0,
     * baseline at 1; the baseline row names the baseline, the pair its candidate */
#define ROW_HEAD "20240501T123456Z-0badcafe,0123abcd,sim,synthetic,fp32,b1/t64,,,,1,64,fast,"
    assert_non_null(strstr(csv, ROW_HEAD "1,1,0,candidate,fast,lognormal,80001,0,0,1\n"));
    assert_non_null(strstr(csv, ROW_HEAD "1,1,1,baseline,baseline,lognormal,100001,0,0,1\n"));
    assert_non_null(strstr(csv, ROW_HEAD "0,0,0,baseline,baseline,lognormal,100000,0,0,0\n"));
#undef ROW_HEAD
    free(csv);

    /* rewritten from the points alone: the same bytes */
    kt_point_result both[2] = {p1, p2};
    csv = slurp(path);
    assert_int_equal(kt_run_archive_rewrite_samples(dir, both, 2, &spec, &ids), 0);
    char *again = slurp(path);
    assert_string_equal(again, csv);
    free(again);
    free(csv);

    kt_point_result *back = NULL;
    size_t n = 0;
    assert_int_equal(kt_run_archive_load_points(&back, &n, dir, NULL, NULL), 0);
    assert_int_equal(n, 2);
    assert_string_equal(back[0].point.id, "b1/t64");
    assert_int_equal(back[0].cands[0].pairs[1].placement, 1); /* from points.jsonl */
    assert_string_equal(back[1].point.id, "b4/t64");
    assert_int_equal(back[1].cands[0].verdict, KT_VERDICT_REJECT);
    assert_int_equal(back[0].cands[0].n_pairs, 3);
    assert_true(back[0].cands[0].pairs[2].cand_ns == 80002.0);
    for (size_t i = 0; i < n; i++)
        kt_point_result_free(&back[i]);
    free(back);

    /* a crash before the newline: that point is not finished, even when what was written
     * happens to parse; then one cut in the middle of the text */
    strcpy(p1.point.id, "b16/t64");
    cJSON *json = kt_point_result_to_json(&p1, &spec);
    char *line = cJSON_PrintUnformatted(json);
    cJSON_Delete(json);
    const size_t cuts[2] = {strlen(line), 15};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(kt_archive_write(dir, "points.jsonl", "", 0), 0);
        assert_int_equal(kt_run_archive_point(dir, &p2, &spec, &ids), 0);
        assert_int_equal(kt_archive_append(dir, "points.jsonl", line, cuts[i]), 0);
        assert_int_equal(kt_run_archive_load_points(&back, &n, dir, keep_all, NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(back[0].point.id, "b4/t64");
        kt_point_result_free(&back[0]);
        free(back);
        /* the torn tail is cut off: the file ends with the one complete line */
        char *text, file[PATH_MAX + 16];
        size_t len;
        snprintf(file, sizeof(file), "%s/points.jsonl", dir);
        assert_int_equal(kt_read_file(&text, &len, file, 1 << 20), 0);
        assert_true(len > 0 && text[len - 1] == '\n' && strchr(text, '\n') == text + len - 1);
        free(text);
    }
    free(line);

    assert_int_equal(kt_run_archive_load_points(&back, &n, at(path, "no-such-run"), NULL, NULL),
                     -1);
}

static void test_load_result(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX];
    kt_point_result p;
    kt_candidate_result c;
    kt_pair pairs[2];
    make_spec();
    make_point(&p, &c, pairs, "b1/t64", 2);
    snprintf(p.error, sizeof(p.error), "baseline crashed");
    c.order_warning = 1;
    c.set_warning = 1;
    c.set_p = 0.002;
    c.state_arm = 1; /* the candidate's state of set 1, placement 5, at 2.3x its others */
    c.state_set = 1;
    c.state_placement = 5;
    c.state_ratio = 2.3;
    c.state_warning = 1;
    cJSON *doc = cJSON_CreateObject();
    cJSON *points = cJSON_AddArrayToObject(doc, "points");
    cJSON_AddItemToArray(points, kt_point_result_to_json(&p, &spec));
    kt_run_result run = {&p, 1, NULL, 0, KT_VERDICT_KEEP, 0, 0, 0, 0, 0};
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    cJSON_AddItemToObject(doc, "candidates", kt_candidate_verdicts_to_json(&run));
    cJSON_AddStringToObject(cJSON_AddObjectToObject(doc, "decision"), "verdict", "KEEP");
    free(run.cands);
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    assert_int_equal(kt_archive_mkdirs(at(dir, "res")), 0);
    assert_int_equal(kt_archive_write(dir, "result.json", text, strlen(text)), 0);
    free(text);

    cJSON *loaded = NULL;
    snprintf(path, sizeof(path), "%s/result.json", dir);
    for (int i = 0; i < 2; i++) { /* by folder, then by file */
        assert_int_equal(kt_run_archive_load_result(&loaded, i == 0 ? dir : path), 0);
        kt_run_result back;
        assert_int_equal(kt_run_result_from_json(&back, loaded), 0);
        assert_int_equal(back.n_points, 1);
        assert_int_equal(back.point_errors, 1);
        assert_int_equal(back.order_warnings, 1);
        assert_int_equal(back.set_warnings, 1);
        assert_true(fabs(back.points[0].cands[0].set_p - 0.002) < 1e-12);
        const kt_candidate_result *bc = &back.points[0].cands[0];
        assert_int_equal(back.state_warnings, 1);
        assert_int_equal(bc->state_arm, 1);
        assert_int_equal(bc->state_set, 1);
        assert_int_equal(bc->state_placement, 5);
        assert_true(fabs(bc->state_ratio - 2.3) < 1e-12);
        assert_int_equal(bc->state_warning, 1);
        assert_int_equal(back.n_cands, 1);
        assert_string_equal(back.cands[0].name, "fast");
        assert_int_equal(back.cands[0].keep, 1);
        assert_true(fabs(back.cands[0].geomean_speedup - 1.25) < 1e-12);
        assert_int_equal(back.verdict, KT_VERDICT_KEEP);
        kt_run_result_free(&back);
        cJSON_Delete(loaded);
    }

    kt_run_result back;
    cJSON *not_result = cJSON_Parse("{\"points\": []}");
    assert_int_equal(kt_run_result_from_json(&back, not_result), -1);
    kt_run_result_free(&back);
    cJSON_Delete(not_result);
    assert_int_equal(kt_archive_write(dir, "broken.json", "{\"points\": [", 12), 0);
    snprintf(path, sizeof(path), "%s/broken.json", dir);
    assert_int_equal(kt_run_archive_load_result(&loaded, path), -1);
    assert_non_null(strstr(kt_error_last(), "not valid JSON"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_ok),
        cmocka_unit_test(test_mkdirs),
        cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_append),
        cmocka_unit_test(test_read_file_limits),
        cmocka_unit_test(test_pairs_named_and_legacy),
        cmocka_unit_test(test_points_and_samples),
        cmocka_unit_test(test_load_result),
        cmocka_unit_test(test_links_not_followed),
        cmocka_unit_test(test_short_append_truncates),
        cmocka_unit_test(test_lock),
    };
    return cmocka_run_group_tests(tests, make_root, remove_root);
}
