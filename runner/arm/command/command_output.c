/* command_output.c - output files of command calls: f32/f64 raw little-endian floats, every
 * number of a JSON document in document order, or text compared line by line. */
#include "arm/command/command_output.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_OUTPUT_BYTES ((size_t)1 << 30)

const char *kt_output_extension(kt_output_format f)
{
    switch (f) {
    case KT_OUTPUT_F32:
        return "f32";
    case KT_OUTPUT_F64:
        return "f64";
    case KT_OUTPUT_JSON_NUMBERS:
        return "json";
    case KT_OUTPUT_TEXT:
        return "txt";
    default:
        return "out";
    }
}

/* Reads the whole file; NUL-terminated. */
static int slurp(char **out, size_t *len, const char *path, char *why, size_t why_len)
{
    struct stat st;
    *out = NULL;
    if (stat(path, &st) != 0) {
        snprintf(why, why_len, "output '%s' is missing: %s", path, strerror(errno));
        return -1;
    }
    if ((size_t)st.st_size > MAX_OUTPUT_BYTES) {
        snprintf(why, why_len, "output '%s' is %lld bytes, over the 1 GiB limit", path,
                 (long long)st.st_size);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc((size_t)st.st_size + 1) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    if (!f || !buf || ferror(f)) {
        snprintf(why, why_len, "output '%s' is unreadable: %s", path, strerror(errno));
        free(buf);
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return 0;
}

static int collect(const cJSON *node, double **vals, size_t *n, size_t *cap)
{
    if (cJSON_IsNumber(node)) {
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 64;
            double *grown = realloc(*vals, c * sizeof(double));
            if (!grown)
                return -1;
            *vals = grown;
            *cap = c;
        }
        (*vals)[(*n)++] = node->valuedouble;
        return 0;
    }
    for (const cJSON *c = node->child; c; c = c->next)
        if (collect(c, vals, n, cap) < 0)
            return -1;
    return 0;
}

int kt_output_read_numbers(double **out, size_t *n, const char *path, kt_output_format f, char *why,
                           size_t why_len)
{
    char *buf;
    size_t len;
    *out = NULL;
    *n = 0;
    if (slurp(&buf, &len, path, why, why_len) < 0)
        return -1;
    int rc = 0;
    if (f == KT_OUTPUT_JSON_NUMBERS) {
        cJSON *doc = cJSON_ParseWithLength(buf, len);
        size_t cap = 0;
        if (!doc) {
            snprintf(why, why_len, "output '%s' is not JSON (near byte %td)", path,
                     cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - buf : (ptrdiff_t)0);
            rc = -1;
        } else if (collect(doc, out, n, &cap) < 0) {
            snprintf(why, why_len, "out of memory reading '%s'", path);
            rc = -1;
        }
        cJSON_Delete(doc);
    } else {
        size_t size = f == KT_OUTPUT_F32 ? 4 : 8;
        if (len % size) {
            snprintf(why, why_len, "output '%s' is %zu bytes, not a whole number of %s values",
                     path, len, kt_output_extension(f));
            rc = -1;
        } else {
            *n = len / size;
            *out = malloc((*n ? *n : 1) * sizeof(double));
            for (size_t i = 0; *out && i < *n; i++) {
                if (size == 4) {
                    float v;
                    memcpy(&v, buf + 4 * i, 4);
                    (*out)[i] = v;
                } else {
                    memcpy(&(*out)[i], buf + 8 * i, 8);
                }
            }
            if (!*out) {
                snprintf(why, why_len, "out of memory reading '%s'", path);
                rc = -1;
            }
        }
    }
    free(buf);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* Exact text comparison; on a difference, quotes the first differing line of both. */
static int compare_text(kt_numerics *num, const char *path, const char *ref_path, char *why,
                        size_t why_len)
{
    char *a, *b;
    size_t la, lb;
    if (slurp(&a, &la, path, why, why_len) < 0)
        return -1;
    if (slurp(&b, &lb, ref_path, why, why_len) < 0) {
        free(a);
        return -2;
    }
    num->elems = 1;
    int rc = 0;
    if (la != lb || memcmp(a, b, la) != 0) {
        size_t i = 0, line = 1, start = 0;
        while (i < la && i < lb && a[i] == b[i]) {
            if (a[i] == '\n') {
                line++;
                start = i + 1;
            }
            i++;
        }
        int wa = (int)strcspn(a + start, "\n"), wb = (int)strcspn(b + start, "\n");
        snprintf(why, why_len,
                 "text output differs at line %zu: \"%.*s\" where the reference has \"%.*s\"", line,
                 wa > 80 ? 80 : wa, a + start, wb > 80 ? 80 : wb, b + start);
        num->max_abs = num->rel_l2 = 1;
        num->cosine = 0;
        rc = -1;
    } else {
        num->cosine = 1;
    }
    free(a);
    free(b);
    return rc;
}

/* rel_l2, cosine, max_abs, max_rel of 'x' against 'ref' (same length, 'ref' finite). */
static void numbers(kt_numerics *num, const double *x, const double *ref, size_t n)
{
    double diff2 = 0, ref2 = 0, x2 = 0, dot = 0, ref_max = 0;
    for (size_t i = 0; i < n; i++)
        ref_max = fmax(ref_max, fabs(ref[i]));
    for (size_t i = 0; i < n; i++) {
        double d = x[i] - ref[i];
        diff2 += d * d;
        ref2 += ref[i] * ref[i];
        x2 += x[i] * x[i];
        dot += x[i] * ref[i];
        num->max_abs = fmax(num->max_abs, fabs(d));
        num->max_rel = fmax(num->max_rel, fabs(d) / fmax(fabs(ref[i]), 1e-3 * ref_max));
    }
    num->rel_l2 = ref2 > 0 ? sqrt(diff2 / ref2) : (diff2 > 0 ? INFINITY : 0);
    num->cosine = x2 > 0 && ref2 > 0 ? dot / sqrt(x2 * ref2) : (x2 == ref2 ? 1 : 0);
}

int kt_output_compare(kt_numerics *num, const char *path, const char *ref_path, kt_output_format f,
                      char *why, size_t why_len)
{
    memset(num, 0, sizeof(*num));
    if (f == KT_OUTPUT_TEXT)
        return compare_text(num, path, ref_path, why, why_len);
    double *x = NULL, *ref = NULL;
    size_t n = 0, nr = 0;
    int rc = 0;
    if (kt_output_read_numbers(&x, &n, path, f, why, why_len) < 0) {
        rc = -1;
        goto done;
    }
    if (kt_output_read_numbers(&ref, &nr, ref_path, f, why, why_len) < 0) {
        rc = -2;
        goto done;
    }
    num->elems = (int64_t)n;
    if (n != nr) {
        snprintf(why, why_len, "output '%s' has %zu values, the reference '%s' %zu", path, n,
                 ref_path, nr);
        rc = -1;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(ref[i])) {
            snprintf(why, why_len, "reference '%s' has a non-finite value at index %zu", ref_path,
                     i);
            rc = -2;
            goto done;
        }
        num->nonfinite += !isfinite(x[i]);
    }
    if (num->nonfinite) {
        snprintf(why, why_len, "output '%s' has %lld non-finite values", path,
                 (long long)num->nonfinite);
        rc = -1;
        goto done;
    }
    numbers(num, x, ref, n);
done:
    free(x);
    free(ref);
    return rc;
}
