/* options_table.c - every command's options with their help: the one table from which
 * 'ktrial COMMAND --help' is printed and each command's arguments are parsed. A new option is
 * a row here and a branch in its command's parse loop; tests/cli/test_help.py checks that
 * every row appears in the command's help. */
#include "cli/options.h"

#include <string.h>

static const kt_option table[] = {
    /* run */
    {"run", "--output", "-o", "DIR",
     "write the archive's files into DIR itself, a new or empty folder (default: a new folder "
     "results/<stamp>-<name>-<sha>/)"},
    {"run", "--backend", NULL, "NAME",
     "cpu, cuda, sim, process or auto: run on this backend instead of the spec's"},
    {"run", "--quick", NULL, NULL,
     "cap repetitions for a fast look; verdicts may stay INCONCLUSIVE where a full run decides"},
    {"run", "--resume", NULL, "DIR",
     "continue an interrupted or over-budget run in DIR, measuring only its missing points"},
    {"run", "--shard", NULL, "I/N|auto",
     "measure every N-th point from the I-th (auto: from the Slurm array task); 'merge' forms "
     "the verdict"},
    {"run", "--require-clean", NULL, NULL, "refuse a dirty git work tree (exit 65), for gating"},
    {"run", "--force", NULL, NULL,
     "run a plan over budget.max_minutes, go on past it, and resume a changed spec"},
    {"run", "--json", NULL, NULL, "print result.json to stdout instead of the summary"},
    {"run", "--profile", NULL, NULL,
     "run the profiling pass even where trials.profile is off (cuda: CUPTI counters, NVML "
     "energy)"},
    {"run", "--no-profile", NULL, NULL,
     "skip the profiling pass (counters, energy) after the pairs"},
    {"run", "--relock", NULL, NULL,
     "run a spec that no longer matches its SPEC.lock, locking its new limits (recorded)"},
    {"run", "--report", NULL, NULL, "write report.html into the archive"},
    {"run", "--junit", NULL, "FILE", "write a JUnit XML file of the verdicts, for CI"},
    {"run", "--markdown", NULL, "FILE", "write a markdown summary, for CI (GITHUB_STEP_SUMMARY)"},
    {"run", "--csv", NULL, "FILE", "write the verdicts as CSV, a row per point and candidate"},
    /* validate */
    {"validate", "--plan", NULL, NULL,
     "print each point's estimated time, the total, and whether it fits the budget"},
    {"validate", "--backend", NULL, "NAME",
     "cpu, cuda, sim, process or auto: check the spec as if run on this backend"},
    {"validate", "--json", NULL, NULL,
     "print one JSON document: per spec ok or not, its problems (file, line, col, path, "
     "message), and with --plan the plan"},
    /* init */
    {"init", "--op", NULL, "OP",
     "the op of the spec: attention_decode (default), gemm, swiglu_mlp, decoder_layer, "
     "synthetic, command or service"},
    {"init", "--model", NULL, "M", "the model of a kernel op's shapes (default llama-3.2-1b)"},
    {"init", "--command", NULL, NULL, "a command trial: two programs, a process per call"},
    {"init", "--service", NULL, NULL, "a service trial: two servers, paired requests"},
    {"init", "--output", "-o", "FILE", "write the spec to FILE (a new file) instead of stdout"},
    /* lock */
    {"lock", "--check", NULL, NULL,
     "write nothing: exit 0 when the spec matches its lock, 65 naming the changed keys"},
    /* models */
    {"models", "--json", NULL, NULL, "print the catalog as a JSON document"},
    /* kernels */
    {"kernels", "--backend", NULL, "NAME", "list only this backend's variants"},
    {"kernels", "--plugin", NULL, "PATH",
     "load a plugin library and list what it provides (repeatable)"},
    {"kernels", "--op", NULL, "OP",
     "list only this op, with its tensors: name, order, shape, layout, dtype"},
    {"kernels", "--json", NULL, NULL, "print backends, ops, variants and params as JSON"},
    /* show */
    {"show", "--json", NULL, NULL,
     "print the run's status, exit code, quick and shard facts, whole-run verdict and points as "
     "JSON"},
    {"show", "--force", NULL, NULL,
     "show an archive that fails verification, with the verdicts its pairs give"},
    {"show", "--junit", NULL, "FILE", "write a JUnit XML file of the verdicts"},
    {"show", "--markdown", NULL, "FILE", "write a markdown summary"},
    {"show", "--csv", NULL, "FILE", "write the verdicts as CSV, a row per point and candidate"},
    /* compare */
    {"compare", "--threshold", NULL, "F",
     "the change of speedup that counts, as a fraction in [0, 1) (default 0.01)"},
    {"compare", "--confidence", NULL, "C",
     "the confidence of the intervals, in (0, 1) (default 0.95)"},
    {"compare", "--force", NULL, NULL,
     "compare runs whose specs or plugins differ, or that fail verification"},
    {"compare", "--json", NULL, NULL, "print the comparison as JSON"},
    /* verify */
    {"verify", "--quiet", NULL, NULL,
     "print only the problems, nothing for an archive that agrees"},
    /* reproduce */
    {"reproduce", "--output", "-o", "DIR",
     "the rerun's archive (default: a new folder results/<stamp>-<name>-reproduced/)"},
    {"reproduce", "--keep", NULL, NULL,
     "keep the temporary tree, its build and the logs (printed at the end)"},
    /* merge */
    {"merge", "--output", "-o", "DIR", "the folder of the merged archive (required)"},
    {"merge", "--force", NULL, NULL,
     "merge shards whose spec bytes or code commit differ, or that fail verification"},
    {"merge", "--json", NULL, NULL, "print the merged result.json instead of the summary"},
    /* slurm */
    {"slurm", "--shards", NULL, "N",
     "the number of array tasks, one shard each (default: the points, at most 8)"},
    {"slurm", "--partition", NULL, "P", "the Slurm partition"},
    {"slurm", "--gpus-per-task", NULL, "GPUS",
     "GPUs per task (default 1 for cuda, and for auto in a CUDA build; else 0)"},
    {"slurm", "--cpus-per-task", NULL, "CPUS", "CPUs per task"},
    {"slurm", "--time", NULL, "T", "the time limit of each task (Slurm's format, 02:00:00)"},
    {"slurm", "--output", "-o", "DIR",
     "the run folder: job scripts, logs, shards and the merged archive (default under results/)"},
    {"slurm", "--ktrial", NULL, "PATH", "the ktrial program the jobs run (default: this one)"},
    {"slurm", "--submit", NULL, NULL, "submit the jobs with sbatch"},
    {"slurm", "--dry-run", NULL, NULL, "print the scripts without writing or submitting them"},
    /* report */
    {"report", "--output", "-o", "FILE",
     "the HTML file to write (default: report.html in the one archive, else here)"},
    {"report", "--force", NULL, NULL,
     "report archives that fail verification, with the verdicts their pairs give"},
    /* history */
    {"history", "--experiment", NULL, "NAME",
     "the experiment (its spec's name) to follow (required)"},
    {"history", "--output", "-o", "FILE",
     "write the history as an HTML chart to FILE instead of printing it"},
    {"history", "--json", NULL, NULL, "print the history as JSON"},
    /* env */
    {"env", "--json", NULL, NULL, "print the provenance as JSON"},
};

const kt_option *kt_options_of(const char *command, size_t *n)
{
    const kt_option *first = NULL;
    *n = 0;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(table[i].command, command) == 0) {
            if (!first)
                first = &table[i];
            (*n)++;
        }
    return first;
}
