/*
 * lockholder.c - see lockholder.h.
 */
#include "lockholder.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

void tu_lock_hold(tu_lockholder *h, const char *path)
{
    int ready[2], go[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(go), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(ready[0]);
        close(go[1]);
        sqlite3 *db = NULL;
        char ok = 'n';
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
            sqlite3_exec(db,
                         "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE; "
                         "SELECT count(*) FROM sqlite_master",
                         NULL, NULL, NULL) == SQLITE_OK)
            ok = 'y';
        if (write(ready[1], &ok, 1) != 1)
            _exit(3);
        char c;
        while (read(go[0], &c, 1) > 0) /* until the test closes its end */
            ;
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(db);
        _exit(ok == 'y' ? 0 : 2);
    }
    close(ready[1]);
    close(go[0]);
    char ok = 0;
    cr_assert_eq(read(ready[0], &ok, 1), 1);
    close(ready[0]);
    h->pid = pid;
    h->release_fd = go[1];
    cr_assert_eq(ok, 'y', "the lock holder could not lock '%s'", path);
}

void tu_lock_release(tu_lockholder *h)
{
    if (h->pid <= 0)
        return;
    close(h->release_fd);
    int st = 0;
    waitpid(h->pid, &st, 0);
    h->pid = 0;
}
