/*
 * test_bench_kernel_view.c - the `kernel` view of a sweep point (issue 34,
 * point 4): the CUPTI pass launches the kernel in the conditions of the
 * point's mode. Through the real vyre-bench over the fake driver
 * (tests/fakes/fakecuda.c) and the fake CUPTI (inject/testing/fakecupti.c):
 * the fake's operation log (FAKECUDA_OP_LOG) lists every memset, blocking
 * kernel and launch in the order issued, and marks the launches whose
 * kernel record the fake CUPTI took (those of a CUPTI pass).
 *
 * What must hold: in --mode cold, every launch of the CUPTI pass comes
 * right after the L2 flush and the hold, exactly as each timed cold sample
 * does (it read a hot time in a cold run: the pass launched back to back
 * with L2 warm); in --mode hot, the pass's launches are queued back to
 * back behind one hold, with no flush.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef FAKECUDA_LIB
#error "tests/CMakeLists.txt must define FAKECUDA_LIB"
#endif
#ifndef FAKECUPTI_LIB
#error "tests/CMakeLists.txt must define FAKECUPTI_LIB"
#endif

static char g_tmp[512];
static char g_db[600], g_log[600], g_cubin[600];
static char g_env_home[700], g_env_xdg[700], g_env_data[700], g_env_tmp[700], g_env_log[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_db, sizeof g_db, "%s/results.sqlite3", g_tmp);
    snprintf(g_log, sizeof g_log, "%s/ops.log", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_data, sizeof g_env_data, "XDG_DATA_HOME=%s/data", g_tmp);
    snprintf(g_env_tmp, sizeof g_env_tmp, "TMPDIR=%s", g_tmp);
    snprintf(g_env_log, sizeof g_env_log, "FAKECUDA_OP_LOG=%s", g_log);
    /* A fake cubin of add_one, each launch 1 s of the fake's virtual time:
     * the fake's own host time (ms a launch under ASan with CUPTI on)
     * stays far below the 2% the traced note needs. */
    static const char img[] = "\x7f"
                              "ELF fakecubin:add_one;ns=1000000000";
    snprintf(g_cubin, sizeof g_cubin, "%s/a.cubin", g_tmp);
    tu_write_file(g_cubin, img, sizeof img);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(bench_kernel_view, .init = setup, .fini = teardown, .timeout = 120);

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* One point of add_one at N=1K in `mode`, with its CUPTI pass; returns the
 * operation log (malloc'ed). slow: "FAKECUDA_CUPTI_SLOW_NS" (unset) or a
 * value of it. The fake writes 4 KiB of each copy and memset
 * (FAKECUDA_WRITE_MAX): the log is read, never the bytes, and cold mode's
 * flush is 256 MiB a sample. */
static char *run_mode(const char *mode, const char *slow)
{
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               g_env_data,
                               g_env_tmp,
                               g_env_log,
                               "VYRE_CUDA_LIBRARY=" FAKECUDA_LIB,
                               "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
                               "FAKECUDA_CUPTI_RECORDS=1",
                               slow,
                               "FAKECUDA_DEVICES=1",
                               "FAKECUDA_FAIL",
                               "FAKECUDA_BLOCK_LOST",
                               "FAKECUDA_EVENT_NS",
                               "FAKECUDA_LAUNCH_LOG",
                               "CUDA_CACHE_PATH",
                               "NVTX_INJECTION64_PATH",
                               "VYRE_NVML_LIBRARY=/nonexistent",
                               "FAKECUDA_WRITE_MAX=4096",
                               NULL};
    tu_proc p;
    tu_run_bin(&p, VYRE_BENCH_BIN,
               ARGS("run", g_cubin, "--entry", "add_one", "-a", "N=1K", "--mode", mode, "--db",
                    g_db, "--min-samples", "4", "--min-time", "0", "--max-noise", "100",
                    "--timeout", "5", "--rounds", "1", "-q"),
               env, NULL);
    cr_assert_eq(p.exit_code, 0, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    tu_proc_free(&p);
    cr_assert_eq(tu_db_int(g_db, "SELECT count(*) FROM points WHERE suite = 'sweep' AND "
                                 "kernel_ns > 0"),
                 1, "the point has its kernel view");
    size_t len = 0;
    char *log = tu_read_file(g_log, &len);
    cr_assert_not_null(log);
    return log;
}

/* The log as lines (in place); *n lines. */
static char **split_lines(char *log, size_t *n)
{
    size_t cap = 1;
    for (const char *c = log; *c; c++)
        cap += *c == '\n';
    char **lines = calloc(cap, sizeof *lines);
    cr_assert_not_null(lines);
    *n = 0;
    for (char *line = log; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        lines[(*n)++] = line;
        line = nl ? nl + 1 : NULL;
    }
    return lines;
}

Test(bench_kernel_view, the_cold_cupti_pass_flushes_l2_before_each_launch)
{
    char *log = run_mode("cold", "FAKECUDA_CUPTI_SLOW_NS");
    size_t n = 0;
    char **lines = split_lines(log, &n);
    /* The timed samples' flush: the memset right before the hold of the
     * first timed launch. */
    const char *flush = NULL;
    for (size_t i = 2; i < n && !flush; i++)
        if (strcmp(lines[i], "launch add_one") == 0 && strcmp(lines[i - 1], "block") == 0 &&
            strncmp(lines[i - 2], "memset ", 7) == 0)
            flush = lines[i - 2];
    cr_assert_not_null(flush, "no timed cold sample (flush, hold, launch) in the log");
    size_t measured = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(lines[i], "launch add_one cupti") != 0)
            continue;
        measured++;
        cr_assert(i >= 2 && strcmp(lines[i - 1], "block") == 0 && strcmp(lines[i - 2], flush) == 0,
                  "the CUPTI pass's launch %zu (log line %zu) is not preceded by the flush "
                  "('%s') and the hold, as a timed cold sample is: '%s', '%s'",
                  measured, i + 1, flush, i >= 2 ? lines[i - 2] : "", i >= 1 ? lines[i - 1] : "");
    }
    cr_assert_geq(measured, 3, "%zu launches in the CUPTI pass", measured);
    free(lines);
    free(log);
}

