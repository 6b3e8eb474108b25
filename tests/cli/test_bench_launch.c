/*
 * test_bench_launch.c - a spec's "cooperative" and "pdl" (issue 38 point
 * 1: Triton's launch_cooperative_grid and launch_pdl) through the real
 * vyre-bench over the fake driver (tests/fakes/fakecuda.c), whose
 * cuLaunchKernelEx checks the attributes it is given and writes them to
 * its op log (FAKECUDA_OP_LOG): the launch carries exactly the attributes
 * the spec asks for, and a plain spec still launches through
 * cuLaunchKernel; a device that cannot launch cooperative grids and a grid
 * too large to be resident at once are one message each, exit 2; --dry-run
 * shows the launch with no GPU; a value that is not a boolean names its
 * JSON path.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef FAKECUDA_LIB
#error "tests/CMakeLists.txt must define FAKECUDA_LIB"
#endif

static char g_tmp[512];
static char g_db[600], g_oplog[600], g_cubin[600];
static char g_env_home[700], g_env_xdg[700], g_env_data[700], g_env_tmp[700], g_env_log[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_db, sizeof g_db, "%s/results.sqlite3", g_tmp);
    snprintf(g_oplog, sizeof g_oplog, "%s/ops.log", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_data, sizeof g_env_data, "XDG_DATA_HOME=%s/data", g_tmp);
    snprintf(g_env_tmp, sizeof g_env_tmp, "TMPDIR=%s", g_tmp);
    snprintf(g_env_log, sizeof g_env_log, "FAKECUDA_OP_LOG=%s", g_oplog);
    /* add_one(float *out, const float *in, unsigned n), 1 us a launch. */
    static const char img[] = "\x7f"
                              "ELF fakecubin:add_one;ns=1000";
    snprintf(g_cubin, sizeof g_cubin, "%s/add_one.cubin", g_tmp);
    tu_write_file(g_cubin, img, sizeof img);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(bench_launch, .init = setup, .fini = teardown, .timeout = 120);

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
/* 4 samples a point, no kernel pass. */
#define FAST                                                                                       \
    "--min-samples", "4", "--min-time", "0", "--max-noise", "100", "--timeout", "5",               \
        "--no-kernels", "-q"

/* Runs vyre-bench over the fake driver with 2 devices (device 1 cannot
 * launch cooperative grids), plus the environment changes of extra. The
 * fake writes 4 KiB of each copy, memset and new allocation
 * (FAKECUDA_WRITE_MAX): the log is read, never device memory, and filling
 * the 256 MiB cold-mode flush buffer each round took most of a run. */
static void bench(tu_proc *p, const char *const *args, const char *const *extra)
{
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               g_env_data,
                               g_env_tmp,
                               g_env_log,
                               "VYRE_CUDA_LIBRARY=" FAKECUDA_LIB,
                               "FAKECUDA_DEVICES=2",
                               "FAKECUDA_FAIL",
                               "FAKECUDA_COOPERATIVE_MAX",
                               "FAKECUDA_LAUNCH_LOG",
                               "CUDA_CACHE_PATH",
                               "NVTX_INJECTION64_PATH",
                               "VYRE_NVML_LIBRARY=/nonexistent",
                               "FAKECUDA_WRITE_MAX=4096",
                               NULL};
    tu_run_bin(p, VYRE_BENCH_BIN, args, env, extra);
}

/* A version-2 spec of add_one at N=1024 (4 blocks of 256) with `launch`
 * spliced in as its last members ("" for none). */
