/* slurm_jobs.h - the Slurm jobs of a sharded run: a job array with one task per shard
 * ('ktrial run --shard auto') and a job that runs 'ktrial merge' once every task has succeeded
 * (--dependency=afterok), written as shards.sbatch and merge.sbatch in the run folder, and
 * submitted with sbatch. */
#ifndef KT_RUN_SLURM_JOBS_H
#define KT_RUN_SLURM_JOBS_H

#include "spec/spec.h"

#include <stddef.h>
#include <stdio.h>

typedef struct kt_slurm_jobs {
    const kt_spec *spec;
    const char *partition, *time_limit; /* NULL: the cluster's default */
    const char *backend;                /* what the jobs pass as --backend (NULL: the spec's) */
    int shards, gpus_per_task, cpus_per_task;
    const char *run_dir, *spec_abs, *exe; /* absolute: the jobs run on other nodes */
} kt_slurm_jobs;

/* Writes shards.sbatch and merge.sbatch into j->run_dir (and creates its logs/). 0 or -1,
 * message set. */
int kt_slurm_write_jobs(const kt_slurm_jobs *j);

/* Prints both scripts to 'f', each under a "# PATH" line (--dry-run). */
void kt_slurm_print_jobs(FILE *f, const kt_slurm_jobs *j);

/* Submits the array, then the merge job after it. 0, or the exit code after printing the
 * error (and how to cancel the array when only the merge job failed). */
int kt_slurm_submit(const char *run_dir, int shards);

/* An absolute form of 'path' (which may not exist yet): realpath of its existing folder. */
void kt_slurm_absolute(char *out, size_t len, const char *path);

/* 'name' as the jobs will run it: a name with a '/' made absolute, a bare name looked up in
 * PATH as a shell would; a program not found is written as given, with a warning. */
void kt_slurm_resolve_program(char *out, size_t len, const char *name);

#endif
