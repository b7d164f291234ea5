/* reproduce.h - 'ktrial reproduce ARCHIVE': the recorded code state rebuilt and the archived
 * spec run again on this machine, then the two runs compared.
 *
 * reproduce.c: the steps. The archive's commit and git.diff are checked out into a temporary
 * folder (archive/reproduce_tree.h), configured with the recorded build options (build type,
 * KT_MARCH, CUDA or not, sanitizers) and built (the ktrial target only, -j bounded by the
 * cores, at most 8); that ktrial runs the archived spec.yaml (its seeds are in the spec, and
 * the rerun checks them against provenance.run.seeds) with the recorded backend, --quick and
 * shard. reproduce_compare.c: the two runs side by side. */
#ifndef KT_RUN_REPRODUCE_H
#define KT_RUN_REPRODUCE_H

#include "result/run.h"

#include <cjson/cJSON.h>
#include <stdio.h>

typedef struct kt_reproduce_options {
    const char *archive; /* the run folder (or its result.json) to reproduce */
    const char *out_dir; /* the rerun's archive; NULL: results/<stamp>-<name>-reproduced */
    int keep;            /* keep the temporary tree and build */
} kt_reproduce_options;

/* Reproduces the archive as the header says: progress on stderr, the outcome and the machine
 * and library differences on stdout. Returns the exit code: 0 reproduced, 1 the runs differ,
 * 65 refused (no commit recorded or known, a capped or edited diff), 70 the build or the rerun
 * failed, 74 an I/O error. */
int kt_reproduce(const kt_reproduce_options *o);

/* Prints what differs between the archived run 'a' and its rerun 'b': points or candidates in
 * one only, verdicts that differ, speedups outside the other run's interval. Returns their
 * number (0: reproduced). */
size_t kt_reproduce_differences(FILE *out, const kt_run_result *a, const kt_run_result *b);

/* Prints "  host.cpu_model: A -> B" for each machine, build and device fact of provenance
 * that differs between result documents 'a' and 'b'. Returns their number. */
size_t kt_reproduce_machine_differences(FILE *out, const cJSON *a, const cJSON *b);

#endif
