/*
 * test_top_procfs.c - libcore's /proc reader (vyre/proc.h: vyre-top and the
 * exporter name processes through it) on hostile content (a comm with
 * spaces and parentheses, files cut short, missing fields, NUL and control
 * bytes), reading a fake /proc tree, CPU% from tick deltas, a process's
 * start time and environment (never "unset" when it cannot be read), and
 * vyre-top's rule for who may be sent SIGTERM.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace/proc_internal.h"
#include "vyre/proc.h"
#include "terminate.h"
#include "testutil.h"

/* A real stat line (kernel 6.x) with a hostile comm: 52 fields. */
#define STAT_TAIL                                                                                  \
    " S 1 4242 4242 0 -1 4194560 1197 0 3 0 "                                                      \
    "250 75 0 0 20 0 1 0 987654 10502144 1024 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 "        \
    "0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n"

static int parse(const char *text, vyre_proc_stat *st)
{
    return vyre__proc_parse_stat(text, strlen(text), st);
}

Test(top_procfs, stat_with_a_hostile_comm)
{
    vyre_proc_stat st;
    cr_assert_eq(parse("4242 (python3)" STAT_TAIL, &st), 0);
    cr_assert_str_eq(st.comm, "python3");
    cr_assert_eq(st.state, 'S');
    cr_assert_eq(st.utime_ticks, 250);
    cr_assert_eq(st.stime_ticks, 75);
    cr_assert_eq(st.start_ticks, 987654);
    /* Spaces and parentheses in the comm: the last ')' closes it, and the
     * fields are still counted from there. */
    cr_assert_eq(parse("4242 (a) (b c) S 1)" STAT_TAIL, &st), 0);
    cr_assert_str_eq(st.comm, "a) (b c) S 1");
    cr_assert_eq(st.utime_ticks, 250);
    cr_assert_eq(st.start_ticks, 987654);
    cr_assert_eq(parse("4242 ())" STAT_TAIL, &st), 0);
    cr_assert_str_eq(st.comm, ")");
    cr_assert_eq(parse("4242 ()" STAT_TAIL, &st), 0);
    cr_assert_str_eq(st.comm, "");
    /* Control bytes (a newline, an escape) become '?'. */
    cr_assert_eq(parse("4242 (x\n\033[31my)" STAT_TAIL, &st), 0);
    cr_assert_str_eq(st.comm, "x??[31my");
    /* A NUL inside the comm does not end the parse early: n bytes count. */
    char nul[512];
    int len = snprintf(nul, sizeof nul, "4242 (a_b)" STAT_TAIL);
    nul[7] = '\0';
    cr_assert_eq(vyre__proc_parse_stat(nul, (size_t)len, &st), 0);
    cr_assert_str_eq(st.comm, "a?b");
    cr_assert_eq(st.start_ticks, 987654);
    /* A comm longer than the buffer is cut, not overflowed. */
    char big[1024];
    memset(big, 'x', sizeof big);
    len = snprintf(big, sizeof big, "1 (%0200d)" STAT_TAIL, 7);
    cr_assert_eq(vyre__proc_parse_stat(big, (size_t)len, &st), 0);
    cr_assert_eq(strlen(st.comm), VYRE_PROC_COMM_MAX - 1);
}

Test(top_procfs, truncated_or_malformed_stat_is_refused)
{
    vyre_proc_stat st;
    const char *full = "4242 (python3)" STAT_TAIL;
    size_t n = strlen(full);
    /* Every cut before the field after the start time fails: the start time
     * "987654" cut to "98" must not be read as 98. */
    const char *after = strstr(full, "987654 ") + 7;
    for (size_t cut = 0; cut < (size_t)(after - full); cut++) {
        st.utime_ticks = 1;
        cr_assert_eq(vyre__proc_parse_stat(full, cut, &st), -1, "cut at %zu parsed", cut);
        cr_assert_eq(st.utime_ticks, 0, "a refused parse leaves zeros");
    }
    cr_assert_eq(vyre__proc_parse_stat(full, (size_t)(after - full) + 1, &st), 0);
    cr_assert_eq(vyre__proc_parse_stat(full, n, &st), 0);
    cr_assert_eq(parse("", &st), -1);
    cr_assert_eq(parse("4242 python3 S 1 2 3", &st), -1, "no parentheses");
    cr_assert_eq(parse("4242 )python3(" STAT_TAIL, &st), -1, "reversed");
    cr_assert_eq(
        parse("4242 (p) S 1 4242 4242 0 -1 4194560 1197 0 3 0 x 75 0 0 20 0 1 0 9 1 2\n", &st), -1,
        "utime not a number");
    cr_assert_eq(
        parse("4242 (p) SS 1 4242 4242 0 -1 4194560 1197 0 3 0 1 75 0 0 20 0 1 0 9 1 2\n", &st), -1,
        "state of two letters");
    cr_assert_eq(parse("4242 (p) S 1 4242 4242 0 -1 4194560 1197 0 3 0 1 75 0 0 20 0 1 0 "
                       "99999999999999999999999 1 2\n",
                       &st),
                 -1, "start time beyond 64 bits");
    cr_assert_eq(vyre__proc_parse_stat(NULL, 10, &st), -1);
}

