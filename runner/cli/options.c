/* options.c - parsing argv and printing help and usage lines from the tables in options_table.c
 * and command_table.h. */
#include "cli/options.h"

#include "cli/commands.h"
#include "util/suggest.h"
#include "kernel.h"

#include <stdarg.h>
#include <string.h>

void kt_options_print(FILE *out, const char *command)
{
    size_t n;
    const kt_option *rows = kt_options_of(command, &n);
    char left[64];
    fprintf(out, "\noptions:\n");
    for (size_t i = 0; i < n; i++) {
        const kt_option *o = &rows[i];
        snprintf(left, sizeof(left), "%s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "",
                 o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(out, "  %-24s %s\n", left, o->help);
    }
    fprintf(out, "  %-24s %s\n", "-h, --help", "show this help and exit");
}

/* "usage: ktrial NAME POSITIONAL [-o DIR] [--flag]...", the options from the table (a required
 * one without brackets). */
static void print_usage_line(FILE *out, const kt_command *cmd)
{
    size_t n;
    const kt_option *rows = kt_options_of(cmd->name, &n);
    fprintf(out, "usage: ktrial %s%s%s", cmd->name, cmd->usage[0] ? " " : "", cmd->usage);
    for (size_t i = 0; i < n; i++) {
        int required = kt_opt_required(&rows[i]);
        fprintf(out, " %s%s%s%s%s", required ? "" : "[",
                rows[i].alias ? rows[i].alias : rows[i].name, rows[i].arg ? " " : "",
                rows[i].arg ? rows[i].arg : "", required ? "" : "]");
    }
    fputc('\n', out);
}

void kt_command_print_help(const kt_command *cmd)
{
    print_usage_line(stdout, cmd);
    printf("\n%s\n", cmd->help);
    kt_options_print(stdout, cmd->name);
}

int kt_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

int kt_usage_error(const char *name, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    const kt_command *cmd = kt_command_find(name);
    if (cmd)
        print_usage_line(stderr, cmd);
    return KT_EXIT_USAGE;
}

void kt_opt_init(kt_opt_parser *p, const char *command, int argc, char **argv)
{
    p->command = command;
    p->argc = argc;
    p->argv = argv;
    p->i = 1;
    p->options_done = 0;
}

int kt_opt_required(const kt_option *o)
{
    static const char mark[] = "(required)";
    size_t n = strlen(o->help), m = sizeof(mark) - 1;
    return n >= m && strcmp(o->help + n - m, mark) == 0;
}

int kt_opt_is(const kt_option *o, const char *name)
{
    return o && strcmp(o->name, name) == 0;
}

/* The row whose name or alias is the first 'len' bytes of 'word'. */
static const kt_option *find(const kt_option *rows, size_t n, const char *word, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if ((strlen(rows[i].name) == len && strncmp(rows[i].name, word, len) == 0) ||
            (rows[i].alias && strlen(rows[i].alias) == len &&
             strncmp(rows[i].alias, word, len) == 0))
            return &rows[i];
    return NULL;
}

static int unknown(const kt_opt_parser *p, const kt_option *rows, size_t n, const char *word)
{
    const char *names[64];
    size_t k = 0;
    for (size_t i = 0; i < n && k < 64; i++)
        names[k++] = rows[i].name;
    char key[64];
    snprintf(key, sizeof(key), "%.*s", (int)strcspn(word, "="), word);
    const char *guess = kt_suggest(key, names, k);
    if (guess)
        return kt_usage_error(p->command, "unknown option '%s'; did you mean '%s'?", word, guess);
    return kt_usage_error(p->command, "unknown option '%s'", word);
}

int kt_opt_next(kt_opt_parser *p, const kt_option **opt, const char **value)
{
    *opt = NULL;
    *value = NULL;
    if (p->i >= p->argc)
        return 0;
    const char *word = p->argv[p->i++];
    if (!p->options_done && strcmp(word, "--") == 0) {
        p->options_done = 1;
        return kt_opt_next(p, opt, value);
    }
    if (p->options_done || word[0] != '-' || word[1] == '\0') {
        *value = word;
        return 1;
    }
    size_t n;
    const kt_option *rows = kt_options_of(p->command, &n);
    const char *eq = strncmp(word, "--", 2) == 0 ? strchr(word, '=') : NULL;
    const kt_option *o = find(rows, n, word, eq ? (size_t)(eq - word) : strlen(word));
    if (!o) {
        unknown(p, rows, n, word);
        return -1;
    }
    if (!o->arg && eq) {
        kt_usage_error(p->command, "'%s' takes no value", o->name);
        return -1;
    }
    if (o->arg && !eq && p->i >= p->argc) {
        kt_usage_error(p->command, "'%s' needs %s", o->name, o->arg);
        return -1;
    }
    *opt = o;
    if (o->arg)
        *value = eq ? eq + 1 : p->argv[p->i++];
    if (o->arg && !**value) { /* '--junit ""' would fail only after the whole run */
        kt_usage_error(p->command, "'%s' needs a value (%s), not an empty string", o->name, o->arg);
        return -1;
    }
    return 1;
}

int kt_opt_check_choice(const char *command, const char *option, const char *value,
                        const char *const *choices, size_t n)
{
    char list[256] = "";
    for (size_t i = 0; i < n; i++) {
        if (strcmp(value, choices[i]) == 0)
            return 0;
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                 choices[i]);
    }
    const char *guess = kt_suggest(value, choices, n);
    if (guess)
        return kt_usage_error(command, "unknown value '%s' for '%s'; did you mean '%s'? (%s)",
                              value, option, guess, list);
    return kt_usage_error(command, "unknown value '%s' for '%s' (%s)", value, option, list);
}

int kt_opt_check_backend(const char *command, const char *value)
{
    const char *choices[16];
    size_t n = 0;
    for (int i = 0; i < kt_backend_name_count() && n + 1 < sizeof(choices) / sizeof(*choices); i++)
        choices[n++] = kt_backend_name_at(i);
    choices[n++] = "auto";
    return kt_opt_check_choice(command, "--backend", value, choices, n);
}

int kt_opt_parse_json_only(int *json, const char *command, int argc, char **argv)
{
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    int more;
    *json = 0;
    kt_opt_init(&p, command, argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (!kt_opt_is(opt, "--json"))
            return kt_usage_error(command, "unexpected argument '%s'", v);
        *json = 1;
    }
    return more < 0 ? KT_EXIT_USAGE : 0;
}
