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
    return best && best_d <= limit && best_d > 0 ? best : NULL;
}