Test(top_procfs, statm_status_and_cmdline)
{
    uint64_t pages = 0;
    const char *statm = "2564 1024 512 1 0 300 0\n";
    cr_assert_eq(vyre__proc_parse_statm(statm, strlen(statm), &pages), 0);
    cr_assert_eq(pages, 1024);
    cr_assert_eq(vyre__proc_parse_statm(statm, 7, &pages), -1, "cut inside the resident count");
    cr_assert_eq(vyre__proc_parse_statm(statm, 5, &pages), -1);
    cr_assert_eq(vyre__proc_parse_statm("12 -3 4\n", 8, &pages), -1);
    cr_assert_eq(vyre__proc_parse_statm("", 0, &pages), -1);

    uint32_t uid = 0;
    const char *status = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\n"
                         "Uid:\t1000\t1001\t1002\t1003\nGid:\t100\t100\t100\t100\n";
    cr_assert_eq(vyre__proc_parse_uid(status, strlen(status), &uid), 0);
    cr_assert_eq(uid, 1000, "the real uid, not the effective one");
    const char *cut = strstr(status, "1000") + 2;
    cr_assert_eq(vyre__proc_parse_uid(status, (size_t)(cut - status), &uid), -1,
                 "cut inside the uid");
    const char *no_uid = "Name:\tx\nUidx:\t5\t5\n";
    cr_assert_eq(vyre__proc_parse_uid(no_uid, strlen(no_uid), &uid), -1);
    const char *bad = "Uid:\t-1\t0\t0\t0\n";
    cr_assert_eq(vyre__proc_parse_uid(bad, strlen(bad), &uid), -1);
    const char *huge = "Uid:\t99999999999\t0\t0\t0\n";
    cr_assert_eq(vyre__proc_parse_uid(huge, strlen(huge), &uid), -1);

    char cmd[32];
    static const char args[] = "python3\0train.py\0--lr\0\x1b[2J\0";
    vyre__proc_cmdline(args, sizeof args - 1, cmd, sizeof cmd);
    cr_assert_str_eq(cmd, "python3 train.py --lr ?[2J");
    vyre__proc_cmdline(args, sizeof args - 1, cmd, 8);
    cr_assert_str_eq(cmd, "python3", "cut to fit");
    vyre__proc_cmdline("", 0, cmd, sizeof cmd);
    cr_assert_str_eq(cmd, "", "kernel threads have none");
    vyre__proc_cmdline("\0\0", 2, cmd, sizeof cmd);
    cr_assert_str_eq(cmd, "");
}

Test(top_procfs, cpu_percent_of_one_core)
{
    cr_assert_float_eq(vyre_proc_cpu_pct(100, 150, 100, 1.0), 50.0, 1e-9);
    cr_assert_float_eq(vyre_proc_cpu_pct(100, 500, 100, 1.0), 400.0, 1e-9, "four busy threads");
    cr_assert_float_eq(vyre_proc_cpu_pct(0, 0, 100, 2.0), 0.0, 1e-9);
    cr_assert(isnan(vyre_proc_cpu_pct(150, 100, 100, 1.0)), "ticks going back: unknown");
    cr_assert(isnan(vyre_proc_cpu_pct(100, 150, 100, 0)), "no interval: unknown");
    cr_assert(isnan(vyre_proc_cpu_pct(100, 150, 0, 1.0)));
}

