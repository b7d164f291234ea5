/* command_table.h - every ktrial command, once: its name, its positional arguments and its
 * one-line help, in the order 'ktrial --help' lists them. The list is expanded twice:
 * command_table.c makes of it the table that usage lines and the overview are printed from,
 * and main.c the dispatch table that calls cmd_NAME; so the option parser, which prints usage
 * lines, does not link to the commands it parses for; commands.h declares each cmd_NAME from
 * it. A new command is a row here, its cmd_NAME.c, and its options in options_table.c. */
#ifndef KT_COMMAND_TABLE_H
#define KT_COMMAND_TABLE_H

#include <stddef.h>

/* X(name, positional arguments, one-line help); the options come from options_table.c. */
#define KT_COMMAND_TABLE(X)                                                                        \
    X(run, "SPEC", "run an experiment, archive it, and exit with its verdict")                     \
    X(validate, "SPEC...", "check specs without running them")                                     \
    X(init, "", "print a commented starter spec that validates and runs (or write it with -o)")    \
    X(lock, "SPEC", "fix an experiment's limits before it runs: write SPEC.lock beside it")        \
    X(models, "", "list the model catalog")                                                        \
    X(kernels, "", "list ops, variants per backend, and their params (or what a plugin provides)") \
    X(show, "RESULT", "print the summary of an archived run")                                      \
    X(compare, "OLD NEW", "compare two runs of one experiment at two code states")                 \
    X(verify, "ARCHIVE...",                                                                        \
      "recompute an archive's seal, verdicts and decision from its files, and list what differs")  \
    X(merge, "SHARD_DIR...", "merge the shards of one run into one archive with one verdict")      \
    X(reproduce, "ARCHIVE",                                                                        \
      "rebuild an archive's recorded code state, run its spec again here, and compare the runs")   \
    X(slurm, "SPEC",                                                                               \
      "write (and submit) a Slurm job array that runs the shards, and a job that merges them")     \
    X(report, "RESULT...",                                                                         \
      "write a self-contained HTML report (tables, forest plot, distributions) of archives")       \
    X(history, "[RESULTS_DIR]",                                                                    \
      "an experiment's speedups across commits, with the changes marked")                          \
    X(env, "", "print the provenance a run would record")                                          \
    X(help, "[COMMAND]", "show help for ktrial or one command")

typedef struct kt_command {
    const char *name;
    const char *usage; /* the positional arguments: "SPEC..." */
    const char *help;  /* one line */
} kt_command;

/* The command called 'name', or NULL. */
const kt_command *kt_command_find(const char *name);

/* Every command, in the table's order (*n of them). */
const kt_command *kt_commands(size_t *n);

#endif
