/*
 * test_machine.c - bench/machine.c: the git state a run records (revision,
 * dirty, branch or tag or the CI's ref), read from a repository made here
 * with git init and one commit; a directory that is not a checkout; no git
 * on PATH; a git that hangs, bounded. Skipped, saying so, without git.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "testutil.h"
#include "vyre/bench.h"

static char g_tmp[512];
static char g_repo[600];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_repo, sizeof g_repo, "%s/repo", g_tmp);
    /* The test's own CI must not fill in the ref. */
    unsetenv("GITHUB_REF_NAME");
    unsetenv("CI_COMMIT_REF_NAME");
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(machine_git, .init = setup, .fini = teardown);

static void need_git(void)
{
    if (system("git --version >/dev/null 2>&1") != 0)
        cr_skip_test("git is not installed: the git state a run records is not tested");
}

/* Runs "git -C repo <args>" through sh; cr_assert on failure. */
static void git(const char *args)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd,
             "git -C '%s' -c user.name=vyre-test -c user.email=test@invalid "
             "-c commit.gpgsign=false -c tag.gpgsign=false %s >/dev/null 2>&1",
             g_repo, args);
    cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

/* A repository on branch "trunk" with one commit of file f. */
static void make_repo(void)
{
    cr_assert_eq(mkdir(g_repo, 0700), 0);
    git("init -q");
    git("symbolic-ref HEAD refs/heads/trunk");
    char f[700];
    snprintf(f, sizeof f, "%s/f", g_repo);
    tu_write_file(f, "one\n", 4);
    git("add f");
    git("commit -q -m one");
}

/* What git itself says HEAD is, abbreviated as the run records it. */
static void head_short(char *out, size_t size)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse --short=12 HEAD", g_repo);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    cr_assert_not_null(fgets(out, (int)size, p));
    pclose(p);
    out[strcspn(out, "\n")] = '\0';
}

Test(machine_git, revision_branch_and_dirty)
{
    need_git();
    make_repo();
    char want[64];
    head_short(want, sizeof want);
    cr_assert_eq(strlen(want), 12);
    vyre_bench_git g;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_git_state(g_repo, &g, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(g.rev, want);
    cr_assert_eq(g.dirty, 0);
    cr_assert_str_eq(g.ref, "trunk");

    /* An untracked file is not a change; a modified tracked one is. */
    char f[700];
    snprintf(f, sizeof f, "%s/new", g_repo);
    tu_write_file(f, "x\n", 2);
    cr_assert_eq(vyre_bench_git_state(g_repo, &g, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(g.dirty, 0, "untracked files do not make a tree dirty");
    snprintf(f, sizeof f, "%s/f", g_repo);
    tu_write_file(f, "two\n", 4);
    cr_assert_eq(vyre_bench_git_state(g_repo, &g, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(g.rev, want);
    cr_assert_eq(g.dirty, 1);
}

/* Detached: the tag HEAD stands on, else the CI's ref name, else "". */
Test(machine_git, detached_head_tag_then_ci_ref)
{
    need_git();
    make_repo();
    git("checkout -q --detach");
    vyre_bench_git g;
    vyre_error e;
    cr_assert_eq(vyre_bench_git_state(g_repo, &g, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(g.ref, "");
    cr_assert_neq(g.rev[0], '\0');
    git("tag v1.2");
    cr_assert_eq(vyre_bench_git_state(g_repo, &g, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(g.ref, "v1.2");
    git("tag -d v1.2");
    setenv("CI_COMMIT_REF_NAME", "from-gitlab", 1);
    cr_assert_eq(vyre_bench_git_state(g_repo, &g, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(g.ref, "from-gitlab");
    setenv("GITHUB_REF_NAME", "from-github", 1);
    cr_assert_eq(vyre_bench_git_state(g_repo, &g, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(g.ref, "from-github", "GitHub's name is asked first");
}

Test(machine_git, not_a_checkout_is_empty_not_an_error)
{
    need_git();
    vyre_bench_git g;
    memset(&g, 'x', sizeof g);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_git_state(g_tmp, &g, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(g.rev, "");
    cr_assert_str_eq(g.ref, "");
    cr_assert_eq(g.dirty, 0);
}

Test(machine_git, no_git_on_path)
{
    setenv("PATH", g_tmp, 1); /* an empty folder */
    vyre_bench_git g;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_git_state(NULL, &g, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "no 'git' on PATH '"), "%s", e.message);
    cr_assert_str_eq(g.rev, "");
    cr_assert_eq(vyre_bench_git_state(NULL, NULL, &e), VYRE_EINVAL);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A git that never answers (a hung network filesystem): the call comes
 * back after its time limit (5 s), long before the 60 s the fake sleeps. */
Test(machine_git, a_hung_git_is_bounded, .timeout = 40)
{
    char fake[700];
    snprintf(fake, sizeof fake, "%s/git", g_tmp);
    static const char script[] = "#!/bin/sh\nexec /bin/sleep 60\n";
    tu_write_file(fake, script, sizeof script - 1);
    cr_assert_eq(chmod(fake, 0700), 0);
    setenv("PATH", g_tmp, 1);
    vyre_bench_git g;
    vyre_error e;
    vyre_error_clear(&e);
    double t0 = now_s();
    cr_assert_eq(vyre_bench_git_state(NULL, &g, &e), VYRE_EIO);
    double took = now_s() - t0;
    cr_assert(strstr(e.message, "did not finish in 5000 ms"), "%s", e.message);
    cr_assert_lt(took, 30.0, "took %.1f s", took);
    cr_assert_str_eq(g.rev, "");
}
