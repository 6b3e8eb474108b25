/*
 * test_bench_telemetry.c - `vyre-bench run` and its telemetry page (issue
 * 22, point 14): when the page cannot be made (the telemetry directory
 * belongs to another user, or others may write it), vyre-bench used to
 * publish nothing and say nothing, and only vyre-top told. It now says so
 * once on stderr, with the reason and a hint, and runs as before (exit 0,
 * the results stored). VYRE_TELEMETRY=0 turns publishing off on purpose:
 * no warning then.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define NOBODY 65534

static char g_tmp[512];
/* vyre-bench's TMPDIR, where the cache suite's durable puts go: a memory
 * filesystem when there is one (tu_mkdtemp_mem); nothing there is inspected. */
static char g_mem[512];
static char g_db[600];
static char g_tel[600];
static char g_env_home[700], g_env_xdg[700], g_env_data[700], g_env_tmp[700], g_env_tel[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    tu_mkdtemp_mem(g_mem, sizeof g_mem);
    snprintf(g_db, sizeof g_db, "%s/results.sqlite3", g_tmp);
    snprintf(g_tel, sizeof g_tel, "%s/tel", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_data, sizeof g_env_data, "XDG_DATA_HOME=%s/data", g_tmp);
    snprintf(g_env_tmp, sizeof g_env_tmp, "TMPDIR=%s", g_mem);
    snprintf(g_env_tel, sizeof g_env_tel, "VYRE_TELEMETRY_DIR=%s", g_tel);
}

static void teardown(void)
{
    tu_rm_rf(g_mem);
    tu_rm_rf(g_tmp);
}

TestSuite(bench_telemetry, .init = setup, .fini = teardown, .timeout = 120);

/* The cache suite, quickly, without a driver, publishing into g_tel. */
static void bench_cache(tu_proc *p, const char *telemetry)
{
    const char *const args[] = {"run",           "--suite",   "cache",      "--db", g_db,
                                "--min-samples", "3",         "--min-time", "0",    "--max-noise",
                                "100",           "--timeout", "5",          "-q",   NULL};
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               g_env_data,
                               g_env_tmp,
                               g_env_tel,
                               telemetry,
                               "VYRE_CUDA_LIBRARY=/nonexistent",
                               "CUDA_CACHE_PATH",
                               "NVTX_INJECTION64_PATH",
                               "VYRE_NVML_LIBRARY=/nonexistent",
                               NULL};
    tu_run_bin(p, VYRE_BENCH_BIN, args, env, NULL);
}

static void expect_one_warning(const char *reason, const char *hint)
{
    tu_proc p;
    bench_cache(&p, "VYRE_TELEMETRY");
    cr_assert_eq(p.exit_code, 0, "exit %d, stderr: %s", p.exit_code, p.err);
    char want[2048];
    snprintf(want, sizeof want,
             "vyre-bench: warning: not publishing telemetry (vyre-top and vyre-exporter will not "
             "see this run): %s\nhint: %s\n",
             reason, hint);
    cr_assert_str_eq(p.err, want);
    /* The cache suite's 8 points and the 3 host references (reference.cpu,
     * .cpus, .fsync), measured in every round of the run. */
    char done[800];
    snprintf(done, sizeof done, "run 1 done, 11 points stored in %s\n", g_db);
    cr_assert(strstr(p.out, done), "the run goes on:\n%s", p.out);
    cr_assert(strstr(p.out, "| reference.cpu "), "%s", p.out);
    cr_assert(strstr(p.out, "| reference.fsync "), "%s", p.out);
    tu_proc_free(&p);
}

Test(bench_telemetry, a_telemetry_directory_of_another_user_is_reported_once)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give the directory to uid %d; CI runs as root", NOBODY);
    cr_assert_eq(mkdir(g_tel, 0700), 0);
    cr_assert_eq(chown(g_tel, NOBODY, NOBODY), 0);
    char reason[1024];
    snprintf(reason, sizeof reason,
             "telemetry directory '%s' is owned by uid %d, not by you (uid 0)", g_tel, NOBODY);
    expect_one_warning(reason, "it is not yours: remove it as its owner or as root (someone may "
                               "have planted it), or set VYRE_TELEMETRY_DIR to a directory of "
                               "your own");
    struct stat st;
    cr_assert_eq(stat(g_tel, &st), 0);
    cr_assert_eq(st.st_uid, NOBODY, "left as it was");
}

Test(bench_telemetry, a_directory_others_may_write_is_reported_once)
{
    cr_assert_eq(mkdir(g_tel, 0700), 0);
    cr_assert_eq(chmod(g_tel, 0777), 0);
    char reason[1024], hint[1024];
    snprintf(reason, sizeof reason,
             "telemetry directory '%s' is writable by group or others (mode 0777)", g_tel);
    snprintf(hint, sizeof hint, "run 'chmod go-w %s' (vyre creates it 0700)", g_tel);
    expect_one_warning(reason, hint);
}

Test(bench_telemetry, publishing_or_off_on_purpose_says_nothing)
{
    tu_proc p;
    bench_cache(&p, "VYRE_TELEMETRY");
    cr_assert_eq(p.exit_code, 0, "exit %d, stderr: %s", p.exit_code, p.err);
    cr_assert_str_eq(p.err, "");
    tu_proc_free(&p);

    cr_assert_eq(chmod(g_tel, 0777), 0); /* made by the run above */
    bench_cache(&p, "VYRE_TELEMETRY=0");
    cr_assert_eq(p.exit_code, 0, "exit %d, stderr: %s", p.exit_code, p.err);
    cr_assert_str_eq(p.err, "", "off on purpose: no warning");
    tu_proc_free(&p);
}