static void write_file(const char *dir, const char *name, const char *text, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(text, 1, n, f), n);
    fclose(f);
}

Test(top_procfs, reads_a_process_tree)
{
    char root[512], dir[600];
    tu_mkdtemp(root, sizeof root);
    snprintf(dir, sizeof dir, "%s/4242", root);
    cr_assert_eq(mkdir(dir, 0700), 0);
    const char *stat = "4242 (my (odd) job)" STAT_TAIL;
    write_file(dir, "stat", stat, strlen(stat));
    write_file(dir, "statm", "10 3 1 1 0 2 0\n", 15);
    const char *status = "Name:\tx\nUid:\t0\t0\t0\t0\n";
    write_file(dir, "status", status, strlen(status));
    write_file(dir, "cmdline", "a\0b c\0", 6);
    vyre_proc_info hp;
    vyre_proc_reader *r = NULL;
    cr_assert_eq(vyre_proc_reader_new(root, &r, NULL), VYRE_OK);
    cr_assert_eq(vyre_proc_read(r, 4242, &hp, NULL), VYRE_OK);
    cr_assert(hp.stat_valid);
    cr_assert_str_eq(hp.st.comm, "my (odd) job");
    cr_assert(hp.rss_valid);
    cr_assert_eq(hp.rss_bytes, 3ull * (uint64_t)sysconf(_SC_PAGESIZE));
    cr_assert(hp.uid_valid);
    cr_assert_eq(hp.uid, 0);
    cr_assert_str_eq(hp.user, "root");
    char cmd[64];
    vyre_proc_read_cmdline(r, 4242, cmd, sizeof cmd);
    cr_assert_str_eq(cmd, "a b c");
    /* statm and status cut short: those fields unknown, stat still read. */
    write_file(dir, "statm", "10 3", 4);
    write_file(dir, "status", "Name:\tx\nUid:\t12", 15);
    cr_assert_eq(vyre_proc_read(r, 4242, &hp, NULL), VYRE_OK);
    cr_assert_not(hp.rss_valid);
    cr_assert_not(hp.uid_valid);
    cr_assert_str_eq(hp.user, "");
    /* A stat cut short: the process counts as unreadable. */
    write_file(dir, "stat", stat, 40);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_proc_read(r, 4242, &hp, &e), VYRE_ECORRUPT);
    cr_assert_not(hp.stat_valid);
    cr_assert(strstr(e.message, "/4242/stat' is not a whole stat line"), "%s", e.message);
    /* Gone, or not a pid. */
    cr_assert_eq(vyre_proc_read(r, 4243, &hp, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "/4243/stat'"), "%s", e.message);
    cr_assert_eq(vyre_proc_read(r, 0, &hp, NULL), VYRE_EINVAL);
    cr_assert_eq(vyre_proc_read(r, -5, &hp, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "not a process id: '-5'");
    vyre_proc_read_cmdline(r, 4243, cmd, sizeof cmd);
    cr_assert_str_eq(cmd, "");
    /* A uid without a name shows as its number. */
    write_file(dir, "stat", stat, strlen(stat));
    write_file(dir, "status", "Uid:\t3999999\t0\t0\t0\n", 20);
    cr_assert_eq(vyre_proc_read(r, 4242, &hp, NULL), VYRE_OK);
    cr_assert_str_eq(hp.user, "3999999");
    vyre_proc_reader_free(r);
    tu_rm_rf(root);
}

Test(top_procfs, user_names_are_cached)
{
    vyre__proc_users cache;
    memset(&cache, 0, sizeof cache);
    char name[VYRE_PROC_USER_MAX];
    vyre__proc_user(&cache, 0, name, sizeof name);
    cr_assert_str_eq(name, "root");
    cr_assert_eq(cache.n, 1);
    vyre__proc_user(&cache, 0, name, sizeof name);
    cr_assert_eq(cache.n, 1, "a hit adds nothing");
    /* More uids than slots: the oldest are replaced, answers stay right. */
    for (uint32_t u = 3999000; u < 3999000 + 2 * VYRE__PROC_USERS; u++) {
        vyre__proc_user(&cache, u, name, sizeof name);
        char want[16];
        snprintf(want, sizeof want, "%u", (unsigned)u);
        cr_assert_str_eq(name, want);
    }
    cr_assert_eq(cache.n, VYRE__PROC_USERS);
    vyre__proc_user(&cache, 0, name, sizeof name);
    cr_assert_str_eq(name, "root");
    vyre__proc_user(NULL, 0, name, sizeof name);
    cr_assert_str_eq(name, "root");
}

