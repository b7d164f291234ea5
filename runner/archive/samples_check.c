/* samples_check.c - samples.csv read back against the pairs of points.jsonl, and a candidate
 * whose rows differ decided again from the rows (see archive_check.h). */
#include "archive/archive_check.h"

#include "util/read_file.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N_COLUMNS 22 /* KT_SAMPLES_HEADER's */

/* One row's cells, split in place ('line' is changed); 0, or -1 when it has another count. */
static int split(char *line, char **cells)
{
    int n = 0;
    for (char *p = line;; p++) {
        if (n == N_COLUMNS)
            return -1;
        cells[n++] = p;
        p = strchr(p, ',');
        if (!p)
            break;
        *p = '\0';
    }
    return n == N_COLUMNS ? 0 : -1;
}

/* The next row of 'text' from '*at' (NULL at the end), its newline replaced. */
static char *next_line(char *text, size_t len, size_t *at)
{
    if (*at >= len)
        return NULL;
    char *line = text + *at, *nl = memchr(line, '\n', len - *at);
    if (nl) {
        *nl = '\0';
        *at = (size_t)(nl - text) + 1;
    } else {
        *at = len;
    }
    return line;
}

/* Reads candidate 'c' of point 'p' back from the rows at '*at' into 'pairs' (n_pairs of them):
 * returns 1 when every row matched the pair, 0 when a figure differs (the rows' figures are
 * in 'pairs'), -1 when the rows are not this candidate's (a problem added). */
static int read_candidate(char *text, size_t len, size_t *at, const kt_point_result *p,
                          const kt_candidate_result *c, kt_pair *pairs, kt_problems *out)
{
    int same = 1;
    for (size_t i = 0; i < c->n_pairs; i++) {
        pairs[i] = c->pairs[i];
        for (int is_cand = 0; is_cand < 2; is_cand++) {
            char *cells[N_COLUMNS], *line = next_line(text, len, at);
            if (!line || split(line, cells) < 0 || strcmp(cells[5], p->point.id) != 0 ||
                strcmp(cells[11], c->arm.name) != 0 ||
                strcmp(cells[15], is_cand ? "candidate" : "baseline") != 0 ||
                atoi(cells[12]) != c->pairs[i].rep) {
                kt_problems_add(out,
                                "samples.csv: the rows of candidate '%s' at point '%s' are "
                                "not those of points.jsonl (pair %zu of %zu)",
                                c->arm.name, p->point.id, i + 1, c->n_pairs);
                return -1;
            }
            double ns = strtod(cells[18], NULL),
                   was = is_cand ? c->pairs[i].cand_ns : c->pairs[i].base_ns;
            if (!(ns == was || (isnan(ns) && isnan(was)))) {
                if (same)
                    kt_problems_add(out,
                                    "samples.csv: %s %.17g ns at repetition %d of candidate "
                                    "'%s' at point '%s', points.jsonl says %.17g ns",
                                    cells[15], ns, c->pairs[i].rep, c->arm.name, p->point.id, was);
                same = 0;
                *(is_cand ? &pairs[i].cand_ns : &pairs[i].base_ns) = ns;
            }
            int first = atoi(cells[14]) == 0;
            if (first != (is_cand == c->pairs[i].candidate_first) ||
                atoi(cells[13]) != c->pairs[i].input_set ||
                atoi(cells[21]) != c->pairs[i].placement) {
                if (same)
                    kt_problems_add(out,
                                    "samples.csv: repetition %d of candidate '%s' at point "
                                    "'%s' ran in another order, set or placement than "
                                    "points.jsonl says",
                                    c->pairs[i].rep, c->arm.name, p->point.id);
                same = 0;
            }
        }
    }
    return same;
}

/* Candidate 'k' of 'p' decided again with 'pairs' in place of its own: its verdict said when it
 * differs from what points.jsonl says. */
static void decide_rows(const kt_point_result *p, size_t k, kt_pair *pairs, const kt_rejudge *rj,
                        kt_problems *out)
{
    kt_point_result copy = *p;
    copy.cands = malloc(p->n_cands * sizeof(*copy.cands));
    if (!copy.cands)
        return;
    memcpy(copy.cands, p->cands, p->n_cands * sizeof(*copy.cands));
    copy.cands[k].pairs = pairs;
    if (kt_rejudge_point(rj, &copy) == 0 && copy.cands[k].verdict != p->cands[k].verdict)
        kt_problems_add(out,
                        "samples.csv's pairs say %s for candidate '%s' at point '%s', "
                        "points.jsonl's pairs say %s",
                        kt_verdict_name(copy.cands[k].verdict), p->cands[k].arm.name, p->point.id,
                        kt_verdict_name(p->cands[k].verdict));
    kt_error_clear();
    free(copy.cands);
}

void kt_samples_check(const char *dir, const kt_point_result *points, size_t n,
                      const kt_rejudge *rj, kt_problems *out)
{
    char path[PATH_MAX], *text;
    size_t len, at = 0;
    struct stat sb;
    snprintf(path, sizeof(path), "%s/samples.csv", dir);
    if (lstat(path, &sb) != 0) {
        if (n)
            kt_problems_add(out, "samples.csv is missing; points.jsonl holds %zu points", n);
        return;
    }
    if (kt_read_file(&text, &len, path, (size_t)1 << 32) < 0) {
        kt_problems_add(out, "samples.csv: %s", kt_error_last());
        kt_error_clear();
        return;
    }
    char *header = next_line(text, len, &at);
    if (!header || strncmp(header, KT_SAMPLES_HEADER, strlen(header)) != 0 ||
        strlen(header) + 1 != strlen(KT_SAMPLES_HEADER))
        kt_problems_add(out, "samples.csv: its first line is not ktrial's header");
    for (size_t i = 0; i < n; i++) {
        const kt_point_result *p = &points[i];
        for (size_t k = 0; k < p->n_cands; k++) {
            const kt_candidate_result *c = &p->cands[k];
            kt_pair *pairs = malloc((c->n_pairs ? c->n_pairs : 1) * sizeof(*pairs));
            int same = pairs ? read_candidate(text, len, &at, p, c, pairs, out) : -1;
            if (same == 0)
                decide_rows(p, k, pairs, rj, out);
            free(pairs);
            if (same < 0)
                goto done;
        }
    }
    size_t rest = 0;
    for (char *line; (line = next_line(text, len, &at));)
        rest += line[0] != '\0';
    if (rest)
        kt_problems_add(out, "samples.csv holds %zu rows of no pair of points.jsonl", rest);
done:
    free(text);
}