static const char *spec(const char *launch)
{
    static char path[700];
    snprintf(path, sizeof path, "%s/spec.json", g_tmp);
    char text[2048];
    snprintf(text, sizeof text,
             "{\"version\": 2, \"kernel\": \"%s\", \"entry\": \"add_one\",\n"
             " \"axes\": {\"N\": [1024]},\n"
             " \"args\": [{\"buffer\": \"N\"}, {\"buffer\": \"N\", \"fill\": \"ones\"}, "
             "{\"int\": \"N\", \"type\": \"i32\"}],\n"
             " \"grid\": \"ceil(N/256)\", \"block\": 256%s%s}\n",
             g_cubin, *launch ? ", " : "", launch);
    tu_write_file(path, text, strlen(text));
    return path;
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; s && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static char *oplog(void)
{
    size_t len;
    char *s = tu_read_file(g_oplog, &len);
    return s ? s : strdup("");
}

Test(bench_launch, the_launch_carries_the_attributes_the_spec_asks_for)
{
    static const struct {
        const char *launch, *logged;
    } cases[] = {
        {"\"cooperative\": true, \"pdl\": true", "launch_attrs add_one cooperative pdl\n"},
        {"\"cooperative\": true", "launch_attrs add_one cooperative\n"},
        {"\"pdl\": true, \"cooperative\": false", "launch_attrs add_one pdl\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        remove(g_oplog);
        tu_proc p;
        bench(&p, ARGS("run", "--spec", spec(cases[i].launch), "--db", g_db, FAST), NULL);
        cr_assert_eq(p.exit_code, 0, "%s: exit %d\n%s%s", cases[i].launch, p.exit_code, p.out,
                     p.err);
        tu_proc_free(&p);
        char *log = oplog();
        /* Every launch of add_one went through cuLaunchKernelEx with them
         * (hot samples replay a graph captured from such launches). */
        cr_assert_gt(count(log, cases[i].logged), 0, "%s:\n%s", cases[i].launch, log);
        cr_assert_eq(count(log, "launch_attrs"), count(log, cases[i].logged), "%s", log);
        free(log);
    }
    /* No attribute: cuLaunchKernel, as before. */
    remove(g_oplog);
    tu_proc p;
    bench(&p, ARGS("run", "--spec", spec("\"pdl\": false"), "--db", g_db, FAST), NULL);
    cr_assert_eq(p.exit_code, 0, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    tu_proc_free(&p);
    char *log = oplog();
    cr_assert_gt(count(log, "launch add_one"), 0, "%s", log);
    cr_assert_eq(count(log, "launch_attrs"), 0, "%s", log);
    free(log);
}

Test(bench_launch, a_cooperative_grid_the_gpu_cannot_launch_is_one_message)
{
    tu_proc p;
    bench(
        &p,
        ARGS("run", "--spec", spec("\"cooperative\": true"), "--db", g_db, "--devices", "1", FAST),
        NULL);
    cr_assert_eq(p.exit_code, 2, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    cr_assert(strstr(p.err, "$.cooperative: device 1 (") &&
                  strstr(p.err, ") cannot launch cooperative grids\n"),
              "%s", p.err);
    cr_assert(strstr(p.err, "\nhint: run it on a GPU that launches cooperative grids, or drop "
                            "\"cooperative\" from the spec"),
              "%s", p.err);
    tu_proc_free(&p);

    /* 4 blocks where the GPU holds 2 at once. */
    const char *const small[] = {"FAKECUDA_COOPERATIVE_MAX=2", NULL};
    bench(&p, ARGS("run", "--spec", spec("\"cooperative\": true"), "--db", g_db, FAST), small);
    cr_assert_eq(p.exit_code, 2, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    cr_assert(strstr(p.err, "cuLaunchKernelEx failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"),
              "%s", p.err);
    cr_assert(strstr(p.err, "\nhint: a cooperative grid must be resident at once: at most the "
                            "SMs times the blocks one SM holds"),
              "%s", p.err);
    tu_proc_free(&p);
    /* The same grid without the attribute launches. */
    bench(&p, ARGS("run", "--spec", spec(""), "--db", g_db, FAST), small);
    cr_assert_eq(p.exit_code, 0, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    tu_proc_free(&p);
}

Test(bench_launch, dry_run_shows_the_launch_and_bad_values_name_their_path)
{
    tu_proc p;
    const char *const nodriver[] = {"VYRE_CUDA_LIBRARY=/nonexistent", NULL};
    bench(&p, ARGS("run", "--spec", spec("\"cooperative\": true, \"pdl\": true"), "--dry-run"),
          nodriver);
    cr_assert_eq(p.exit_code, 0, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    tu_assert_line(p.out, "launch: cooperative, pdl (cuLaunchKernelEx)");
    tu_assert_line(p.out, "dry run: 1 point would run; nothing was launched");
    tu_proc_free(&p);
    bench(&p, ARGS("run", "--spec", spec("\"pdl\": true"), "--dry-run"), nodriver);
    cr_assert_eq(p.exit_code, 0, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    tu_assert_line(p.out, "launch: pdl (cuLaunchKernelEx)");
    tu_proc_free(&p);
    bench(&p, ARGS("run", "--spec", spec(""), "--dry-run"), nodriver);
    cr_assert_eq(p.exit_code, 0, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    cr_assert_null(strstr(p.out, "launch:"), "%s", p.out);
    tu_proc_free(&p);

    const char *path = spec("\"cooperative\": 1");
    bench(&p, ARGS("run", "--spec", path, "--dry-run"), nodriver);
    cr_assert_eq(p.exit_code, 2, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    cr_assert_str_eq(p.err, tu_text("vyre-bench: error: '%s': $.cooperative must be true or "
                                    "false, not a number\n"
                                    "hint: write \"cooperative\": true for a cooperative grid "
                                    "(Triton's launch_cooperative_grid), or leave it out\n",
                                    path));
    tu_proc_free(&p);
    path = spec("\"pdl\": \"yes\"");
    bench(&p, ARGS("run", "--spec", path, "--dry-run"), nodriver);
    cr_assert_eq(p.exit_code, 2, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    cr_assert_str_eq(p.err, tu_text("vyre-bench: error: '%s': $.pdl must be true or false, not "
                                    "a string\n"
                                    "hint: write \"pdl\": true for a programmatic dependent "
                                    "launch (Triton's launch_pdl), or leave it out\n",
                                    path));
    tu_proc_free(&p);
}
