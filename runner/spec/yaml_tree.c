/* yaml_tree.c - libyaml events to a kt_node tree, with the checks libyaml does not make.
 *
 * The loader keeps a stack of open collections. A node belongs to its frame until it is
 * complete, then to its parent, so a fatal error frees exactly the frames and the root.
 * Anchors point into the tree; an alias is expanded into a deep copy of its anchor's node,
 * which must be complete (otherwise the alias sits inside its own anchor: a cycle). A merge
 * key's value waits in its map's frame and is merged in when the map ends, so that the map's
 * own keys win wherever they were written. */
#include "spec/yaml_tree.h"
#include "util/dotted_path.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#define TAG_STR "tag:yaml.org,2002:str"
#define TAG_MAP "tag:yaml.org,2002:map"
#define TAG_SEQ "tag:yaml.org,2002:seq"

typedef struct {
    char *name;
    kt_node *node;  /* inside the tree; not owned */
    size_t n_nodes; /* nodes in the subtree, once complete */
    int height;     /* collection levels in the subtree (a scalar has 0) */
    int complete;
} anchor;

typedef struct {
    kt_node *node;  /* owned until attached to its parent */
    kt_node *key;   /* map: the key waiting for its value, owned */
    size_t cap;     /* allocated entries of node->keys/items */
    size_t *slots;  /* map: open-addressing set of (key index + 1), for duplicate keys */
    size_t n_slots; /* a power of two, or 0 */
    size_t anchor;  /* index + 1 into the anchors, or 0 */
    size_t nodes_at_start;
    int height;
    int merge_key;  /* map: the waiting key is the merge key '<<' */
    kt_node *merge; /* map: the value of its merge key, owned; merged when the map ends */
    int merge_line; /* where the merge key was written */
} frame;

typedef struct {
    const char *file;
    kt_diag *diag;
    frame stack[KT_YAML_MAX_DEPTH];
    int depth;
    anchor *anchors;
    size_t n_anchors, cap_anchors;
    kt_node *root;
    int root_height;
    size_t n_nodes;
    int n_docs;
} loader;

void kt_node_free(kt_node *node)
{
    if (!node)
        return;
    for (size_t i = 0; i < node->n; i++) {
        if (node->keys)
            kt_node_free(node->keys[i]);
        if (node->items)
            kt_node_free(node->items[i]);
    }
    free(node->keys);
    free(node->items);
    free(node->value);
    free(node);
}

static int oom(loader *ld)
{
    return kt_diag_error(ld->diag, ld->file, 0, 0, "out of memory while reading YAML");
}

/* ---- nodes ---------------------------------------------------------------------------- */

static kt_node *node_new(loader *ld, kt_node_kind kind, yaml_mark_t mark)
{
    if (ld->n_nodes >= KT_YAML_MAX_NODES) {
        kt_diag_error(ld->diag, ld->file, (int)mark.line + 1, (int)mark.column + 1,
                      "document has more than %d nodes", KT_YAML_MAX_NODES);
        return NULL;
    }
    kt_node *n = calloc(1, sizeof(*n));
    if (!n) {
        oom(ld);
        return NULL;
    }
    n->kind = kind;
    n->line = (int)mark.line + 1;
    n->col = (int)mark.column + 1;
    ld->n_nodes++;
    return n;
}

/* A deep copy of 'src', or NULL when out of memory. */
static kt_node *node_copy(const kt_node *src)
{
    kt_node *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->kind = src->kind;
    n->line = src->line;
    n->col = src->col;
    n->quoted = src->quoted;
    n->len = src->len;
    if (src->kind == KT_NODE_SCALAR) {
        n->value = malloc(src->len + 1);
        if (!n->value)
            goto fail;
        memcpy(n->value, src->value, src->len + 1);
        return n;
    }
    size_t cnt = src->n ? src->n : 1;
    n->items = calloc(cnt, sizeof(*n->items));
    if (!n->items)
        goto fail;
    if (src->kind == KT_NODE_MAP) {
        n->keys = calloc(cnt, sizeof(*n->keys));
        if (!n->keys)
            goto fail;
    }
    n->n = src->n;
    for (size_t i = 0; i < src->n; i++) {
        if (n->keys && !(n->keys[i] = node_copy(src->keys[i])))
            goto fail;
        if (!(n->items[i] = node_copy(src->items[i])))
            goto fail;
    }
    return n;
fail:
    kt_node_free(n);
    return NULL;
}

