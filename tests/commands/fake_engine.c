/* fake_engine.c - a stand-in for a serving engine's benchmark binary, for the command-trial
 * tests (tests/cli/test_command.py). Every behaviour is chosen by a flag:
 *   --sleep-ms MS        take this long (wall time)
 *   --out PATH --n N     write N values: sin(i + 1) + --perturb X, as --format f32|f64|text|json
 *   --metric NAME --value V   print {"metric": NAME, "value": V} on stdout (and a noise line)
 *   --exit CODE          exit with CODE after a line on stderr
 *   --segv               die of SIGSEGV;  --hang: sleep forever (with a child that does too)
 *   --fail-at R --rep R2 fail (exit 4) when R == R2 (with {repetition}: inside the pairs)
 *   --log PATH --tag T   append T (and the values of --env-name's variable) to PATH
 *   --args PATH          write every argument, one per line, to PATH
 * Unknown flags are an error (exit 2), so a test cannot pass by a typo. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000.0) * 1e6)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int write_output(const char *path, const char *format, long n, double perturb)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    if (strcmp(format, "json") == 0) { /* numbers nested in a document, with other fields */
        fprintf(f, "{\"model\": \"fake\", \"tokens\": %ld, \"logits\": [", n);
        for (long i = 0; i < n; i++)
            fprintf(f, "%s[%.9g]", i ? ", " : "", sin((double)i + 1.0) + perturb);
        fprintf(f, "]}\n");
        return fclose(f);
    }
    for (long i = 0; i < n; i++) {
        double v = sin((double)i + 1.0) + perturb;
        if (strcmp(format, "f32") == 0) {
            float x = (float)v;
            fwrite(&x, 4, 1, f);
        } else if (strcmp(format, "f64") == 0) {
            fwrite(&v, 8, 1, f);
        } else {
            fprintf(f, "token %ld: %.6f\n", i, v);
        }
    }
    return fclose(f);
}

int main(int argc, char **argv)
{
    const char *out = NULL, *format = "f32", *metric = NULL, *log = NULL, *tag = "", *args = NULL,
               *env_name = NULL;
    double sleep = 0, perturb = 0, value = 0;
    long n = 16, fail_at = -1, rep = -2;
    int exit_code = 0, segv = 0, hang = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int has = v != NULL;
        if (strcmp(a, "--segv") == 0)
            segv = 1;
        else if (strcmp(a, "--hang") == 0)
            hang = 1;
        else if (!has)
            return fprintf(stderr, "fake_engine: '%s' needs a value\n", a), 2;
        else if (strcmp(a, "--sleep-ms") == 0)
            sleep = atof(v), i++;
        else if (strcmp(a, "--out") == 0)
            out = v, i++;
        else if (strcmp(a, "--n") == 0)
            n = atol(v), i++;
        else if (strcmp(a, "--format") == 0)
            format = v, i++;
        else if (strcmp(a, "--perturb") == 0)
            perturb = atof(v), i++;
        else if (strcmp(a, "--metric") == 0)
            metric = v, i++;
        else if (strcmp(a, "--value") == 0)
            value = atof(v), i++;
        else if (strcmp(a, "--exit") == 0)
            exit_code = atoi(v), i++;
        else if (strcmp(a, "--fail-at") == 0)
            fail_at = atol(v), i++;
        else if (strcmp(a, "--rep") == 0)
            rep = atol(v), i++;
        else if (strcmp(a, "--log") == 0)
            log = v, i++;
        else if (strcmp(a, "--tag") == 0)
            tag = v, i++;
        else if (strcmp(a, "--env-name") == 0)
            env_name = v, i++;
        else if (strcmp(a, "--args") == 0)
            args = v, i++;
        else
            return fprintf(stderr, "fake_engine: unknown flag '%s'\n", a), 2;
    }
    if (args) {
        FILE *f = fopen(args, "w");
        for (int i = 0; f && i < argc; i++)
            fprintf(f, "%s\n", argv[i]);
        if (f)
            fclose(f);
    }
    if (log) {
        FILE *f = fopen(log, "a");
        char cwd[4096];
        if (f) {
            fprintf(f, "%s", tag);
            if (env_name)
                fprintf(f, " %s=%s", env_name, getenv(env_name) ? getenv(env_name) : "(unset)");
            fprintf(f, " cwd=%s\n", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
            fclose(f);
        }
    }
    if (hang) {
        if (fork() == 0) /* a grandchild in the same process group, killed with it */
            for (;;)
                pause();
        for (;;)
            pause();
    }
    if (segv) {
        /* the default action, so that a sanitizer build's handler cannot turn the death into
         * an exit status */
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    if (fail_at >= 0 && fail_at == rep) {
        fprintf(stderr, "fake_engine: failing at repetition %ld as asked\n", rep);
        return 4;
    }
    if (exit_code) {
        fprintf(stderr, "fake_engine: exiting %d as asked\n", exit_code);
        return exit_code;
    }
    sleep_ms(sleep);
    if (out && write_output(out, format, n, perturb) != 0)
        return fprintf(stderr, "fake_engine: cannot write '%s'\n", out), 5;
    printf("fake_engine: done\n");
    if (metric) {
        printf("{\"metric\": \"rss_estimate\", \"value\": 12}\n");
        printf("{\"metric\": \"%s\", \"value\": %.17g}\n", metric, value);
    }
    return 0;
}
