/*
 * tutmux.c - see tutmux.h.
 */
#include "tutmux.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

int tu_tmux_find(char *out, size_t size)
{
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, size, "%.*s/tmux", (int)n, p); /* bounded: a $PATH entry */
        if (n && access(out, X_OK) == 0)
            return 1;
        p += n;
        if (*p == ':')
            p++;
    }
    return 0;
}

char *tu_tmux_run(const char *tmux, const char *sock, const char *tmpdir, int *code,
                  const char *const *args)
{
    char *argv[24];
    int n = 0;
    argv[n++] = (char *)(uintptr_t)tmux;
    argv[n++] = (char *)(uintptr_t) "-L";
    argv[n++] = (char *)(uintptr_t)sock;
    argv[n++] = (char *)(uintptr_t) "-f";
    argv[n++] = (char *)(uintptr_t) "/dev/null";
    for (int i = 0; args[i] && n < 23; i++)
        argv[n++] = (char *)(uintptr_t)args[i];
    argv[n] = NULL;
    char out[700];
    snprintf(out, sizeof out, "%s/tmux.out", tmpdir);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int in = open("/dev/null", O_RDWR);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (in < 0 || fd < 0)
            _exit(126);
        dup2(in, 0);
        dup2(fd, 1);
        dup2(in, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (code)
        *code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    char *text = tu_read_file(out, NULL);
    return text ? text : strdup("");
}