/* ---- duplicate keys ------------------------------------------------------------------- */

static size_t hash_bytes(const char *s, size_t n)
{
    size_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

static int same_text(const kt_node *a, const kt_node *b)
{
    return a->len == b->len && memcmp(a->value, b->value, a->len) == 0;
}

/* Slot of 'key' in the frame's set: the slot holding an equal key, or the empty slot where
 * it would go. The set must have a free slot. */
static size_t slot_find(const frame *f, const kt_node *key)
{
    size_t mask = f->n_slots - 1;
    size_t i = hash_bytes(key->value, key->len) & mask;
    while (f->slots[i] && !same_text(f->node->keys[f->slots[i] - 1], key))
        i = (i + 1) & mask;
    return i;
}

/* Records scalar 'key', about to become key number node->n of the frame's map. Sets
 * *first to an earlier equal key, if any. Returns -1 when out of memory. */
static int key_remember(frame *f, const kt_node *key, const kt_node **first)
{
    *first = NULL;
    if (2 * (f->node->n + 1) > f->n_slots) {
        size_t n_slots = f->n_slots ? 2 * f->n_slots : 16;
        size_t *slots = calloc(n_slots, sizeof(*slots));
        if (!slots)
            return -1;
        free(f->slots);
        f->slots = slots;
        f->n_slots = n_slots;
        for (size_t k = 0; k < f->node->n; k++) {
            const kt_node *old = f->node->keys[k];
            if (old->kind == KT_NODE_SCALAR) {
                size_t s = slot_find(f, old);
                if (!f->slots[s])
                    f->slots[s] = k + 1;
            }
        }
    }
    size_t s = slot_find(f, key);
    if (f->slots[s])
        *first = f->node->keys[f->slots[s] - 1];
    else
        f->slots[s] = f->node->n + 1;
    return 0;
}

/* ---- building ------------------------------------------------------------------------- */

static int push_entry(frame *f, kt_node *key, kt_node *item)
{
    kt_node *c = f->node;
    if (c->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 4;
        kt_node **items = realloc(c->items, cap * sizeof(*items));
        if (!items)
            return -1;
        c->items = items;
        if (c->kind == KT_NODE_MAP) {
            kt_node **keys = realloc(c->keys, cap * sizeof(*keys));
            if (!keys)
                return -1;
            c->keys = keys;
        }
        f->cap = cap;
    }
    if (c->kind == KT_NODE_MAP)
        c->keys[c->n] = key;
    c->items[c->n++] = item;
    return 0;
}

/* The YAML 1.1 merge key: a plain '<<' ('"<<"' quoted is an ordinary key). */
static int is_merge_key(const kt_node *key)
{
    return key->kind == KT_NODE_SCALAR && !key->quoted && strcmp(key->value, "<<") == 0;
}

/* The value of a merge key, kept whole until its map ends: a mapping, or a sequence of
 * mappings (the first of them wins where they share a key). */
static int merge_keep(loader *ld, frame *f, kt_node *key, kt_node *value)
{
    int ok = value->kind == KT_NODE_MAP;
    for (size_t i = 0; value->kind == KT_NODE_SEQ && i < value->n; i++)
        ok = value->items[i]->kind == KT_NODE_MAP;
    if (value->kind == KT_NODE_SEQ && value->n == 0)
        ok = 0;
    if (!ok)
        kt_diag_error(ld->diag, ld->file, value->line, value->col,
                      "the merge key '<<' takes a mapping or a list of mappings (an alias "
                      "such as *defaults, or [*a, *b])");
    else if (f->merge)
        kt_diag_error(ld->diag, ld->file, key->line, key->col,
                      "duplicate merge key '<<' (first at line %d); merge several mappings "
                      "with '<<: [*a, *b]'",
                      f->merge_line);
    if (ok && !f->merge) {
        f->merge = value;
        f->merge_line = key->line;
        value = NULL;
    }
    kt_node_free(key);
    kt_node_free(value);
    return 0;
}

/* Whether the map of 'f' has a key with the text of 'key'. */
static int map_has(const frame *f, const kt_node *key)
{
    for (size_t i = 0; i < f->node->n; i++)
        if (same_text(f->node->keys[i], key))
            return 1;
    return 0;
}

/* Moves the entries of the frame's merge value into its map, after its own entries, except
 * those whose key the map already has: its own keys win over merged ones, and an earlier
 * mapping of a list over a later one. Merged entries keep the places they were written at. */
static int merge_apply(loader *ld, frame *f)
{
    kt_node *m = f->merge;
    f->merge = NULL;
    if (!m)
        return 0;
    size_t n_maps = m->kind == KT_NODE_MAP ? 1 : m->n;
    for (size_t k = 0; k < n_maps; k++) {
        kt_node *src = m->kind == KT_NODE_MAP ? m : m->items[k];
        for (size_t i = 0; i < src->n; i++) {
            if (!src->items[i] || map_has(f, src->keys[i]))
                continue;
            if (push_entry(f, src->keys[i], src->items[i]) < 0) {
                kt_node_free(m);
                return oom(ld);
            }
            src->keys[i] = src->items[i] = NULL; /* moved */
        }
    }
    kt_node_free(m);
    return 0;
}

/* Hands the complete 'node' (of 'height' collection levels) to the open collection, or
 * makes it the root. Takes ownership of 'node' in every case. Returns -1 on a fatal error. */
static int attach(loader *ld, kt_node *node, int height)
{
    if (ld->depth == 0) {
        kt_node_free(ld->root);
        ld->root = node;
        ld->root_height = height;
        return 0;
    }
    frame *f = &ld->stack[ld->depth - 1];
    if (height + 1 > f->height)
        f->height = height + 1;
    if (f->node->kind == KT_NODE_MAP && !f->key) {
        f->key = node;
        if (node->kind != KT_NODE_SCALAR) {
            kt_diag_error(ld->diag, ld->file, node->line, node->col,
                          "mapping keys must be scalars");
            return 0;
        }
        if ((f->merge_key = is_merge_key(node)))
            return 0;
        const kt_node *first;
        if (key_remember(f, node, &first) < 0)
            return oom(ld);
        if (first)
            kt_diag_error(ld->diag, ld->file, node->line, node->col,
                          "duplicate key '%s' (first at line %d)", node->value, first->line);
        return 0;
    }
    kt_node *key = f->key;
    f->key = NULL;
    if (f->merge_key) {
        f->merge_key = 0;
        return merge_keep(ld, f, key, node);
    }
    if (push_entry(f, key, node) < 0) {
        kt_node_free(key);
        kt_node_free(node);
        return oom(ld);
    }
    return 0;
}

static int in_key_position(const loader *ld)
{
    if (ld->depth == 0)
        return 0;
    const frame *f = &ld->stack[ld->depth - 1];
    return f->node->kind == KT_NODE_MAP && !f->key;
}

/* Registers 'name' for 'node'. Returns its index + 1, or 0 when out of memory. */
static size_t anchor_add(loader *ld, const char *name, kt_node *node)
{
    if (ld->n_anchors == ld->cap_anchors) {
        size_t cap = ld->cap_anchors ? 2 * ld->cap_anchors : 8;
        anchor *a = realloc(ld->anchors, cap * sizeof(*a));
        if (!a)
            return 0;
        ld->anchors = a;
        ld->cap_anchors = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return 0;
    ld->anchors[ld->n_anchors] = (anchor){.name = copy, .node = node, .n_nodes = 1, .complete = 1};
    return ++ld->n_anchors;
}

/* The latest anchor called 'name' (YAML lets a name be redefined), or NULL. */
static const anchor *anchor_find(const loader *ld, const char *name)
{
    for (size_t i = ld->n_anchors; i-- > 0;)
        if (strcmp(ld->anchors[i].name, name) == 0)
            return &ld->anchors[i];
    return NULL;
}

static int is_yaml11_bool(const char *s)
{
    static const char *const words[] = {"yes", "no", "on", "off", "y", "n"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcasecmp(s, words[i]) == 0)
            return 1;
    return 0;
}

void kt_yaml_did_you_mean(char *buf, size_t len, const char *guess)
{
    if (is_yaml11_bool(guess))
        snprintf(buf, len,
                 "; did you mean \"%s\" (in quotes: unquoted, YAML 1.1 reads %s as a "
                 "boolean)?",
                 guess, guess);
    else
        snprintf(buf, len, "; did you mean '%s'?", guess);
}

static int on_scalar(loader *ld, const yaml_event_t *ev)
{
    const char *tag = (const char *)ev->data.scalar.tag;
    kt_node *n = node_new(ld, KT_NODE_SCALAR, ev->start_mark);
    if (!n)
        return -1;
    n->len = ev->data.scalar.length;
    n->value = malloc(n->len + 1);
    if (!n->value) {
        kt_node_free(n);
        return oom(ld);
    }
    memcpy(n->value, ev->data.scalar.value, n->len);
    n->value[n->len] = '\0';
    n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    /* Everything after the loader reads values as C strings: a NUL ("\0", "\u0000") would cut
     * one short, in messages and in lookups alike ("lognormal\0x" would pass as "lognormal"). */
    if (memchr(n->value, '\0', n->len))
        kt_diag_error(ld->diag, ld->file, n->line, n->col,
                      "the string contains a NUL byte (\\0), which no name, path or value may "
                      "hold");
    if (tag && (strcmp(tag, TAG_STR) == 0 || strcmp(tag, "!") == 0))
        n->quoted = 1;
    else if (tag)
        kt_diag_error(ld->diag, ld->file, n->line, n->col, "unsupported tag '%s'", tag);
    if (!n->quoted && !in_key_position(ld) && is_yaml11_bool(n->value))
        kt_diag_error(ld->diag, ld->file, n->line, n->col,
                      "'%s' is not a boolean in YAML 1.2; write true or false (or quote it "
                      "for a string)",
                      n->value);
    const char *name = (const char *)ev->data.scalar.anchor;
    if (name && !anchor_add(ld, name, n)) {
        kt_node_free(n);
        return oom(ld);
    }
    return attach(ld, n, 0);
}

static int on_alias(loader *ld, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    const anchor *a = anchor_find(ld, name);
    if (!a || !a->complete) {
        if (!a)
            kt_diag_error(ld->diag, ld->file, line, col, "unknown alias '*%s'", name);
        else
            kt_diag_error(ld->diag, ld->file, line, col,
                          "alias '*%s' refers to its own enclosing node", name);
        /* keep the structure going with a null in its place, to find more problems */
        kt_node *n = node_new(ld, KT_NODE_SCALAR, ev->start_mark);
        if (!n)
            return -1;
        if (!(n->value = strdup(""))) {
            kt_node_free(n);
            return oom(ld);
        }
        return attach(ld, n, 0);
    }
    if (a->n_nodes > KT_YAML_MAX_NODES - ld->n_nodes)
        return kt_diag_error(ld->diag, ld->file, line, col,
                             "alias '*%s' expands the document beyond %d nodes", name,
                             KT_YAML_MAX_NODES);
    if (ld->depth + a->height > KT_YAML_MAX_DEPTH)
        return kt_diag_error(ld->diag, ld->file, line, col,
                             "alias '*%s' nests the document deeper than %d levels", name,
                             KT_YAML_MAX_DEPTH);
    kt_node *n = node_copy(a->node);
    if (!n)
        return oom(ld);
    n->line = line;
    n->col = col;
    ld->n_nodes += a->n_nodes;
    return attach(ld, n, a->height);
}

static int on_start(loader *ld, const yaml_event_t *ev, kt_node_kind kind)
{
    int is_map = kind == KT_NODE_MAP;
    const char *tag =
        (const char *)(is_map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag);
    const char *name =
        (const char *)(is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor);
    if (ld->depth == KT_YAML_MAX_DEPTH)
        return kt_diag_error(ld->diag, ld->file, (int)ev->start_mark.line + 1,
                             (int)ev->start_mark.column + 1, "nesting deeper than %d levels",
                             KT_YAML_MAX_DEPTH);
    size_t nodes_at_start = ld->n_nodes;
    kt_node *n = node_new(ld, kind, ev->start_mark);
    if (!n)
        return -1;
    frame *f = &ld->stack[ld->depth++];
    memset(f, 0, sizeof(*f));
    f->node = n;
    f->nodes_at_start = nodes_at_start;
    f->height = 1;
    if (tag && strcmp(tag, is_map ? TAG_MAP : TAG_SEQ) != 0)
        kt_diag_error(ld->diag, ld->file, n->line, n->col, "unsupported tag '%s'", tag);
    if (name && !(f->anchor = anchor_add(ld, name, n)))
        return oom(ld);
    if (f->anchor)
        ld->anchors[f->anchor - 1].complete = 0;
    return 0;
}

static int on_end(loader *ld)
{
    frame f = ld->stack[--ld->depth];
    int rc = merge_apply(ld, &f);
    free(f.slots);
    kt_node_free(f.key); /* libyaml always pairs keys with values; this is a guard */
    if (rc < 0) {
        kt_node_free(f.node);
        return rc;
    }
    if (f.anchor) {
        anchor *a = &ld->anchors[f.anchor - 1];
        a->complete = 1;
        a->n_nodes = ld->n_nodes - f.nodes_at_start;
        a->height = f.height;
    }
    return attach(ld, f.node, f.height);
}

static int on_event(loader *ld, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (ld->n_docs++ > 0)
            return kt_diag_error(ld->diag, ld->file, (int)ev->start_mark.line + 1,
                                 (int)ev->start_mark.column + 1,
                                 "expected one YAML document, found a second one");
        return 0;
    case YAML_SCALAR_EVENT:
        return on_scalar(ld, ev);
    case YAML_ALIAS_EVENT:
        return on_alias(ld, ev);
    case YAML_SEQUENCE_START_EVENT:
        return on_start(ld, ev, KT_NODE_SEQ);
    case YAML_MAPPING_START_EVENT:
        return on_start(ld, ev, KT_NODE_MAP);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return on_end(ld);
    default:
        return 0;
    }
}

/* The first tab in the indentation of lines 1..'last_line' of 'text' (1-based line and
 * column in *line, *col), or 0 when there is none. */
static int indentation_tab(int *line, int *col, const char *text, size_t len, int last_line)
{
    int l = 1, c = 1, leading = 1;
    for (size_t i = 0; i < len && l <= last_line; i++, c++) {
        if (text[i] == '\n') {
            l++;
            c = 0;
            leading = 1;
        } else if (leading && text[i] == '\t') {
            *line = l;
            *col = c;
            return 1;
        } else if (text[i] != ' ') {
            leading = 0;
        }
    }
    return 0;
}

/* Reports libyaml's error with its place: the problem mark for scanner and parser errors,
 * the byte offset for reader errors (bad encoding, control characters). A tab in the
 * indentation at or before the problem is named as the cause, since libyaml's own words for
 * it vary with what follows the tab. */
static int syntax_error(loader *ld, const yaml_parser_t *p, const char *text, size_t len)
{
    if (p->error == YAML_MEMORY_ERROR)
        return oom(ld);
    const char *problem = p->problem ? p->problem : "unknown error";
    if (p->error == YAML_READER_ERROR) {
        int line = 1, col = 1;
        for (size_t i = 0; i < p->problem_offset && i < len; i++, col++)
            if (text[i] == '\n') {
                line++;
                col = 0;
            }
        if (p->problem_value >= 0)
            return kt_diag_error(ld->diag, ld->file, line, col, "syntax error: %s (byte 0x%02x)",
                                 problem, (unsigned)p->problem_value & 0xffu);
        return kt_diag_error(ld->diag, ld->file, line, col, "syntax error: %s", problem);
    }
    int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
    int tab_line, tab_col;
    if (indentation_tab(&tab_line, &tab_col, text, len, line))
        return kt_diag_error(ld->diag, ld->file, tab_line, tab_col,
                             "tabs are not allowed in YAML indentation (libyaml: %s)", problem);
    if (p->context)
        return kt_diag_error(ld->diag, ld->file, line, col, "syntax error: %s (%s at line %d)",
                             problem, p->context, (int)p->context_mark.line + 1);
    return kt_diag_error(ld->diag, ld->file, line, col, "syntax error: %s", problem);
}

int kt_yaml_load(kt_node **out, const char *file, const char *text, size_t len, kt_diag *diag)
{
    *out = NULL;
    if (len > KT_YAML_MAX_BYTES)
        return kt_diag_error(diag, file, 0, 0, "file is too large: %zu bytes (limit %u)", len,
                             KT_YAML_MAX_BYTES);
    loader ld = {.file = file, .diag = diag};
    size_t errors_before = diag->n_errors;
    int rc = -1;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return oom(&ld);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            syntax_error(&ld, &parser, text, len);
            goto done;
        }
        int ev_rc = on_event(&ld, &ev);
        yaml_event_type_t type = ev.type;
        yaml_event_delete(&ev);
        if (ev_rc < 0) /* fatal; other problems were reported and the walk went on */
            goto done;
        if (type == YAML_STREAM_END_EVENT)
            break;
    }
    if (!ld.root ||
        (ld.root->kind == KT_NODE_SCALAR && kt_node_scalar_type(ld.root) == KT_SCALAR_NULL)) {
        kt_diag_error(diag, file, 0, 0, "empty document");
        goto done;
    }
    if (diag->n_errors > errors_before)
        goto done;
    *out = ld.root;
    ld.root = NULL;
    rc = 0;
