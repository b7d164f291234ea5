/* options.h - the table of every command's options, the one source from which '--help' is
 * printed, arguments are parsed, and unknown options get a "did you mean". */
#ifndef KT_OPTIONS_H
#define KT_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

typedef struct kt_option {
    const char *command; /* "run" */
    const char *name;    /* "--quick" */
    const char *alias;   /* "-o", or NULL */
    const char *arg;     /* "DIR" for an option that takes a value, NULL for a flag */
    const char *help;    /* what it does, one or two lines */
} kt_option;

/* The rows of 'command' (a pointer into the static table, *n of them; none: NULL). */
const kt_option *kt_options_of(const char *command, size_t *n);

/* Prints the "options:" block of 'command' (its rows, then -h/--help) to 'out'. */
void kt_options_print(FILE *out, const char *command);

typedef struct kt_opt_parser {
    const char *command;
    int argc, i;
    char **argv;
    int options_done; /* after "--" every word is positional */
} kt_opt_parser;

/* Walks argv[1..argc) of 'command'. */
void kt_opt_init(kt_opt_parser *p, const char *command, int argc, char **argv);

/* The next argument: returns 1 with *opt its row and *value its value ("--name VALUE" or
 * "--name=VALUE"; NULL for a flag), or with *opt NULL and *value the word for a positional
 * argument; 0 when argv is used up; -1 after printing a usage error to stderr (an option the
 * table does not have, with the closest one as "did you mean", or one missing its value). */
int kt_opt_next(kt_opt_parser *p, const kt_option **opt, const char **value);

/* Whether the command needs option 'o' (its help ends "(required)"): its usage line shows
 * it without brackets. */
int kt_opt_required(const kt_option *o);

/* Whether row 'o' is the option named 'name' ("--json"). */
int kt_opt_is(const kt_option *o, const char *name);

/* 0 when 'value' of 'option' is one of 'choices'; else prints a usage error naming the
 * choices and the closest one ("did you mean"), and returns KT_EXIT_USAGE. */
int kt_opt_check_choice(const char *command, const char *option, const char *value,
                        const char *const *choices, size_t n);

/* The parse of a command whose one option is --json: 0 with *json set, or the usage error's
 * exit code after printing it. */
int kt_opt_parse_json_only(int *json, const char *command, int argc, char **argv);

/* kt_opt_check_choice for '--backend': the registry's backend names (those this build left out
 * too: running says why they cannot run), then auto. */
int kt_opt_check_backend(const char *command, const char *value);

#endif
