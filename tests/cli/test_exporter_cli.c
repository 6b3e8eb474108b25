/*
 * test_exporter_cli.c - vyre-exporter's start-up messages: a telemetry
 * directory that does not exist is named in a warning, and a listen address
 * it cannot bind says why (the errno text) with a hint.
 *
 * Each run holds a loopback port taken by a listening socket of the test,
 * so the exporter stops right after its start-up checks (exit 2) and the
 * test needs no server of its own to stop.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "vyre/vyre.h"

#ifndef VYRE_EXPORTER_BIN
#error "tests/CMakeLists.txt must define VYRE_EXPORTER_BIN"
#endif

static char g_dir[512];
static int g_fd = -1;
static unsigned g_port;

/* A loopback port held by a listening socket until teardown. */
static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    g_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(g_fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(g_fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(g_fd, 1), 0);
    socklen_t l = sizeof a;
    cr_assert_eq(getsockname(g_fd, (struct sockaddr *)&a, &l), 0);
    g_port = ntohs(a.sin_port);
}

static void teardown(void)
{
    if (g_fd >= 0)
        close(g_fd);
    g_fd = -1;
    tu_rm_rf(g_dir);
}

TestSuite(exporter_cli, .init = setup, .fini = teardown, .timeout = 60);

/* The exporter on the held port with telemetry directory tel. */
static void run_on_taken_port(tu_proc *p, const char *tel)
{
    char listen_at[64];
    snprintf(listen_at, sizeof listen_at, "127.0.0.1:%u", g_port);
    const char *args[] = {"--web.listen-address", listen_at, "--telemetry.dir", tel, "--no-gpu",
                          "--no-cache",           NULL};
    tu_run_bin(p, VYRE_EXPORTER_BIN, args, NULL, NULL);
}

Test(exporter_cli, taken_port_names_the_errno)
{
    tu_proc p;
    run_on_taken_port(&p, g_dir);
    char want[128];
    snprintf(want, sizeof want,
             "vyre-exporter: error: cannot listen on '127.0.0.1:%u': Address already in use",
             g_port);
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    cr_assert(tu_has_line(p.err, want), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "\nhint: another process holds port"), "stderr: %s", p.err);
    cr_assert_null(strstr(p.err, "warning"), "an existing directory is no warning: %s", p.err);
    tu_proc_free(&p);
}

/* The spellings before the tools agreed still parse for one release, each
 * with a one-line note naming the new one (the exporter goes on to its
 * listen error, so both were taken). */
Test(exporter_cli, old_spellings_parse_with_a_note)
{
    char listen_at[64];
    snprintf(listen_at, sizeof listen_at, "127.0.0.1:%u", g_port);
    const char *args[] = {"--web.listen-address",   listen_at, "--cache.dir", g_dir,
                          "--cache-usage.interval", "5",       "--no-gpu",    NULL};
    tu_proc p;
    tu_run_bin(&p, VYRE_EXPORTER_BIN, args, NULL, NULL);
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    cr_assert(tu_has_line(p.err, "vyre-exporter: note: '--cache.dir' is now '--cache-dir'; the old "
                                 "spelling goes in the next release"),
              "stderr: %s", p.err);
    cr_assert(tu_has_line(p.err, "vyre-exporter: note: '--cache-usage.interval' is now "
                                 "'--cache-usage-interval'; the old spelling goes in the next "
                                 "release"),
              "stderr: %s", p.err);
    cr_assert(strstr(p.err, "cannot listen on"), "the options were taken: %s", p.err);
    tu_proc_free(&p);
}

Test(exporter_cli, missing_telemetry_dir_is_named)
{
    char tel[600];
    snprintf(tel, sizeof tel, "%s/no-such-dir", g_dir);
    tu_proc p;
    run_on_taken_port(&p, tel);
    char want[800];
    snprintf(want, sizeof want,
             "vyre-exporter: warning: telemetry directory '%s' (--telemetry.dir) does not "
             "exist: no process is exported until it holds pages",
             tel);
    cr_assert(tu_has_line(p.err, want), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "\nhint: instrumented processes publish into"), "stderr: %s", p.err);
    tu_proc_free(&p);

    /* A file where the directory should be. */
    tu_write_file(tel, "x", 1);
    run_on_taken_port(&p, tel);
    snprintf(want, sizeof want,
             "vyre-exporter: warning: telemetry directory '%s' (--telemetry.dir) is not a "
             "directory: no process is exported until it holds pages",
             tel);
    cr_assert(tu_has_line(p.err, want), "stderr: %s", p.err);
    tu_proc_free(&p);
}

/* --help and the man page name the cache root the exporter reads when
 * --cache-dir is not given: libcore's default, .../vyre/ptx-cache (they
 * said $XDG_CACHE_HOME/vyre, and following them exported an empty cache). */
Test(exporter_cli, cache_dir_default_is_the_one_read)
{
    char xdg[600], env_xdg[700], root[700];
    snprintf(xdg, sizeof xdg, "%s/xdg", g_dir);
    snprintf(env_xdg, sizeof env_xdg, "XDG_CACHE_HOME=%s", xdg);
    const char *env[] = {env_xdg, "VYRE_PTX_CACHE_DIR", NULL};
    tu_env saved;
    const char *names[] = {"XDG_CACHE_HOME", "VYRE_PTX_CACHE_DIR"};
    tu_env_save(&saved, names, 2);
    setenv("XDG_CACHE_HOME", xdg, 1);
    unsetenv("VYRE_PTX_CACHE_DIR");
    cr_assert_eq(vyre_cache_default_root(root, sizeof root, NULL), 0);
    tu_env_restore(&saved);
    char want[800];
    snprintf(want, sizeof want, "%s/vyre/ptx-cache", xdg);
    cr_assert_str_eq(root, want, "libcore's default moved: update the help and the man page");

    const char *args[] = {"--help", NULL};
    tu_proc p;
    tu_run_bin(&p, VYRE_EXPORTER_BIN, args, env, NULL);
    cr_assert_eq(p.exit_code, 0);
    cr_assert(strstr(p.out, "else $XDG_CACHE_HOME/vyre/ptx-cache"), "%s", p.out);
    tu_proc_free(&p);
    size_t n = 0;
    char *man = tu_read_file(VYRE_TEST_SOURCE_DIR "/../docs/man/vyre-exporter.1", &n);
    cr_assert_not_null(man);
    cr_assert(strstr(man, ".BR $XDG_CACHE_HOME/vyre/ptx\\-cache"), "man page");
    free(man);
}