done:
    while (ld.depth > 0) {
        frame *f = &ld.stack[--ld.depth];
        free(f->slots);
        kt_node_free(f->key);
        kt_node_free(f->merge);
        kt_node_free(f->node);
    }
    kt_node_free(ld.root);
    for (size_t i = 0; i < ld.n_anchors; i++)
        free(ld.anchors[i].name);
    free(ld.anchors);
    yaml_parser_delete(&parser);
    return rc;
}

/* ---- scalars -------------------------------------------------------------------------- */

static int all_digits(const char *s, const char *set)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!strchr(set, *s))
            return 0;
    return 1;
}

#define DEC "0123456789"

static int is_int_text(const char *s)
{
    if (s[0] == '0' && s[1] == 'o')
        return all_digits(s + 2, "01234567");
    if (s[0] == '0' && s[1] == 'x')
        return all_digits(s + 2, DEC "abcdefABCDEF");
    if (*s == '-' || *s == '+')
        s++;
    return all_digits(s, DEC);
}

/* [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?  and the specials */
static int is_float_text(const char *s)
{
    if (!strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN"))
        return 1;
    if (*s == '-' || *s == '+')
        s++;
    if (!strcmp(s, ".inf") || !strcmp(s, ".Inf") || !strcmp(s, ".INF"))
        return 1;
    size_t int_digits = strspn(s, DEC), frac_digits = 0;
    s += int_digits;
    if (*s == '.') {
        s++;
        frac_digits = strspn(s, DEC);
        s += frac_digits;
    }
    if (int_digits == 0 && frac_digits == 0)
        return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        if (!all_digits(s, DEC))
            return 0;
        s += strlen(s);
    }
    return *s == '\0';
}

