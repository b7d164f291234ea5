/* command_output.h - reads a command's output file in the spec's declared format and compares
 * it with a reference file (the baseline's output for the same task and repetition, or the
 * task's expect file). */
#ifndef KT_COMMAND_OUTPUT_H
#define KT_COMMAND_OUTPUT_H

#include "result/numerics.h"
#include "spec/command_spec.h"

#include <stddef.h>

/* The file name extension of a format: "f32", "f64", "json", "txt". */
const char *kt_output_extension(kt_output_format f);

/* Compares 'path' with 'ref_path' in format 'f'. Numbers: fills 'num' (elems, nonfinite,
 * max_abs, max_rel, rel_l2, cosine of the output against the reference). Text: exact, and
 * 'num' says 0 or 1 differing elements. Returns 0 when both files were read and compared (the
 * thresholds judge 'num'); -1 with 'why' when the output is missing, unreadable, of another
 * length, non-finite, or text that differs (the first differing line quoted); -2 with 'why'
 * when the reference itself cannot be read. */
int kt_output_compare(kt_numerics *num, const char *path, const char *ref_path, kt_output_format f,
                      char *why, size_t why_len);

/* Reads every number of the file at 'path' in format 'f' (not text) into a new array. */
int kt_output_read_numbers(double **out, size_t *n, const char *path, kt_output_format f, char *why,
                           size_t why_len);

#endif
