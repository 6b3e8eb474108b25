/*
 * test_servers.c - the test servers' own promise (tests/common/servers.h):
 * a server goes when the test process that started it goes, whatever the
 * path, so a test killed by its timeout leaves nothing running.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "servers.h"
#include "testutil.h"

TestSuite(servers, .timeout = 120);

/* 1 while pid runs (a zombie has ended: nobody may reap an orphan). */
static int running(pid_t pid)
{
    char path[64], state = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fscanf(f, "%*d (%*[^)]) %c", &state) == 1;
    fclose(f);
    return ok && state != 'Z' && state != 'X';
}

/* Under root the server runs as another user, and a change of user clears
 * the parent-death signal: 19 postgres outlived their killed tests so. */
Test(servers, a_killed_test_process_takes_its_postgres_with_it)
{
    glob_t g;
    int have = glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    const char *ci = getenv("CI");
    if (!have && !(ci && strcmp(ci, "true") == 0))
        cr_skip_test("PostgreSQL's server is not installed (/usr/lib/postgresql/*/bin)");
    int fds[2];
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0); /* the server must not hold it open */
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        ts_server s;
        ts_postgres_start(&s);
        dprintf(fds[1], "%d %s\n", (int)s.pid, s.dir);
        raise(SIGKILL); /* no exit handler runs, as under a timeout */
    }
    close(fds[1]);
    char line[1200] = "";
    size_t len = 0;
    ssize_t r;
    while (len < sizeof line - 1 && (r = read(fds[0], line + len, sizeof line - 1 - len)) > 0)
        len += (size_t)r;
    line[len] = '\0';
    close(fds[0]);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    int server = 0;
    char dir[1100] = "";
    cr_assert_eq(sscanf(line, "%d %1099s", &server, dir), 2, "no server started: '%s'", line);
    int alive = 1;
    for (int i = 0; i < 500 && (alive = running(server)); i++) {
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (alive)
        kill(server, SIGKILL);
    tu_rm_rf(dir);
    cr_assert(!alive, "postgres %d outlived the test process that started it", server);
}
