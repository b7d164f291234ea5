/* schema.c - a draft-07 JSON Schema subset over YAML nodes.
 *
 * The walk reports each violation once, at the most specific node, with its key path.
 * A node of the wrong type gets only the type error (its other keywords would repeat it).
 * oneOf/anyOf branches are tried into scratch diagnostics; when none matches, the branch
 * whose type fits the node is the one whose errors the user sees. */
#include "spec/schema.h"
#include "spec/schema_hint.h"
#include "spec/yaml_tree.h"
#include "util/suggest.h"

#include <math.h>
#include <stdint.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SCHEMA_DEPTH 512 /* nested validations, so a $ref loop cannot exhaust the stack */
#define MAX_SHOWN        48  /* characters of a string value quoted in a message */

typedef struct {
    const cJSON *root; /* resolves $ref */
    const char *file;
    kt_diag *diag; /* where schema problems go */
    int broken;    /* the schema is unusable */
    int depth;
    char path[1024];
    size_t path_len;
} ctx;

/* The JSON view of a node. */
typedef enum { J_NULL, J_BOOL, J_INT, J_FLOAT, J_STRING, J_OBJECT, J_ARRAY } jtype;

static jtype json_type(const kt_node *n)
{
    if (n->kind == KT_NODE_MAP)
        return J_OBJECT;
    if (n->kind == KT_NODE_SEQ)
        return J_ARRAY;
    switch (kt_node_scalar_type(n)) {
    case KT_SCALAR_NULL:
        return J_NULL;
    case KT_SCALAR_BOOL:
        return J_BOOL;
    case KT_SCALAR_INT:
        return J_INT;
    case KT_SCALAR_FLOAT:
        return J_FLOAT;
    default:
        return J_STRING;
    }
}

static int is_number(jtype t)
{
    return t == J_INT || t == J_FLOAT;
}

/* A number node's value; a literal too large for a double counts as infinite. */
static double number_of(const kt_node *n)
{
    double d;
    if (kt_node_double(n, &d) == 0)
        return d;
    return n->value[0] == '-' ? -INFINITY : INFINITY;
}

/* ---- messages ------------------------------------------------------------------------- */

static void schema_error(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void schema_error(ctx *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!c->broken)
        kt_diag_error(c->diag, NULL, 0, 0, "invalid schema: %s", msg);
    c->broken = 1;
}

static void report(ctx *c, kt_diag *d, const kt_node *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void report(ctx *c, kt_diag *d, const kt_node *at, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c->path_len)
        kt_diag_error(d, c->file, at->line, at->col, "%s: %s", c->path, msg);
    else
        kt_diag_error(d, c->file, at->line, at->col, "%s", msg);
}

static size_t path_push(ctx *c, const char *fmt, const char *key, size_t index)
{
    size_t old = c->path_len, room = sizeof(c->path) - old;
    int w =
        key ? snprintf(c->path + old, room, fmt, key) : snprintf(c->path + old, room, fmt, index);
    c->path_len = w < 0 ? old : (size_t)w >= room ? sizeof(c->path) - 1 : old + (size_t)w;
    return old;
}

static size_t path_key(ctx *c, const char *key)
{
    return path_push(c, c->path_len ? ".%s" : "%s", key, 0);
}

static size_t path_index(ctx *c, size_t i)
{
    return path_push(c, "[%zu]", NULL, i);
}

static void path_pop(ctx *c, size_t old)
{
    c->path_len = old;
    c->path[old] = '\0';
}

/* A string value as a message shows it: quoted, cut after MAX_SHOWN characters. */
static void quote(char *buf, size_t cap, const char *s)
{
    if (strlen(s) > MAX_SHOWN)
        snprintf(buf, cap, "\"%.*s...\"", MAX_SHOWN, s);
    else
        snprintf(buf, cap, "\"%s\"", s);
}

/* 'n' as in "got ...": the value alone (a string quoted), or "an object" / "an array". */
static void show_value(char *buf, size_t cap, const kt_node *n)
{
    jtype t = json_type(n);
    if (t == J_OBJECT || t == J_ARRAY)
        snprintf(buf, cap, t == J_OBJECT ? "an object" : "an array");
    else if (t == J_STRING)
        quote(buf, cap, n->value);
    else
        snprintf(buf, cap, "%s", t == J_NULL ? "null" : n->value);
}

