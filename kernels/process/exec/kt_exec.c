/* kt_exec.c - the exec helper of the process backend: 'kt_exec COMMAND ARGS...' runs the
 * command as its own child and reports on fd 3 what that child alone cost, so that a command's
 * peak RSS is its own and not ktrial's.
 *
 * Linux folds the high-water mark of the address space that exec replaces into the new
 * program's peak RSS (ru_maxrss), and a process keeps that figure across exec: a command
 * spawned by ktrial directly reads at least ktrial's own peak (166 MiB in a CUDA build). This
 * helper is small: ktrial spawns it, it forks (the child's address space is a copy of the
 * helper's, a few hundred KiB, and a new process starts with no folded peak), the child execs
 * the command, and wait4 gives the command's own rusage. It then writes one line to fd 3,
 *   ok WALL_NS USER_US SYS_US MAXRSS_KIB FLOOR_KIB
 * (the command's wall time from fork to reaped; FLOOR_KIB the helper's resident set at fork,
 * the least any peak can read) or 'exec-failed ERRNO', and exits as the command did (killed
 * by a signal: by the same signal). It links nothing but libc and never allocates. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPORT_FD 3

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* This process's resident set in KiB (the second field of /proc/self/statm, in pages). */
static long resident_kib(void)
{
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    long size = 0, resident = -1;
    if (sscanf(buf, "%ld %ld", &size, &resident) != 2)
        return -1;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: kt_exec COMMAND [ARGS...] (started by ktrial; reports on fd 3)\n", stderr);
        return 64;
    }
    fcntl(REPORT_FD, F_SETFD, FD_CLOEXEC); /* the command never sees the report pipe */
    long floor_kib = resident_kib();
    long long start = mono_ns();
    pid_t pid = fork();
    if (pid < 0) {
        dprintf(REPORT_FD, "exec-failed %d\n", errno);
        return 127;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        dprintf(REPORT_FD, "exec-failed %d\n", errno);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR)
            return 127;
    long long wall = mono_ns() - start;
    dprintf(REPORT_FD, "ok %lld %lld %lld %ld %ld\n", wall,
            (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
            (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, ru.ru_maxrss,
            floor_kib);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit none = {0, 0}; /* the command dumped its core, if any: not this helper */
        setrlimit(RLIMIT_CORE, &none);
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        return 128 + sig;
    }
    return WEXITSTATUS(status);
}
