/* fork_pipe.c - fork a child that reports through a pipe. */
#include "fork_pipe.h"
#include "kernel.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int kt_fork_pipe(pid_t *pid, int *fd, const char *what)
{
    int fds[2];
    if (pipe(fds) != 0)
        return kt_error_set("cannot create a pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        return kt_error_set("cannot fork %s: %s", what, strerror(err));
    }
    /* the child dies with its parent: nobody reads its pipe then, and a kernel hung in it
     * would otherwise run on (a parent killed by SIGTERM or SIGKILL, not only Ctrl-C) */
    if (child == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent))
        _exit(1);
    setpgid(child, child); /* in both, so that neither runs ahead of it */
    /* the child answers through the pipe; what the kernel code it runs prints goes to stderr,
     * so ktrial's stdout carries ktrial's output alone (run --json) */
    if (child == 0)
        dup2(STDERR_FILENO, STDOUT_FILENO);
    close(child == 0 ? fds[0] : fds[1]);
    *fd = child == 0 ? fds[1] : fds[0];
    *pid = child;
    return 0;
}

int kt_fork_pipe_ended(pid_t pid)
{
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

int kt_fork_pipe_wait(pid_t pid)
{
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    /* the child is a zombie now, so its group id is still its own: nothing else has it */
    kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}
