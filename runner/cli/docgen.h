/* docgen.h - the man page ktrial(1) and the shell completion scripts, printed from the command
 * and option tables (docgen.c). */
#ifndef KT_DOCGEN_H
#define KT_DOCGEN_H

#include <stdio.h>

/* Prints ktrial(1) in roff: every command of command_table.h with its options. */
void kt_docgen_man(FILE *out);

/* Prints the completion script of 'shell' ("bash" or "zsh"); -1 for another shell. */
int kt_docgen_completion(FILE *out, const char *shell);

#endif
