/* fork_pipe.h - a child process that reports to its parent through a pipe (the plugin probe and
 * the measuring worker both run this way). */
#ifndef KT_FORK_PIPE_H
#define KT_FORK_PIPE_H

#include <sys/types.h>

/* Flushes stdio and forks a child joined to the parent by a pipe; the child gets SIGKILL
 * when the parent dies, and leads a process group of its own, so that what the kernel code
 * in it forks can be found and ended with it (kt_fork_pipe_wait). A Ctrl-C at the terminal
 * reaches ktrial alone: the parent forwards it or dies of it (and the child with it). In the
 * parent '*pid' is the child's pid and '*fd' the pipe's read end; in the child '*pid' is 0 and
 * '*fd' the write end. Returns 0, or a negative code with "cannot fork <what>" set when
 * nothing was forked. */
int kt_fork_pipe(pid_t *pid, int *fd, const char *what);

/* 1 when the child has ended (it is not reaped): a process it forked may still hold the pipe
 * open, so a parent that waits for the pipe's end of file asks this too. */
int kt_fork_pipe_ended(pid_t pid);

/* Waits for the child to end, kills what is left of its process group (processes the kernel
 * code forked), reaps the child and returns its wait status (0 when it cannot be had). */
int kt_fork_pipe_wait(pid_t pid);

#endif