Test(bench_kernel_view, the_hot_cupti_pass_runs_back_to_back_behind_one_hold)
{
    char *log = run_mode("hot", "FAKECUDA_CUPTI_SLOW_NS");
    size_t n = 0;
    char **lines = split_lines(log, &n);
    size_t first = n, measured = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(lines[i], "launch add_one cupti") == 0) {
            if (first == n)
                first = i;
            measured++;
        }
    cr_assert_geq(measured, 3, "%zu launches in the CUPTI pass", measured);
    cr_assert(first >= 1 && strcmp(lines[first - 1], "block") == 0,
              "the CUPTI pass starts with a hold: '%s'", first >= 1 ? lines[first - 1] : "");
    for (size_t i = first; i < first + measured; i++)
        cr_assert_str_eq(lines[i], "launch add_one cupti",
                         "log line %zu: the pass's launches are back to back", i + 1);
    cr_assert_eq(tu_db_int(g_db, "SELECT count(*) FROM points WHERE note LIKE '%tracing%'"), 0,
                 "CUPTI slowed nothing here: nothing to say");
    free(lines);
    free(log);
}

/* CUPTI's kernel tracing slows what it traces (on GPUs before Blackwell it
 * instruments the kernel's code): here by 0.1 s on a 1 s kernel. The
 * kernel view reads the traced 1.1 s, and the point's note says why it
 * reads 10% above its batch view, which the hot pass times again with
 * CUPTI on. */
Test(bench_kernel_view, the_note_says_when_cupti_tracing_slowed_the_launches)
{
    free(run_mode("hot", "FAKECUDA_CUPTI_SLOW_NS=100000000"));
    cr_assert_eq(tu_db_int(g_db, "SELECT count(*) FROM points WHERE suite = 'sweep' AND "
                                 "kernel_ns BETWEEN 1.099e9 AND 1.101e9 AND "
                                 "batch_ns BETWEEN 0.99e9 AND 1.01e9"),
                 1, "kernel 1.1 s traced, batch 1 s");
    cr_assert_eq(tu_db_int(g_db, "SELECT count(*) FROM points WHERE suite = 'sweep' AND note "
                                 "LIKE '%kernel is a traced time: CUPTI''s tracing slowed the "
                                 "launches 10._% (110____.__ us vs batch 100____.__ us)%'"),
                 1, "the note says why");
}