kt_scalar_type kt_node_scalar_type(const kt_node *node)
{
    if (!node || node->kind != KT_NODE_SCALAR || node->quoted || strlen(node->value) != node->len)
        return KT_SCALAR_STRING;
    const char *s = node->value;
    if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
        return KT_SCALAR_NULL;
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE") || !strcmp(s, "false") ||
        !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return KT_SCALAR_BOOL;
    if (is_int_text(s))
        return KT_SCALAR_INT;
    if (is_float_text(s))
        return KT_SCALAR_FLOAT;
    return KT_SCALAR_STRING;
}

const kt_node *kt_node_get(const kt_node *map, const char *key)
{
    if (!map || map->kind != KT_NODE_MAP)
        return NULL;
    size_t len = strlen(key);
    for (size_t i = 0; i < map->n; i++) {
        const kt_node *k = map->keys[i];
        if (k->kind == KT_NODE_SCALAR && k->len == len && memcmp(k->value, key, len) == 0)
            return map->items[i];
    }
    return NULL;
}

/* Parses an int scalar's text (decimal, 0o octal or 0x hex) as unsigned magnitude and
 * sign. Returns -1 when it does not fit 'limit'. */
static int parse_int_text(const char *s, uint64_t limit, uint64_t *mag, int *neg)
{
    int base = 10;
    *neg = 0;
    if (s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
        base = s[1] == 'o' ? 8 : 16;
        s += 2;
    } else if (*s == '-' || *s == '+') {
        *neg = *s == '-';
        s++;
    }
    errno = 0;
    unsigned long long v = strtoull(s, NULL, base);
    if (errno == ERANGE || v > limit)
        return -1;
    *mag = v;
    return 0;
}