/* 'n' with its type: string "five", integer 5, number 1.5, boolean true, null, object. */
static void describe(char *buf, size_t cap, const kt_node *n)
{
    static const char *const names[] = {"null",   "boolean", "integer", "number",
                                        "string", "object",  "array"};
    jtype t = json_type(n);
    if (t == J_NULL || t == J_OBJECT || t == J_ARRAY) {
        snprintf(buf, cap, "%s", names[t]);
        return;
    }
    char value[MAX_SHOWN + 8];
    show_value(value, sizeof(value), n);
    snprintf(buf, cap, "%s %s", names[t], value);
}

/* The shortest text that reads back as 'x'; an integer as one (16777216, never 1.6777216e+07). */
static void format_number(char *buf, size_t cap, double x)
{
    if (x == floor(x) && fabs(x) < 1e15) {
        snprintf(buf, cap, "%.0f", x);
        return;
    }
    if (x == 0x1p63) { /* the schema's 9223372036854775807 (INT64_MAX), rounded up by a double */
        snprintf(buf, cap, "%lld", (long long)INT64_MAX);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

/* A schema value in a message: strings bare (enum lists read "fp32, fp16"), numbers short. */
static void show_json(char *buf, size_t cap, const cJSON *j, int bare_strings)
{
    if (cJSON_IsString(j)) {
        if (bare_strings)
            snprintf(buf, cap, "%s", j->valuestring);
        else
            quote(buf, cap, j->valuestring);
    } else if (cJSON_IsNumber(j)) {
        format_number(buf, cap, j->valuedouble);
    } else {
        char *text = cJSON_PrintUnformatted(j);
        snprintf(buf, cap, "%s", text ? text : "?");
        free(text);
    }
}

/* ---- equality ------------------------------------------------------------------------- */

static int plain_text(const kt_node *n)
{
    return strlen(n->value) == n->len;
}

/* Whether node 'n' equals JSON value 'j' as JSON Schema compares (1 equals 1.0; true does
 * not equal 1; objects ignore key order). */
static int equals_json(const kt_node *n, const cJSON *j)
{
    switch (json_type(n)) {
    case J_NULL:
        return cJSON_IsNull(j);
    case J_BOOL: {
        int b = 0;
        kt_node_bool(n, &b);
        return cJSON_IsBool(j) && (cJSON_IsTrue(j) != 0) == b;
    }
    case J_INT:
    case J_FLOAT:
        return cJSON_IsNumber(j) && number_of(n) == j->valuedouble;
    case J_STRING:
        return cJSON_IsString(j) && plain_text(n) && strcmp(n->value, j->valuestring) == 0;
    case J_ARRAY:
        if (!cJSON_IsArray(j) || (size_t)cJSON_GetArraySize(j) != n->n)
            return 0;
        for (size_t i = 0; i < n->n; i++)
            if (!equals_json(n->items[i], cJSON_GetArrayItem(j, (int)i)))
                return 0;
        return 1;
    case J_OBJECT:
        if (!cJSON_IsObject(j) || (size_t)cJSON_GetArraySize(j) != n->n)
            return 0;
        for (size_t i = 0; i < n->n; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, n->keys[i]->value);
            if (!v || !equals_json(n->items[i], v))
                return 0;
        }
        return 1;
    }
    return 0;
}

static int nodes_equal(const kt_node *a, const kt_node *b)
{
    jtype ta = json_type(a), tb = json_type(b);
    if (is_number(ta) && is_number(tb)) {
        int64_t x, y;
        if (ta == J_INT && tb == J_INT && kt_node_int(a, &x) == 0 && kt_node_int(b, &y) == 0)
            return x == y;
        return number_of(a) == number_of(b);
    }
    if (ta != tb)
        return 0;
    switch (ta) {
    case J_BOOL: {
        int x = 0, y = 0;
        kt_node_bool(a, &x);
        kt_node_bool(b, &y);
        return x == y;
    }
    case J_STRING:
        return a->len == b->len && memcmp(a->value, b->value, a->len) == 0;
    case J_ARRAY:
    case J_OBJECT:
        if (a->n != b->n)
            return 0;
        for (size_t i = 0; i < a->n; i++) {
            const kt_node *other = ta == J_ARRAY ? b->items[i] : kt_node_get(b, a->keys[i]->value);
            if (!other || !nodes_equal(a->items[i], other))
                return 0;
        }
        return 1;
    default:
        return 1; /* null */
    }
}

/* ---- types ---------------------------------------------------------------------------- */

/* Whether 'n' is of JSON Schema type 'name' (draft-07: 1.0 is an integer). -1 for a name
 * that is no type. */
static int type_matches(const char *name, const kt_node *n)
{
    jtype t = json_type(n);
    if (!strcmp(name, "integer")) {
        if (t == J_INT)
            return 1;
        double d = t == J_FLOAT ? number_of(n) : NAN;
        return isfinite(d) && d == floor(d);
    }
    static const struct {
        const char *name;
        jtype a, b;
    } names[] = {{"null", J_NULL, J_NULL},       {"boolean", J_BOOL, J_BOOL},
                 {"number", J_INT, J_FLOAT},     {"string", J_STRING, J_STRING},
                 {"object", J_OBJECT, J_OBJECT}, {"array", J_ARRAY, J_ARRAY}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(name, names[i].name))
            return t == names[i].a || t == names[i].b;
    return -1;
}

/* Checks 'type' (a name or a list of names). Returns 1 when 'n' matches, 0 when not (with
 * the expected names joined by " or " in 'expected'), -1 for a bad schema. */
static int check_type(const cJSON *type, const kt_node *n, char *expected, size_t cap)
{
    const cJSON *one = type;
    int listed = cJSON_IsArray(type);
    expected[0] = '\0';
    if (listed)
        one = type->child;
    for (; one; one = listed ? one->next : NULL) {
        if (!cJSON_IsString(one))
            return -1;
        int m = type_matches(one->valuestring, n);
        if (m != 0)
            return m;
        size_t used = strlen(expected);
        snprintf(expected + used, cap - used, "%s%s", used ? " or " : "", one->valuestring);
    }
    return 0;
}

/* ---- $ref ----------------------------------------------------------------------------- */

/* The schema "#/a/b~1c" points at, or NULL. */
static const cJSON *resolve_ref(const cJSON *root, const char *ref)
{
    if (ref[0] != '#')
        return NULL;
    const cJSON *at = root;
    const char *p = ref + 1;
    while (*p == '/' && at) {
        char token[256];
        size_t k = 0;
        for (p++; *p && *p != '/' && k + 1 < sizeof(token); p++) {
            if (*p == '~' && (p[1] == '0' || p[1] == '1'))
                token[k++] = *++p == '0' ? '~' : '/';
            else
                token[k++] = *p;
        }
        token[k] = '\0';
        if (cJSON_IsArray(at))
            at = cJSON_GetArrayItem(at, atoi(token));
        else
            at = cJSON_GetObjectItemCaseSensitive(at, token);
    }
    return *p ? NULL : at;
}

/* Follows $ref until a schema without one; NULL (and the schema marked broken) when a
 * reference does not resolve. */
static const cJSON *follow_refs(ctx *c, const cJSON *s)
{
    for (int hops = 0; s && cJSON_IsObject(s); hops++) {
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
        if (!ref)
            return s;
        const cJSON *target = cJSON_IsString(ref) ? resolve_ref(c->root, ref->valuestring) : NULL;
        if (!target || hops > 64) {
            schema_error(c, "unresolvable $ref '%s'",
                         cJSON_IsString(ref) ? ref->valuestring : "(not a string)");
            return NULL;
        }
        s = target;
    }
    return s;
}

/* ---- keywords ------------------------------------------------------------------------- */

static void validate(ctx *c, const cJSON *s, const kt_node *n, kt_diag *d);

static const cJSON *kw(const cJSON *s, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(s, name);
}

static void check_enum(ctx *c, const cJSON *s, const kt_node *n, kt_diag *d)
{
    const cJSON *en = kw(s, "enum"), *cn = kw(s, "const");
    char got[MAX_SHOWN + 16], want[512];
    if (cn && !equals_json(n, cn)) {
        show_value(got, sizeof(got), n);
        show_json(want, sizeof(want), cn, 0);
        report(c, d, n, "expected %s, got %s", want, got);
    }
    if (!en)
        return;
    if (!cJSON_IsArray(en)) {
        schema_error(c, "'enum' is not an array");
        return;
    }
    const char *names[64];
    size_t n_names = 0, used = 0;
    want[0] = '\0';
    for (const cJSON *v = en->child; v; v = v->next) {
        if (equals_json(n, v))
            return;
        char one[128];
        show_json(one, sizeof(one), v, 1);
        used += (size_t)snprintf(want + used, sizeof(want) - used, "%s%s", used ? ", " : "", one);
        used = used < sizeof(want) ? used : sizeof(want) - 1;
        if (cJSON_IsString(v) && n_names < 64)
            names[n_names++] = v->valuestring;
    }
    show_value(got, sizeof(got), n);
    const char *hint = json_type(n) == J_STRING ? kt_suggest(n->value, names, n_names) : NULL;
    char mean[160];
    if (hint) {
        kt_yaml_did_you_mean(mean, sizeof(mean), hint);
        report(c, d, n, "expected one of %s, got %s%s", want, got, mean);
    } else {
        report(c, d, n, "expected one of %s, got %s", want, got);
    }
}

static void check_number(ctx *c, const cJSON *s, const kt_node *n, kt_diag *d)
{
    static const struct {
        const char *keyword, *op;
        int sign; /* the value must satisfy sign * (x - limit) >= 0, or > 0 when strict */
        int strict;
    } bounds[] = {{"minimum", ">=", 1, 0},
                  {"exclusiveMinimum", ">", 1, 1},
                  {"maximum", "<=", -1, 0},
                  {"exclusiveMaximum", "<", -1, 1}};
    double x = number_of(n);
    for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
        const cJSON *b = kw(s, bounds[i].keyword);
        if (!b)
            continue;
        if (!cJSON_IsNumber(b)) {
            schema_error(c, "'%s' is not a number", bounds[i].keyword);
            return;
        }
        double diff = bounds[i].sign * (x - b->valuedouble);
        if (bounds[i].strict ? diff > 0 : diff >= 0)
            continue;
        char limit[32];
        format_number(limit, sizeof(limit), b->valuedouble);
        report(c, d, n, "must be %s %s, got %s", bounds[i].op, limit, n->value);
    }
}