/* ---- environment and start time --------------------------------------- */

Test(top_procfs, environ_parse_finds_the_variable_and_nothing_else)
{
    static const char env[] = "PATH=/bin\0CUDA_VISIBLE_DEVICES_X=9\0CUDA_VISIBLE_DEVICES=0,1\0"
                              "CUDA_VISIBLE_DEVICES=7\0";
    vyre_proc_env e;
    vyre__proc_env_parse(env, sizeof env - 1, "CUDA_VISIBLE_DEVICES", &e);
    cr_assert_eq(e.state, VYRE_PROC_ENV_SET);
    cr_assert_str_eq(e.value, "0,1", "the first, as getenv, never a longer name's");
    cr_assert_not(e.cut);
    vyre__proc_env_parse(env, 10, "CUDA_VISIBLE_DEVICES", &e);
    cr_assert_eq(e.state, VYRE_PROC_ENV_UNSET);
    vyre__proc_env_parse("CUDA_VISIBLE_DEVICES=", 21, "CUDA_VISIBLE_DEVICES", &e);
    cr_assert_eq(e.state, VYRE_PROC_ENV_SET);
    cr_assert_str_eq(e.value, "");
    char big[200];
    int n = snprintf(big, sizeof big, "CUDA_VISIBLE_DEVICES=%0100d", 0);
    big[30] = '\n';
    vyre__proc_env_parse(big, (size_t)n, "CUDA_VISIBLE_DEVICES", &e);
    cr_assert_eq(e.state, VYRE_PROC_ENV_SET);
    cr_assert(e.cut);
    cr_assert_eq(strlen(e.value), VYRE_PROC_ENV_MAX - 1);
    cr_assert_eq(e.value[30 - 21], '?', "control bytes are never printed");
}

Test(top_procfs, environ_read_says_unreadable_never_unset)
{
    char root[512], path[700];
    tu_mkdtemp(root, sizeof root);
    snprintf(path, sizeof path, "%s/42", root);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/42/environ", root);
    tu_write_file(path, "HOME=/x\0CUDA_VISIBLE_DEVICES=GPU-1234\0", 38);
    snprintf(path, sizeof path, "%s/stat", root);
    static const char st[] = "cpu  1 2 3 4\nintr 5\nbtime 1700000000\nprocesses 9\n";
    tu_write_file(path, st, sizeof st - 1);
    vyre_proc_env e;
    vyre_proc_reader *r = NULL;
    cr_assert_eq(vyre_proc_reader_new(root, &r, NULL), VYRE_OK);
    vyre_proc_read_env(r, 42, "CUDA_VISIBLE_DEVICES", &e);
    cr_assert_eq(e.state, VYRE_PROC_ENV_SET);
    cr_assert_str_eq(e.value, "GPU-1234");
    vyre_proc_read_env(r, 43, "CUDA_VISIBLE_DEVICES", &e);
    cr_assert_eq(e.state, VYRE_PROC_ENV_UNREADABLE, "no file: not readable, not 'unset'");
    vyre_proc_read_env(r, 0, "CUDA_VISIBLE_DEVICES", &e);
    cr_assert_eq(e.state, VYRE_PROC_ENV_UNREADABLE);
    /* Opened, but a read that fails (as another user's environ does): not
     * an empty environment. */
    snprintf(path, sizeof path, "%s/44", root);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/44/environ", root);
    cr_assert_eq(mkdir(path, 0700), 0);
    vyre_proc_read_env(r, 44, "CUDA_VISIBLE_DEVICES", &e);
    cr_assert_eq(e.state, VYRE_PROC_ENV_UNREADABLE, "a failed read: not readable, not 'unset'");
    /* The start time: the boot time of <root>/stat, read once per reader. */
    long hz = sysconf(_SC_CLK_TCK);
    cr_assert_eq(vyre_proc_start_unix(r, 250), 1700000000.0 + 250.0 / (double)hz);
    double boot = 1700000000.0;
    cr_assert_eq(vyre__proc_start_unix(250, boot, 100), 1700000002.5);
    cr_assert(isnan(vyre__proc_start_unix(250, NAN, 100)));
    cr_assert(isnan(vyre__proc_start_unix(0, boot, 100)));
    cr_assert(isnan(vyre__proc_start_unix(250, boot, 0)));
    cr_assert(isnan(vyre_proc_start_unix(r, 0)));
    cr_assert(isnan(vyre_proc_start_unix(NULL, 250)));
    vyre_proc_reader_free(r);
    snprintf(path, sizeof path, "%s/stat", root);
    tu_write_file(path, "cpu 1 2\n", 8);
    cr_assert_eq(vyre_proc_reader_new(root, &r, NULL), VYRE_OK);
    cr_assert(isnan(vyre_proc_start_unix(r, 250)), "no btime line");
    vyre_proc_reader_free(r);
    char missing[700];
    snprintf(missing, sizeof missing, "%s/none", root);
    cr_assert_eq(vyre_proc_reader_new(missing, &r, NULL), VYRE_OK);
    cr_assert(isnan(vyre_proc_start_unix(r, 250)));
    vyre_proc_reader_free(r);
    tu_rm_rf(root);
}