int kt_node_int(const kt_node *node, int64_t *out)
{
    kt_scalar_type t = kt_node_scalar_type(node);
    if (t == KT_SCALAR_FLOAT) {
        /* JSON Schema counts 4.0 as an integer; accept what fits int64 exactly */
        double d;
        if (kt_node_double(node, &d) < 0 || d != trunc(d) || d < -9223372036854775808.0 ||
            d >= 9223372036854775808.0)
            return -1;
        *out = (int64_t)d;
        return 0;
    }
    if (t != KT_SCALAR_INT)
        return -1;
    uint64_t mag;
    int neg;
    if (parse_int_text(node->value, (uint64_t)INT64_MAX + 1, &mag, &neg) < 0)
        return -1;
    if (!neg && mag > (uint64_t)INT64_MAX)
        return -1;
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

int kt_node_double(const kt_node *node, double *out)
{
    kt_scalar_type t = kt_node_scalar_type(node);
    const char *s = node ? node->value : NULL;
    if (t == KT_SCALAR_INT && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
        uint64_t mag;
        int neg;
        if (parse_int_text(s, UINT64_MAX, &mag, &neg) < 0)
            return -1;
        *out = (double)mag;
        return 0;
    }
    if (t != KT_SCALAR_INT && t != KT_SCALAR_FLOAT)
        return -1;
    const char *p = s + (*s == '-' || *s == '+');
    if (*p == '.' && (p[1] == 'n' || p[1] == 'N')) {
        *out = NAN;
        return 0;
    }
    if (*p == '.' && (p[1] == 'i' || p[1] == 'I')) {
        *out = *s == '-' ? -INFINITY : INFINITY;
        return 0;
    }
    double d = strtod(s, NULL);
    if (isinf(d))
        return -1; /* a finite literal too large for a double */
    *out = d;
    return 0;
}

int kt_node_bool(const kt_node *node, int *out)
{
    if (kt_node_scalar_type(node) != KT_SCALAR_BOOL)
        return -1;
    *out = node->value[0] == 't' || node->value[0] == 'T';
    return 0;
}

const char *kt_node_str(const kt_node *node)
{
    return node && node->kind == KT_NODE_SCALAR ? node->value : NULL;
}

static cJSON *scalar_to_json(const kt_node *node)
{
    int64_t i;
    double d;
    int b;
    switch (kt_node_scalar_type(node)) {
    case KT_SCALAR_NULL:
        return cJSON_CreateNull();
    case KT_SCALAR_BOOL:
        kt_node_bool(node, &b);
        return cJSON_CreateBool(b);
    case KT_SCALAR_INT:
        if (kt_node_int(node, &i) == 0)
            return cJSON_CreateNumber((double)i);
        /* beyond int64: still a number */
        __attribute__((fallthrough));
    case KT_SCALAR_FLOAT:
        if (kt_node_double(node, &d) == 0)
            return cJSON_CreateNumber(d);
        return cJSON_CreateString(node->value);
    default:
        return cJSON_CreateString(node->value);
    }
}

cJSON *kt_node_to_json(const kt_node *node)
{
    if (node->kind == KT_NODE_SCALAR)
        return scalar_to_json(node);
    cJSON *out = node->kind == KT_NODE_MAP ? cJSON_CreateObject() : cJSON_CreateArray();
    if (!out)
        return NULL;
    for (size_t i = 0; i < node->n; i++) {
        cJSON *item = kt_node_to_json(node->items[i]);
        if (!item)
            goto fail;
        if (node->kind == KT_NODE_SEQ)
            cJSON_AddItemToArray(out, item);
        else if (node->keys[i]->kind == KT_NODE_SCALAR)
            cJSON_AddItemToObject(out, node->keys[i]->value, item);
        else
            cJSON_Delete(item); /* kt_yaml_load never returns such a key */
    }
    return out;
fail:
    cJSON_Delete(out);
    return NULL;
}

const kt_node *kt_node_at_path(const kt_node *root, const char *dotted_path)
{
    const kt_node *node = root;
    const char *p = dotted_path;
    char key[128];
    int more = 0;
    while (node && (more = kt_path_next_key(&p, key, sizeof(key))) > 0)
        node = kt_node_get(node, key);
    return more < 0 ? NULL : node;
}
