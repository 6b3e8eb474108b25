/*
 * subprocess.c - fork, execve, one pipe, wait (see subprocess.h).
 *
 * The environment is built in the parent, and an exec failure comes back
 * through a second, close-on-exec pipe (the child writes its errno there;
 * a successful exec closes it empty), so that between fork and exec the
 * child only calls dup2, fcntl, open, close, execve, write and _exit.
 */
#include "base/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"

extern char **environ;

/* environ with env_set applied; the array is malloc'ed, the strings are
 * borrowed. NULL when out of memory. */
static char **child_environ(const char *const *env_set)
{
    size_t nenv = 0, nset = 0;
    while (environ && environ[nenv])
        nenv++;
    while (env_set && env_set[nset])
        nset++;
    char **envp = calloc(nenv + nset + 1, sizeof *envp);
    if (!envp)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < nenv; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        int replaced = 0;
        for (size_t j = 0; j < nset && !replaced; j++)
            replaced = strncmp(env_set[j], environ[i], len) == 0 && env_set[j][len] == '=';
        if (!replaced)
            envp[n++] = environ[i];
    }
    for (size_t j = 0; j < nset; j++)
        envp[n++] = (char *)(uintptr_t)env_set[j];
    envp[n] = NULL;
    return envp;
}

static void close_pair(int fd[2])
{
    close(fd[0]);
    close(fd[1]);
}

/* In the child: puts the pipe's write end on target, keeping it open
 * across exec, and closes the other descriptors of both pipes. */
static void child_setup_fd(int out[2], int target)
{
    if (out[1] == target)
        fcntl(target, F_SETFD, 0);
    else
        dup2(out[1], target); /* dup2 clears close-on-exec on target */
    if (out[0] != target)
        close(out[0]);
    if (out[1] != target)
        close(out[1]);
}

/* Reads the child's output from fd into buf (cut to size - 1, the rest
 * drained) until the child closes it, or until timeout_ms (when > 0) have
 * passed: then returns 1. buf is always terminated. */
static int read_child(int fd, char *buf, size_t size, int timeout_ms)
{
    uint64_t deadline = timeout_ms > 0 ? vyre__mono_ns() + (uint64_t)timeout_ms * 1000000u : 0;
    size_t got = 0;
    int timed_out = 0;
    for (;;) {
        if (deadline) {
            uint64_t now = vyre__mono_ns();
            struct pollfd p = {fd, POLLIN, 0};
            int pr = now >= deadline ? 0 : poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr == 0) {
                timed_out = 1;
                break;
            }
        }
        char junk[256];
        int full = got + 1 >= size;
        ssize_t r = full ? read(fd, junk, sizeof junk) : read(fd, buf + got, size - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (!full)
            got += (size_t)r;
    }
    buf[got] = '\0';
    return timed_out;
}

int vyre__subprocess_run(const vyre__subprocess *sp, char *buf, size_t size, int *status,
                         vyre_error *err)
{
    if (!sp || !sp->path || !sp->argv || !buf || !size || !status || sp->out_fd < 0)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__subprocess_run: bad arguments");
    buf[0] = '\0';
    *status = -1;
    char **envp = child_environ(sp->env_set);
    if (!envp)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot run '%s': out of memory", sp->path);
    int out[2], exec_err[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        int e = errno;
        free(envp);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot run '%s': pipe: %s", sp->path,
                          strerror(e));
    }
    if (pipe2(exec_err, O_CLOEXEC) != 0) {
        int e = errno;
        close_pair(out);
        free(envp);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot run '%s': pipe: %s", sp->path,
                          strerror(e));
    }
    /* The exec error pipe must not sit on the target descriptor. */
    if (exec_err[1] == sp->out_fd) {
        int moved = fcntl(exec_err[1], F_DUPFD_CLOEXEC, sp->out_fd + 1);
        close(exec_err[1]);
        exec_err[1] = moved;
    }
    pid_t pid = exec_err[1] < 0 ? -1 : fork();
    if (pid < 0) {
        int e = errno;
        close_pair(out);
        close(exec_err[0]);
        if (exec_err[1] >= 0)
            close(exec_err[1]);
        free(envp);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot run '%s': fork: %s", sp->path,
                          strerror(e));
    }
    if (pid == 0) {
        close(exec_err[0]);
        child_setup_fd(out, sp->out_fd);
        if (sp->null_stderr && sp->out_fd != 2) {
            int dn = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (dn >= 0)
                dup2(dn, 2); /* dup2 clears close-on-exec on 2 */
        }
        execve(sp->path, sp->argv, envp);
        int e = errno;
        ssize_t w = write(exec_err[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    free(envp);
    close(out[1]);
    close(exec_err[1]);

    int timed_out = read_child(out[0], buf, size, sp->timeout_ms);
    close(out[0]);
    if (timed_out)
        kill(pid, SIGKILL);

    int exec_errno = 0;
    ssize_t r;
    while ((r = read(exec_err[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
        continue;
    close(exec_err[0]);

    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        continue;
    if (timed_out)
        return vyre__fail(err, VYRE_EIO, "check what it waits for", "'%s' did not finish in %d ms",
                          sp->path, sp->timeout_ms);
    if (r == (ssize_t)sizeof exec_errno)
        return vyre__fail(err, vyre__errno_code(exec_errno),
                          exec_errno == ENOENT ? "check the path" : NULL, "cannot run '%s': %s",
                          sp->path, strerror(exec_errno));
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return VYRE_OK;
}
