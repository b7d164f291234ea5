/* plugin.c - loading plugins: a probe in a throwaway child process, then dlopen here.
 *
 * The probe runs everything that loading runs (the library's constructors, the ABI check,
 * kt_plugin_init and the checks of what it registers) in a forked child, so a plugin that
 * crashes or hangs while loading is reported as an error with the stage it died in. Only a
 * plugin whose probe succeeded is opened in this process; the per-point workers are forked
 * from it and inherit the mapping, so kernels run (and crash) only in workers. A library is
 * never unloaded: the registry keeps pointers into it. */
#include "fork_pipe.h"
#include "plugin_internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef KT_HOST_VERSION
#define KT_HOST_VERSION "unknown"
#endif

/* A probe that has not answered after this long is killed and the plugin refused. */
#define PROBE_TIMEOUT_S 30

static int reg_add_op(kt_plugin_registrar *r, const kt_op *op)
{
    return kt_plugin_check_op(r->host, op);
}

static int reg_add_variant(kt_plugin_registrar *r, const kt_variant *v)
{
    return kt_plugin_check_variant(r->host, v);
}

/* The first 'len' bytes of 'path' into 'out'; how many were read, or -1. */
static long read_head(const char *path, void *out, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(out, 1, len, f);
    fclose(f);
    return (long)n;
}

static const char *machine_name(unsigned machine)
{
    switch (machine) {
    case EM_X86_64:
        return "x86-64";
    case EM_AARCH64:
        return "aarch64";
    case EM_PPC64:
        return "ppc64";
    case EM_RISCV:
        return "riscv";
    case EM_S390:
        return "s390";
    default:
        return "another architecture";
    }
}

/* Refuses what dlopen would misreport: not an ELF file, not a shared library, or one built
 * for another architecture (glibc says "No such file or directory" of that). */