/* Length in characters (UTF-8 code points), as JSON Schema counts. */
static size_t utf8_length(const char *s, size_t len)
{
    size_t count = 0;
    for (size_t i = 0; i < len; i++)
        count += ((unsigned char)s[i] & 0xc0) != 0x80;
    return count;
}

/* Rewrites the ECMA-262 escapes JSON Schema patterns use (\d \w \s, their negations outside
 * brackets, escaped punctuation inside brackets) into POSIX ERE. NULL when 'src' needs
 * what ERE lacks or memory runs out. */
static char *ecma_to_ere(const char *src)
{
    char *out = malloc(strlen(src) * 7 + 1), *o = out;
    int in_class = 0;
    if (!out)
        return NULL;
    for (const char *p = src; *p; p++) {
        if (*p == '\\' && p[1]) {
            char e = *++p;
            const char *rep = NULL;
            switch (e) {
            case 'd':
                rep = in_class ? "0-9" : "[0-9]";
                break;
            case 'w':
                rep = in_class ? "[:alnum:]_" : "[[:alnum:]_]";
                break;
            case 's':
                rep = in_class ? "[:space:]" : "[[:space:]]";
                break;
            case 'D':
            case 'W':
            case 'S':
                if (in_class)
                    goto fail;
                rep = e == 'D' ? "[^0-9]" : e == 'W' ? "[^[:alnum:]_]" : "[^[:space:]]";
                break;
            default:
                if (in_class && (e == ']' || e == '^' || e == '-' || e == '\\'))
                    goto fail;
                if (!in_class)
                    *o++ = '\\';
                *o++ = e;
                continue;
            }
            o += sprintf(o, "%s", rep);
            continue;
        }
        if (*p == '[' && !in_class) {
            in_class = 1;
            *o++ = *p;
            if (p[1] == '^')
                *o++ = *++p;
            if (p[1] == ']')
                *o++ = *++p;
            continue;
        }
        if (*p == ']' && in_class)
            in_class = 0;
        *o++ = *p;
    }
    *o = '\0';
    return out;
fail:
    free(out);
    return NULL;
}

