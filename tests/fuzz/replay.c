/* replay.c - runs a fuzz target's LLVMFuzzerTestOneInput once on every file of the folders or
 * files named on the command line, without libFuzzer, so any compiler builds it and ctest
 * replays the seed corpora (and any crash input saved there) on every build, under the
 * sanitizers in CI's sanitizer stage. Exits 1 when a path cannot be read or nothing was
 * replayed; a crash or a sanitizer report fails on its own. */
#include "archive/archive.h"
#include "kernel.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    if (kt_read_file(&text, &len, path, (size_t)1 << 26) < 0) {
        fprintf(stderr, "replay: %s\n", kt_error_last());
        return -1;
    }
    /* an exact-size copy, so ASan sees a read past the input as libFuzzer would */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(text);
        return -1;
    }
    memcpy(exact, text, len);
    free(text);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    printf("replayed %s (%zu bytes)\n", path, len);
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file in 'dir', in name order; adds their count to *count. */
static int replay_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char **more = realloc(names, (n + 1) * sizeof(*names));
        if (!more || !(more[n] = malloc(strlen(dir) + strlen(e->d_name) + 2))) {
            names = more ? more : names;
            rc = -1;
            break;
        }
        names = more;
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), compare_names);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(names[i]) < 0)
                rc = -1;
            else
                (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int count = 0, rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            if (replay_dir(argv[i], &count) < 0)
                rc = 1;
        } else if (replay_file(argv[i]) < 0) {
            rc = 1;
        } else {
            count++;
        }
    }
    if (count == 0) {
        fprintf(stderr, "replay: no input replayed\n");
        return 1;
    }
    printf("%d inputs replayed\n", count);
    return rc;
}
