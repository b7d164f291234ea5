/* fork_pipe.h - a child process that reports to its parent through a pipe (the plugin probe and
 * the measuring worker both run this way). */
#ifndef KT_FORK_PIPE_H
#define KT_FORK_PIPE_H

#include <sys/types.h>

/* Flushes stdio and forks a child joined to the parent by a pipe; the child gets SIGKILL
 * when the parent dies. In the parent '*pid' is the
 * child's pid and '*fd' the pipe's read end; in the child '*pid' is 0 and '*fd' the write end.
 * Returns 0, or a negative code with "cannot fork <what>" set when nothing was forked. */
int kt_fork_pipe(pid_t *pid, int *fd, const char *what);

#endif