/* A hash consistent with nodes_equal: equal nodes hash alike (numbers by value, object
 * members in any order). */
static uint64_t mix(uint64_t a, uint64_t b) /* splitmix64's finaliser of a ^ b */
{
    uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t text_hash(const char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t node_hash(const kt_node *n)
{
    jtype t = json_type(n);
    uint64_t h = (uint64_t)t * 0x9e3779b97f4a7c15ull;
    if (is_number(t)) {
        double v = number_of(n);
        if (v == 0)
            v = 0; /* -0 == 0 */
        uint64_t bits;
        memcpy(&bits, &v, sizeof(bits));
        return mix(0x6e756dull, bits);
    }
    switch (t) {
    case J_BOOL: {
        int x = 0;
        kt_node_bool(n, &x);
        return mix(h, (uint64_t)x);
    }
    case J_STRING:
        return mix(h, text_hash(n->value, n->len));
    case J_ARRAY:
        for (size_t i = 0; i < n->n; i++)
            h = mix(h, node_hash(n->items[i]));
        return h;
    case J_OBJECT: {
        uint64_t sum = 0;
        for (size_t i = 0; i < n->n; i++)
            sum += mix(text_hash(n->keys[i]->value, n->keys[i]->len), node_hash(n->items[i]));
        return mix(h, sum);
    }
    default:
        return h;
    }
}

/* uniqueItems in linear time: a hash table of item indices, nodes_equal on a hash match. */
static void check_unique(ctx *c, const kt_node *n, kt_diag *d)
{
    size_t cap = 16;
    while (cap < 2 * n->n)
        cap *= 2;
    size_t *slot = malloc(cap * sizeof(*slot));
    uint64_t *hash = malloc((n->n ? n->n : 1) * sizeof(*hash));
    if (!slot || !hash) {
        free(slot);
        free(hash);
        schema_error(c, "out of memory");
        return;
    }
    for (size_t i = 0; i < cap; i++)
        slot[i] = SIZE_MAX;
    for (size_t j = 0; j < n->n; j++) {
        hash[j] = node_hash(n->items[j]);
        size_t k = (size_t)hash[j] & (cap - 1);
        for (; slot[k] != SIZE_MAX; k = (k + 1) & (cap - 1)) {
            size_t i = slot[k];
            if (hash[i] == hash[j] && nodes_equal(n->items[i], n->items[j]))
                break;
        }
        if (slot[k] == SIZE_MAX) {
            slot[k] = j;
            continue;
        }
        size_t old = path_index(c, j);
        report(c, d, n->items[j], "duplicate of item [%zu]", slot[k]);
        path_pop(c, old);
    }
    free(slot);
    free(hash);
}

static void check_string(ctx *c, const cJSON *s, const kt_node *n, kt_diag *d)
{
    const cJSON *min = kw(s, "minLength"), *max = kw(s, "maxLength"), *pat = kw(s, "pattern");
    size_t len = utf8_length(n->value, n->len);
    char got[MAX_SHOWN + 16];
    quote(got, sizeof(got), n->value);
    if (cJSON_IsNumber(min) && (double)len < min->valuedouble)
        report(c, d, n, "%s is shorter than %d characters", got, min->valueint);
    if (cJSON_IsNumber(max) && (double)len > max->valuedouble)
        report(c, d, n, "%s is longer than %d characters", got, max->valueint);
    if (!pat)
        return;
    char *ere = cJSON_IsString(pat) ? ecma_to_ere(pat->valuestring) : NULL;
    regex_t re;
    if (!ere || regcomp(&re, ere, REG_EXTENDED | REG_NOSUB) != 0) {
        schema_error(c, "unsupported pattern '%s'",
                     cJSON_IsString(pat) ? pat->valuestring : "(not a string)");
        free(ere);
        return;
    }
    if (!plain_text(n) || regexec(&re, n->value, 0, NULL, 0) != 0)
        report(c, d, n, "%s does not match %s", got, pat->valuestring);
    regfree(&re);
    free(ere);
}

static void check_array(ctx *c, const cJSON *s, const kt_node *n, kt_diag *d)
{
    const cJSON *min = kw(s, "minItems"), *max = kw(s, "maxItems");
    const cJSON *items = kw(s, "items"), *uniq = kw(s, "uniqueItems");
    if (cJSON_IsNumber(min) && (double)n->n < min->valuedouble)
        report(c, d, n, "expected at least %d item%s, got %zu", min->valueint,
               min->valueint == 1 ? "" : "s", n->n);
    if (cJSON_IsNumber(max) && (double)n->n > max->valuedouble) {
        /* nothing more to say of a list that long: its items would only bury this */
        report(c, d, n, "expected at most %d item%s, got %zu", max->valueint,
               max->valueint == 1 ? "" : "s", n->n);
        return;
    }
    for (size_t i = 0; items && i < n->n; i++) {
        const cJSON *si = cJSON_IsArray(items) ? cJSON_GetArrayItem(items, (int)i) : items;
        if (!si)
            break; /* tuple form: items past the listed schemas are free */
        size_t old = path_index(c, i);
        validate(c, si, n->items[i], d);
        path_pop(c, old);
    }
    if (cJSON_IsTrue(uniq))
        check_unique(c, n, d);
}

/* The schema of the first patternProperties entry whose pattern matches 'key', or NULL. */
static const cJSON *pattern_property(ctx *c, const cJSON *patterns, const char *key)
{
    for (const cJSON *p = cJSON_IsObject(patterns) ? patterns->child : NULL; p; p = p->next) {
        char *ere = ecma_to_ere(p->string);
        regex_t re;
        if (!ere || regcomp(&re, ere, REG_EXTENDED | REG_NOSUB) != 0) {
            schema_error(c, "unsupported pattern '%s'", p->string);
            free(ere);
            continue;
        }
        int match = regexec(&re, key, 0, NULL, 0) == 0;
        regfree(&re);
        free(ere);
        if (match)
            return p;
    }
    return NULL;
}

static void check_object(ctx *c, const cJSON *s, const kt_node *n, kt_diag *d)
{
    const cJSON *req = kw(s, "required"), *props = kw(s, "properties");
    const cJSON *extra = kw(s, "additionalProperties");
    for (const cJSON *r = cJSON_IsArray(req) ? req->child : NULL; r; r = r->next)
        if (cJSON_IsString(r) && !kt_node_get(n, r->valuestring))
            report(c, d, n, "missing required key '%s'", r->valuestring);
    for (size_t i = 0; i < n->n; i++) {
        const kt_node *key = n->keys[i];
        if (key->kind != KT_NODE_SCALAR)
            continue;
        const cJSON *sub = props ? kw(props, key->value) : NULL;
        if (!sub)
            sub = pattern_property(c, kw(s, "patternProperties"), key->value);
        if (!sub && cJSON_IsFalse(extra)) {
            const char *names[128];
            size_t n_names = 0;
            for (const cJSON *p = props ? props->child : NULL; p && n_names < 128; p = p->next)
                names[n_names++] = p->string;
            const char *hint = kt_suggest(key->value, names, n_names);
            char elsewhere[256]; /* a key under the wrong parent: where it belongs */
            if (hint)
                report(c, d, key, "unknown key '%s'; did you mean '%s'?", key->value, hint);
            else if (kt_schema_key_elsewhere(elsewhere, sizeof(elsewhere), c->root, key->value,
                                             c->path))
                report(c, d, key, "unknown key '%s'; %s", key->value, elsewhere);
            else
                report(c, d, key, "unknown key '%s'", key->value);
            continue;
        }
        if (!sub)
            sub = extra;
        if (!sub)
            continue;
        size_t old = path_key(c, key->value);
        validate(c, sub, n->items[i], d);
        path_pop(c, old);
    }
}

/* ---- oneOf / anyOf -------------------------------------------------------------------- */

/* Whether branch 's' admits the node's type at all ('type', else the type of 'const' or of
 * an 'enum' value); a branch that says nothing about types admits every node. */
static int branch_admits(ctx *c, const cJSON *s, const kt_node *n, char *types, size_t cap)
{
    s = follow_refs(c, s);
    types[0] = '\0';
    if (!s || cJSON_IsBool(s))
        return !s || cJSON_IsTrue(s);
    const cJSON *type = kw(s, "type"), *cn = kw(s, "const"), *en = kw(s, "enum");
    if (type)
        return check_type(type, n, types, cap) != 0;
    const cJSON *values = cn ? cn : cJSON_IsArray(en) ? en->child : NULL;
    if (!values)
        return 1;
    for (const cJSON *v = values; v; v = cn ? NULL : v->next) {
        jtype t = json_type(n);
        if ((cJSON_IsNull(v) && t == J_NULL) || (cJSON_IsBool(v) && t == J_BOOL) ||
            (cJSON_IsNumber(v) && is_number(t)) || (cJSON_IsString(v) && t == J_STRING) ||
            (cJSON_IsArray(v) && t == J_ARRAY) || (cJSON_IsObject(v) && t == J_OBJECT))
            return 1;
    }
    return 0;
}

/* A few words for branch 's' in "expected one of: ...": its title, the name of the
 * definition it refers to, its const or enum values, or its type. */
static void summarize(ctx *c, const cJSON *s, char *buf, size_t cap)
{
    const cJSON *ref = cJSON_IsObject(s) ? kw(s, "$ref") : NULL;
    const cJSON *t = follow_refs(c, s);
    const cJSON *title = cJSON_IsObject(t) ? kw(t, "title") : NULL;
    const cJSON *cn = cJSON_IsObject(t) ? kw(t, "const") : NULL;
    const cJSON *en = cJSON_IsObject(t) ? kw(t, "enum") : NULL;
    const cJSON *type = cJSON_IsObject(t) ? kw(t, "type") : NULL;
    if (cJSON_IsString(title)) {
        snprintf(buf, cap, "%s", title->valuestring);
    } else if (cJSON_IsString(ref) && strrchr(ref->valuestring, '/')) {
        snprintf(buf, cap, "%s", strrchr(ref->valuestring, '/') + 1);
    } else if (cn) {
        show_json(buf, cap, cn, 0);
    } else if (cJSON_IsArray(en)) {
        size_t used = (size_t)snprintf(buf, cap, "one of ");
        for (const cJSON *v = en->child; v && used < cap; v = v->next) {
            char one[64];
            show_json(one, sizeof(one), v, 0);
            used +=
                (size_t)snprintf(buf + used, cap - used, "%s%s", v == en->child ? "" : ", ", one);
        }
    } else if (cJSON_IsString(type)) {
        snprintf(buf, cap, "%s", type->valuestring);
    } else if (type) {
        char *text = cJSON_PrintUnformatted(type);
        snprintf(buf, cap, "%s", text ? text : "?");
        free(text);
    } else {
        snprintf(buf, cap, "a schema");
    }
}

/* summarize() for a branch of oneOf/anyOf, where a branch that only requires keys
 * (anyOf [{required: [variant]}, {required: [run]}]) is named by those keys. */
static void summarize_branch(ctx *c, const cJSON *s, char *buf, size_t cap)
{
    summarize(c, s, buf, cap);
    const cJSON *t = follow_refs(c, s);
    const cJSON *req = cJSON_IsObject(t) ? kw(t, "required") : NULL;
    if (strcmp(buf, "a schema") != 0 || !cJSON_IsArray(req) || !req->child)
        return;
    size_t used = (size_t)snprintf(buf, cap, "an object with");
    for (const cJSON *v = req->child; v && used < cap; v = v->next)
        used += (size_t)snprintf(buf + used, cap - used, "%s'%s'", v == req->child ? " " : " and ",
                                 cJSON_IsString(v) ? v->valuestring : "?");
}

/* oneOf ('exactly_one') or anyOf over 'list'. */
static void check_alternatives(ctx *c, const cJSON *list, const kt_node *n, kt_diag *d,
                               int exactly_one)
{
    const char *keyword = exactly_one ? "oneOf" : "anyOf";
    size_t count = cJSON_IsArray(list) ? (size_t)cJSON_GetArraySize(list) : 0;
    if (count == 0) {
        schema_error(c, "'%s' is not a non-empty array", keyword);
        return;
    }
    kt_diag *tries = calloc(count, sizeof(*tries));
    if (!tries) {
        schema_error(c, "out of memory");
        return;
    }
    size_t i = 0, matched = 0, first = 0, admitted = 0, admitted_at = 0;
    char expected[256] = "", types[128], a[128], b[128];
    for (const cJSON *s = list->child; s; s = s->next, i++) {
        kt_diag_init(&tries[i]);
        validate(c, s, n, &tries[i]);
        if (tries[i].n_errors == 0 && matched++ == 0)
            first = i;
        if (tries[i].n_errors == 0 && matched == 2 && exactly_one) {
            summarize_branch(c, cJSON_GetArrayItem(list, (int)first), a, sizeof(a));
            summarize_branch(c, s, b, sizeof(b));
            report(c, d, n, "matches more than one of the allowed forms (%s and %s)", a, b);
        }
        if (branch_admits(c, s, n, types, sizeof(types))) {
            admitted_at = i;
            admitted++;
        } else if (types[0] && !strstr(expected, types)) {
            size_t used = strlen(expected);
            snprintf(expected + used, sizeof(expected) - used, "%s%s", used ? " or " : "", types);
        }
    }
    if (matched == 0 && !c->broken) {
        char got[MAX_SHOWN + 32];
        describe(got, sizeof(got), n);
        if (admitted == 0 && expected[0]) {
            report(c, d, n, "expected %s, got %s", expected, got);
        } else if (admitted == 1) {
            const kt_diag *t = &tries[admitted_at];
            for (size_t k = 0; k < t->n; k++)
                kt_diag_add(d, t->items[k].severity, t->items[k].file, t->items[k].line,
                            t->items[k].col, "%s", t->items[k].message);
        } else {
            char list_text[512] = "";
            size_t used = 0;
            for (const cJSON *s = list->child; s; s = s->next) {
                if (admitted && !branch_admits(c, s, n, types, sizeof(types)))
                    continue;
                summarize_branch(c, s, a, sizeof(a));
                used += (size_t)snprintf(list_text + used, sizeof(list_text) - used, "%s%s",
                                         used ? ", " : "", a);
                used = used < sizeof(list_text) ? used : sizeof(list_text) - 1;
            }
            show_value(got, sizeof(got), n);
            report(c, d, n, "expected one of: %s; got %s", list_text, got);
        }
    }
    for (i = 0; i < count; i++)
        kt_diag_free(&tries[i]);
    free(tries);
}

static void check_combinators(ctx *c, const cJSON *s, const kt_node *n, kt_diag *d)
{
    const cJSON *all = kw(s, "allOf"), *one = kw(s, "oneOf"), *any = kw(s, "anyOf");
    const cJSON *not = kw(s, "not");
    for (const cJSON *sub = cJSON_IsArray(all) ? all->child : NULL; sub; sub = sub->next)
        validate(c, sub, n, d);
    if (one)
        check_alternatives(c, one, n, d, 1);
    if (any)
        check_alternatives(c, any, n, d, 0);
    if (not ) {
        kt_diag scratch;
        kt_diag_init(&scratch);
        validate(c, not, n, &scratch);
        if (scratch.n_errors == 0 && !c->broken) {
            char what[128];
            summarize(c, not, what, sizeof(what));
            if (strcmp(what, "a schema") == 0)
                report(c, d, n, "matches the schema under 'not'");
            else
                report(c, d, n, "must not be %s", what);
        }
        kt_diag_free(&scratch);
    }
}

/* Checks node 'n' against schema 's', reporting into 'd'. */
static void validate(ctx *c, const cJSON *s, const kt_node *n, kt_diag *d)
{
    if (c->broken)
        return;
    if (++c->depth > MAX_SCHEMA_DEPTH) {
        schema_error(c, "nested more than %d levels (a $ref loop?)", MAX_SCHEMA_DEPTH);
        goto done;
    }
    if (cJSON_IsBool(s)) {
        if (cJSON_IsFalse(s))
            report(c, d, n, "no value is allowed here");
        goto done;
    }
    if (!cJSON_IsObject(s)) {
        schema_error(c, "a schema must be an object or a boolean");
        goto done;
    }
    const cJSON *ref = kw(s, "$ref");
    if (ref) { /* draft-07: $ref replaces every other keyword beside it */
        const cJSON *target = follow_refs(c, s);
        if (target)
            validate(c, target, n, d);
        goto done;
    }
    const cJSON *type = kw(s, "type");
    char expected[128];
    int m = type ? check_type(type, n, expected, sizeof(expected)) : 1;
    if (m < 0) {
        char *text = cJSON_PrintUnformatted(type);
        schema_error(c, "unknown type %s", text ? text : "?");
        free(text);
        goto done;
    }
    if (m == 0) {
        char got[MAX_SHOWN + 32];
        describe(got, sizeof(got), n);
        report(c, d, n, "expected %s, got %s", expected, got);
        goto done;
    }
    check_enum(c, s, n, d);
    jtype t = json_type(n);
    if (is_number(t))
        check_number(c, s, n, d);
    else if (t == J_STRING)
        check_string(c, s, n, d);
    else if (t == J_ARRAY)
        check_array(c, s, n, d);
    else if (t == J_OBJECT)
        check_object(c, s, n, d);
    check_combinators(c, s, n, d);
done:
    c->depth--;
}

int kt_schema_validate(const cJSON *schema, const kt_node *doc, const char *file, kt_diag *diag)
{
    ctx c = {.root = schema, .file = file, .diag = diag};
    size_t before = diag->n_errors;
    if (!schema || !doc) {
        schema_error(&c, "no schema or no document");
        return -1;
    }
    validate(&c, schema, doc, diag);
    if (c.broken)
        return -1;
    return (int)(diag->n_errors - before);
}
