/* facts.h - what bounds a run's verdict beside its results (how it was decided, how whole the
 * run is), and the overall line's words every writer prints the same. */
#ifndef KT_REPORT_FACTS_H
#define KT_REPORT_FACTS_H

#include "decide/aggregate.h"

#include <stdio.h>

/* What the summary says beside the results: how they were decided and how whole the run is. */
typedef struct kt_summary_facts {
    const char *baseline_name;
    const char *aggregate; /* "all" | "geomean" */
    double min_speedup;
    double confidence;  /* the run's, for p (adj.) and the legend */
    const char *status; /* result.json's: "complete", "interrupted", "over_budget", "running" */
    int quick;          /* --quick capped repetitions at quick_max_repetitions */
    int quick_max_repetitions;
    int shard_index, shard_count;   /* 1/1 for a whole run */
    const char *const *not_run_ids; /* points of this run never started (may be NULL) */
    size_t n_not_run;               /* their number, also when the ids are unknown */
    int color;                      /* colour the verdicts (kt_summary_want_color) */
    /* op command: the metric the samples are of (NULL or "wall": times), and whether higher
     * is better (the samples are then 1e9 / value) */
    const char *metric;
    int metric_higher;
    /* the checks every call got (provenance.checks.line; NULL: not known, not printed) */
    const char *checks;
} kt_summary_facts;

/* Facts for a complete whole run decided by 'aggregate' at 'min_speedup' and 'confidence'. */
void kt_summary_facts_init(kt_summary_facts *f, const char *baseline_name, const char *aggregate,
                           double min_speedup, double confidence);

/* Whether verdicts written to 'out' get colour: a terminal, NO_COLOR unset or empty, and TERM
 * set and not "dumb". */
int kt_summary_want_color(FILE *out);

/* The word of the overall line: INTERRUPTED for an interrupted run, UNFINISHED for one whose
 * result.json still says running (in progress, or killed), else the verdict over the
 * measured points, INCONCLUSIVE rather than KEEP while some points were not run. A shard's
 * is its own, not the experiment's ('whole' facts tell them apart). */
const char *kt_summary_overall(const kt_run_result *run, const kt_summary_facts *facts);

/* Whether the run stopped before its end: interrupted, or still 'running' in result.json (a
 * run in progress, or one killed; 'show' prints the points it finished). */
int kt_summary_stopped(const kt_summary_facts *facts);

/* The overall line without its "overall: " and colour: returns its word (the verdict, or
 * INTERRUPTED) and writes the rest to 'buf' ("over 4 points (min_speedup 1.05, aggregate
 * all)", "after 1 of 3 points; no verdict for the experiment (...)"); the report prints both. */
const char *kt_summary_overall_text(char *buf, size_t len, const kt_run_result *run,
                                    const kt_summary_facts *facts);
/* The word and the text of candidate 'k''s line: its verdict and reason, or, for a run that
 * stopped (interrupted, still running), the run's state and what its points decided ("decided
 * at 1 of 3 points (...); no verdict over the experiment"), never a bare verdict. */
const char *kt_summary_candidate_text(char *buf, size_t len, const kt_run_result *run, size_t k,
                                      const kt_summary_facts *f);

/* Facts of an archived run from its result.json 'doc' (status, --quick, shard, points not
 * run, the decision's aggregate, min_speedup and confidence); the strings point into 'doc'. */
void kt_summary_facts_from_doc(kt_summary_facts *f, const struct cJSON *doc);

/* The metric of a command run from its result.json 'parsed' spec (spec.parsed.command), so
 * that the medians show as that metric's values; times otherwise. */
void kt_summary_facts_metric(kt_summary_facts *f, const struct cJSON *parsed);

#endif
