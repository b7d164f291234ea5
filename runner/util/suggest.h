/* suggest.h - "did you mean" for misspelled names. */
#ifndef KT_SUGGEST_H
#define KT_SUGGEST_H

#include <stddef.h>

/* Damerau-Levenshtein (optimal string alignment) distance between 'a' and 'b'. */
size_t kt_edit_distance(const char *a, const char *b);
/* The candidate closest to 'word' when it is close enough to be a likely typo (distance at
 * most max(1, len/3)); failing that, the one candidate 'word' abbreviates ("min_reps" for
 * "min_repetitions", "swiglu" for "swiglu_mlp"); else NULL. 'candidates' has 'n' entries. */
const char *kt_suggest(const char *word, const char *const *candidates, size_t n);

#endif
