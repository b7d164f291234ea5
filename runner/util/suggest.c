/* suggest.c - edit distance for "did you mean". */
#include "util/suggest.h"

#include <stdlib.h>
#include <string.h>

size_t kt_edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    size_t *d = malloc((n + 1) * (m + 1) * sizeof(*d));
    if (!d)
        return (size_t)-1;
#define D(i, j) d[(i) * (m + 1) + (j)]
    for (size_t i = 0; i <= n; i++)
        D(i, 0) = i;
    for (size_t j = 0; j <= m; j++)
        D(0, j) = j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = D(i - 1, j) + 1;
            if (D(i, j - 1) + 1 < best)
                best = D(i, j - 1) + 1;
            if (D(i - 1, j - 1) + cost < best)
                best = D(i - 1, j - 1) + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                D(i - 2, j - 2) + 1 < best)
                best = D(i - 2, j - 2) + 1;
            D(i, j) = best;
        }
    }
    size_t result = D(n, m);
#undef D
    free(d);
    return result;
}

/* Whether the '_'- or '-'-separated part of 'word' starting at 'w' (length 'wn') abbreviates
 * the part of 'name' at 'c' (length 'cn'): same first letter, the rest in order (a
 * subsequence), as "reps" abbreviates "repetitions". */
static int part_abbreviates(const char *w, size_t wn, const char *c, size_t cn)
{
    if (wn == 0 || cn == 0 || wn > cn || w[0] != c[0])
        return 0;
    size_t j = 1;
    for (size_t i = 1; i < wn; i++) {
        while (j < cn && c[j] != w[i])
            j++;
        if (j++ >= cn)
            return 0;
    }
    return 1;
}

/* Whether 'word' abbreviates 'name' part by part ("min_reps" of "min_repetitions"), or is a
 * prefix of it of at least three letters ("swiglu" of "swiglu_mlp"). */
static int abbreviates(const char *word, const char *name)
{
    size_t wl = strlen(word);
    if (wl >= 3 && wl < strlen(name) && strncmp(word, name, wl) == 0)
        return 1;
    const char *w = word, *c = name;
    while (*w && *c) {
        size_t wn = strcspn(w, "_-"), cn = strcspn(c, "_-");
        if (!part_abbreviates(w, wn, c, cn))
            return 0;
        w += wn + (w[wn] != '\0');
        c += cn + (c[cn] != '\0');
    }
    return *w == '\0' && *c == '\0' && strcmp(word, name) != 0 && wl >= 3;
}

const char *kt_suggest(const char *word, const char *const *candidates, size_t n)
{
    size_t len = strlen(word);
    size_t limit = len / 3 > 1 ? len / 3 : 1;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t dist = kt_edit_distance(word, candidates[i]);
        if (dist < best_d) {
            best_d = dist;
            best = candidates[i];
        }
    }
    if (best && best_d <= limit && best_d > 0)
        return best;
    const char *abbrev = NULL; /* only when exactly one name fits */
    for (size_t i = 0; i < n; i++)
        if (abbreviates(word, candidates[i])) {
            if (abbrev)
                return NULL;
            abbrev = candidates[i];
        }
    return abbrev;
}