static int check_elf(const char *path)
{
    Elf64_Ehdr eh, host;
    long n = read_head(path, &eh, sizeof(eh));
    if (n < 0)
        return kt_error_code(KT_EIO, "cannot open: %s", strerror(errno));
    if (n < EI_NIDENT || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
        return kt_error_code(KT_EINVAL, "not an ELF shared library (no ELF header)");
    if ((size_t)n < sizeof(eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_DYN)
        return kt_error_code(KT_EINVAL, "an ELF file but not a 64-bit shared library (build it "
                                        "with -shared -fPIC)");
    if (read_head("/proc/self/exe", &host, sizeof(host)) == (long)sizeof(host) &&
        eh.e_machine != host.e_machine)
        return kt_error_code(KT_EINVAL,
                             "built for %s (ELF machine %u); this ktrial runs on %s (rebuild "
                             "it for this machine)",
                             machine_name(eh.e_machine), (unsigned)eh.e_machine,
                             machine_name(host.e_machine));
    return KT_OK;
}

static void say(int fd, const char *what, const char *text)
{
    char line[640];
    int n = snprintf(line, sizeof(line), "%s %s\n", what, text);
    if (fd >= 0 && n > 0 &&
        write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
        return; /* the parent is gone */
}

static int abi_error(uint32_t abi)
{
    return kt_error_code(KT_EINVAL,
                         "built for plugin ABI %u.%u; this ktrial speaks %u.%u (rebuild it "
                         "against this ktrial's ktrial/plugin.h)",
                         abi >> 16, abi & 0xffff, (unsigned)KT_PLUGIN_ABI_MAJOR,
                         (unsigned)KT_PLUGIN_ABI_MINOR);
}

/* dlopen, ABI check, kt_plugin_init. Stages go to 'fd' (the probe's pipe; -1 when none). */
static int open_and_init(const char *path, kt_plugin_host *h, uint32_t *abi_out, int fd)
{
    say(fd, "stage", "load");
    dlerror();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return kt_error_code(KT_EINVAL, "cannot load: %s", dlerror());
    int (*init)(kt_plugin_registrar *) =
        (int (*)(kt_plugin_registrar *))dlsym(lib, "kt_plugin_init");
    const uint32_t *abi = dlsym(lib, "kt_plugin_abi_version");
    if (!init)
        return kt_error_code(KT_EINVAL, "does not export kt_plugin_init (define 'int "
                                        "kt_plugin_init(kt_plugin_registrar *r)')");
    if (!abi)
        return kt_error_code(KT_EINVAL, "has no kt_plugin_abi_version: it was not compiled with "
                                        "ktrial/plugin.h");
    *abi_out = *abi;
    if (*abi >> 16 != KT_PLUGIN_ABI_MAJOR || (*abi & 0xffff) > KT_PLUGIN_ABI_MINOR)
        return abi_error(*abi);
    kt_plugin_registrar r = {
        KT_PLUGIN_ABI_VERSION, KT_HOST_VERSION, path, reg_add_op, reg_add_variant, h};
    say(fd, "stage", "init");
    kt_error_clear();
    int rc = init(&r);
    if (h->error[0])
        return kt_error_code(KT_EINVAL, "%s", h->error);
    if (rc != 0) {
        char why[400];
        snprintf(why, sizeof(why), "%s", kt_error_last()[0] ? kt_error_last() : "(no message)");
        return kt_error_code(KT_EINVAL, "kt_plugin_init returned %d: %s", rc, why);
    }
    if (h->n_ops + h->n_variants == 0)
        return kt_error_code(KT_EINVAL, "kt_plugin_init registered no op and no variant");
    return KT_OK;
}

static void child_probe(int fd, const char *path)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
        sigaction(fatal[i], &sa, NULL);
    kt_plugin_host h;
    memset(&h, 0, sizeof(h));
    h.path = path;
    uint32_t abi = 0;
    if (open_and_init(path, &h, &abi, fd) < 0) {
        say(fd, "error", kt_error_last());
        _exit(1);
    }
    _exit(0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads the probe's lines until it exits; keeps the last stage and error. */
static int read_probe(int fd, pid_t pid, char *stage, size_t stage_len, char *error,
                      size_t error_len)
{
    char buf[2048];
    size_t len = 0;
    double start = now_s();
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int ready = poll(&pfd, 1, 250);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0 && kt_fork_pipe_ended(pid))
            return 0; /* a process kt_plugin_init forked holds the pipe */
        if (ready == 0) {
            if (now_s() - start > PROBE_TIMEOUT_S) {
                kill(pid, SIGKILL);
                return 1;
            }
            continue;
        }
        ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        len += (size_t)n;
        buf[len] = '\0';
        char *nl;
        while ((nl = strchr(buf, '\n')) != NULL) {
            *nl = '\0';
            if (strncmp(buf, "stage ", 6) == 0)
                snprintf(stage, stage_len, "%s", buf + 6);
            else if (strncmp(buf, "error ", 6) == 0)
                snprintf(error, error_len, "%s", buf + 6);
            len -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, len + 1);
        }
        if (len == sizeof(buf) - 1)
            len = 0; /* an overlong line: drop it */
    }
}

static int probe(const char *path)
{
    pid_t pid;
    int fd;
    int rc = kt_fork_pipe(&pid, &fd, "to probe the plugin");
    if (rc < 0)
        return rc;
    if (pid == 0)
        child_probe(fd, path);
    char stage[32] = "start-up", error[600] = "";
    int hung = read_probe(fd, pid, stage, sizeof(stage), error, sizeof(error));
    close(fd);
    int status = kt_fork_pipe_wait(pid);
    const char *where = strcmp(stage, "init") == 0 ? "in kt_plugin_init" : "while loading";
    if (hung)
        return kt_error_code(KT_EINVAL, "no answer %s after %d s; killed", where, PROBE_TIMEOUT_S);
    if (WIFSIGNALED(status))
        return kt_error_code(KT_EINVAL, "crashed %s with signal %d (%s)", where, WTERMSIG(status),
                             strsignal(WTERMSIG(status)));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return kt_error_code(KT_EINVAL, "%s", error[0] ? error : "the probe failed");
    return KT_OK;
}

int kt_plugin_load(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return kt_error_code(KT_EIO, "cannot open: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return kt_error_code(KT_EINVAL, "not a regular file");
    int known = kt_plugin_table_find(&st);
    if (known >= 0)
        return known;
    /* the probe and the load open the same file: a name without a '/' given to dlopen
     * would be looked up in the library path instead */
    char real[PATH_MAX];
    if (!realpath(path, real))
        return kt_error_code(KT_EIO, "cannot resolve the path: %s", strerror(errno));
    int err = check_elf(real);
    if (err < 0 || (err = probe(real)) < 0)
        return err;
    kt_plugin_host *h = calloc(1, sizeof(*h));
    if (!h)
        return kt_error_code(KT_ENOMEM, "out of memory");
    h->path = real;
    uint32_t abi = 0;
    /* the probe passed, so this succeeds unless the file changed in between; what the
     * library's constructors and kt_plugin_init print goes to stderr, as in a worker */
    fflush(stdout);
    int saved_stdout = dup(STDOUT_FILENO);
    if (saved_stdout >= 0)
        dup2(STDERR_FILENO, STDOUT_FILENO);
    err = open_and_init(real, h, &abi, -1);
    fflush(stdout);
    if (saved_stdout >= 0) {
        dup2(saved_stdout, STDOUT_FILENO);
        close(saved_stdout);
    }
    if (err < 0) {
        free(h);
        return err;
    }
    int index = kt_plugin_table_add(real, &st, abi);
    if (index < 0) {
        free(h);
        return index;
    }
    for (int i = 0; i < h->n_ops && err == KT_OK; i++)
        if (!h->op_shadowed[i])
            err = kt_registry_add_op(h->ops[i], index);
    for (int i = 0; i < h->n_variants && err == KT_OK; i++)
        err = kt_registry_add_variant(h->variants[i], index);
    free(h); /* the copies it holds now belong to the registry */
    return err < 0 ? err : index;
}