/* ---- SIGTERM --------------------------------------------------------------- */

Test(top_terminate, only_your_own_processes_unless_root)
{
    cr_assert(top_may_signal(1000, 1000, 1000));
    cr_assert_not(top_may_signal(1000, 1000, 1001), "another user's process");
    cr_assert_not(top_may_signal(1000, 1000, 0), "root's process");
    cr_assert(top_may_signal(1000, 0, 1001), "root (effective) may");
    cr_assert(top_may_signal(0, 0, 1001));
}

Test(top_terminate, checks_the_process_is_still_the_one_shown)
{
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;)
            pause();
    }
    vyre_proc_info hp;
    vyre_proc_reader *r = NULL;
    cr_assert_eq(vyre_proc_reader_new(NULL, &r, NULL), VYRE_OK);
    cr_assert_eq(vyre_proc_read(r, child, &hp, NULL), VYRE_OK);
    vyre_proc_reader_free(r);
    char msg[160];
    /* Another start time: the pid was reused since the screen was drawn. */
    cr_assert_eq(top_terminate(NULL, child, hp.st.start_ticks + 1, msg, sizeof msg), -1);
    cr_assert(strstr(msg, "is now another process"), "%s", msg);
    int st = 0;
    cr_assert_eq(waitpid(child, &st, WNOHANG), 0, "nothing was sent");
    cr_assert_eq(top_terminate(NULL, child, hp.st.start_ticks, msg, sizeof msg), 0, "%s", msg);
    cr_assert(strstr(msg, "sent SIGTERM to"), "%s", msg);
    cr_assert_eq(waitpid(child, &st, 0), child);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status 0x%x", st);
    cr_assert_eq(top_terminate(NULL, child, hp.st.start_ticks, msg, sizeof msg), -1);
    cr_assert(strstr(msg, "has exited"), "%s", msg);
}

/* k's choice of signal (issue 37): SIGINT and SIGKILL reach the process as
 * SIGTERM does; any other signal is refused before anything is sent. */
Test(top_terminate, sends_the_signal_chosen_and_only_those_offered)
{
    static const int sigs[] = {SIGINT, SIGKILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        pid_t child = fork();
        cr_assert_geq(child, 0);
        if (child == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (;;)
                pause();
        }
        char msg[160];
        int st = 0;
        cr_assert_eq(top_signal(NULL, child, 0, SIGHUP, msg, sizeof msg), -1);
        cr_assert(strstr(msg, "not one vyre-top sends"), "%s", msg);
        cr_assert_eq(waitpid(child, &st, WNOHANG), 0, "nothing was sent");
        cr_assert_eq(top_signal(NULL, child, 0, sigs[i], msg, sizeof msg), 0, "%s", msg);
        cr_assert(strstr(msg, top_signal_name(sigs[i])), "%s", msg);
        cr_assert_eq(waitpid(child, &st, 0), child);
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i], "status 0x%x", st);
    }
    cr_assert_str_eq(top_signal_name(SIGTERM), "SIGTERM");
    cr_assert_str_eq(top_signal_name(SIGHUP), "a signal");
}
