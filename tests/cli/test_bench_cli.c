/*
 * test_bench_cli.c - the real vyre-bench binary: exit codes and exact
 * output, without a driver and through the fake driver
 * (tests/fakes/fakecuda.c, selected with VYRE_CUDA_LIBRARY).
 *
 * Every run gets HOME and XDG_CACHE_HOME in a fresh temp directory and a
 * clean CUDA_CACHE_* / FAKECUDA_* environment; the changes are made in the
 * child only (tu_run), so this process's environment is never touched.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/stats_internal.h"
#include "testutil.h"
#include "trace/telemetry_internal.h"
#include "bench/bench_internal.h"
#include "vyre/version.h"

#ifndef FAKECUDA_LIB
#error "tests/CMakeLists.txt must define FAKECUDA_LIB"
#endif

static char g_tmp[512];
static char g_env_home[700];
static char g_env_xdg[700];
static char g_xdg[600];

static void cli_setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_xdg, sizeof g_xdg, "%s/xdg", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s", g_xdg);
}

static void cli_teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(bench_cli, .init = cli_setup, .fini = cli_teardown);

#define FAKE     "VYRE_CUDA_LIBRARY=" FAKECUDA_LIB
#define NODRIVER "VYRE_CUDA_LIBRARY=/nonexistent"

/* Runs vyre-bench with args (NULL-terminated) in a controlled environment;
 * extra_env entries ("NAME=value" or "NAME" to unset) are applied last. */
static void bench(tu_proc *p, const char *const *args, const char *const *extra_env)
{
    static const char *const clean[] = {
        "CUDA_CACHE_PATH",         "CUDA_CACHE_MAXSIZE",   "CUDA_CACHE_DISABLE",
        "VYRE_CUDA_LIBRARY",       "FAKECUDA_INIT_RESULT", "FAKECUDA_DEVICES",
        "FAKECUDA_DRIVER_VERSION", "FAKECUDA_CC",          "FAKECUDA_MISSING",
        "FAKECUDA_MISSING_STYLE",  "FAKECUDA_FAIL",        "FAKECUDA_RECORD",
        "XDG_DATA_HOME",
    };
    const char *env[2 + sizeof clean / sizeof clean[0] + 1];
    size_t m = 0;
    env[m++] = g_env_home;
    env[m++] = g_env_xdg;
    for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++)
        env[m++] = clean[i];
    env[m] = NULL;
    tu_run_bin(p, VYRE_BENCH_BIN, args, env, extra_env);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define ENV(...)  ((const char *const[]){__VA_ARGS__, NULL})

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* --- global options and usage errors ------------------------------------ */

Test(bench_cli, help_lists_devices)
{
    static const char *const forms[] = {"--help", "-h", "help"};
    for (size_t i = 0; i < 3; i++) {
        tu_proc p;
        bench(&p, ARGS(forms[i]), ENV(NODRIVER));
        cr_assert_eq(p.exit_code, 0, "%s: exit %d", forms[i], p.exit_code);
        cr_assert(starts_with(p.out, "usage: vyre-bench "), "%s: %s", forms[i], p.out);
        cr_assert(strstr(p.out, "\n  devices    list the GPUs and their capabilities\n"),
                  "stdout: %s", p.out);
        cr_assert(strstr(p.out, "3  no NVIDIA driver or no GPU found"), "exit codes: %s", p.out);
        cr_assert_str_eq(p.err, "");
        tu_proc_free(&p);
    }
}

/* git's `help <command>`: the command's own help, as `<command> --help`;
 * an unknown name is the unknown-command error with its suggestion. */
Test(bench_cli, help_command_prints_that_command_s_help)
{
    static const char *const cmds[] = {"run", "devices", "compare", "rm"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        tu_proc p, q;
        bench(&p, ARGS("help", cmds[i]), ENV(NODRIVER));
        bench(&q, ARGS(cmds[i], "--help"), ENV(NODRIVER));
        cr_assert_eq(p.exit_code, 0, "help %s: exit %d", cmds[i], p.exit_code);
        char want[64];
        snprintf(want, sizeof want, "usage: vyre-bench %s ", cmds[i]);
        cr_assert(starts_with(p.out, want), "help %s: %s", cmds[i], p.out);
        cr_assert_str_eq(p.out, q.out, "help %s is %s --help", cmds[i], cmds[i]);
        cr_assert_str_eq(p.err, "");
        tu_proc_free(&p);
        tu_proc_free(&q);
    }
    tu_proc p;
    bench(&p, ARGS("help", "rnu"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: unknown command 'rnu'\n"
                            "hint: did you mean 'run'?\n"
                            "try 'vyre-bench --help'\n");
    tu_proc_free(&p);
}

Test(bench_cli, version)
{
    tu_proc p;
    bench(&p, ARGS("--version"), NULL);
    cr_assert_eq(p.exit_code, 0);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "vyre-bench %s ", vyre_version());
    cr_assert(starts_with(p.out, prefix), "stdout: %s", p.out);
    cr_assert_eq(p.out[strlen(p.out) - 1], '\n');
    cr_assert_eq(strchr(p.out, '\n') - p.out, (long)strlen(p.out) - 1, "one line");
    cr_assert_str_eq(p.err, "");
    tu_proc_free(&p);
    bench(&p, ARGS("-V"), NULL);
    cr_assert_eq(p.exit_code, 0);
    cr_assert(starts_with(p.out, "vyre-bench "));
    tu_proc_free(&p);
}

Test(bench_cli, no_arguments_is_a_usage_error)
{
    tu_proc p;
    bench(&p, NULL, NULL);
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert(starts_with(p.err, "usage: vyre-bench "), "stderr: %s", p.err);
    tu_proc_free(&p);
}

Test(bench_cli, unknown_command_suggests_the_nearest)
{
    tu_proc p;
    bench(&p, ARGS("devcies"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: unknown command 'devcies'\n"
                            "hint: did you mean 'devices'?\n"
                            "try 'vyre-bench --help'\n");
    tu_proc_free(&p);
}

Test(bench_cli, unknown_command_far_from_any_has_no_suggestion)
{
    tu_proc p;
    bench(&p, ARGS("frobnicate"), NULL);
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: unknown command 'frobnicate'\n"
                            "try 'vyre-bench --help'\n");
    tu_proc_free(&p);
}

Test(bench_cli, unknown_global_option)
{
    tu_proc p;
    bench(&p, ARGS("--bogus"), NULL);
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: unknown option '--bogus'\n"
                            "try 'vyre-bench --help'\n");
    tu_proc_free(&p);
    bench(&p, ARGS("-x"), NULL);
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: unknown option '-x'\n"
                            "try 'vyre-bench --help'\n");
    tu_proc_free(&p);
}

Test(bench_cli, devices_usage_errors_do_not_touch_the_driver)
{
    /* With no driver, a usage error is still exit 2, not 3. */
    tu_proc p;
    bench(&p, ARGS("devices", "--bogus"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: unknown option '--bogus'\n"
                            "try 'vyre-bench devices --help'\n");
    tu_proc_free(&p);

    bench(&p, ARGS("devices", "-x"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: unknown option '-x'\n"
                            "try 'vyre-bench devices --help'\n");
    tu_proc_free(&p);

    bench(&p, ARGS("devices", "-xh"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: unknown option '-x'\n"
                            "try 'vyre-bench devices --help'\n");
    tu_proc_free(&p);

    bench(&p, ARGS("devices", "--json=1"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: option '--json' takes no value\n"
                            "try 'vyre-bench devices --help'\n");
    tu_proc_free(&p);

    bench(&p, ARGS("devices", "extra"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: unexpected argument 'extra'\n"
                            "try 'vyre-bench devices --help'\n");
    tu_proc_free(&p);

    bench(&p, ARGS("devices", "--json", "extra"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    tu_proc_free(&p);
}

Test(bench_cli, devices_help)
{
    tu_proc p;
    bench(&p, ARGS("devices", "--help"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 0);
    cr_assert(starts_with(p.out, "usage: vyre-bench devices [--json]\n"), "stdout: %s", p.out);
    cr_assert(strstr(p.out, "--json"));
    cr_assert_str_eq(p.err, "");
    tu_proc_free(&p);
}

/* --- no driver ---------------------------------------------------------- */

static const char g_nodriver_err[] =
    "vyre-bench: error: no NVIDIA driver found: cannot load '/nonexistent': /nonexistent: "
    "cannot open shared object file: No such file or directory\n"
    "hint: install the NVIDIA driver (it provides libcuda.so.1), or set VYRE_CUDA_LIBRARY to "
    "its path\n";

Test(bench_cli, devices_without_driver)
{
    tu_proc p;
    bench(&p, ARGS("devices"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 3);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, g_nodriver_err);
    tu_proc_free(&p);
}

Test(bench_cli, devices_json_without_driver)
{
    tu_proc p;
    bench(&p, ARGS("devices", "--json"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 3);
    cr_assert_str_eq(p.err, g_nodriver_err);
    json_error_t jerr;
    json_t *o = json_loads(p.out, 0, &jerr);
    cr_assert_not_null(o, "stdout is not JSON (%s): %s", jerr.text, p.out);
    cr_assert(json_is_object(o));
    cr_assert(json_is_integer(json_object_get(o, "schema_version")));
    cr_assert_eq(json_integer_value(json_object_get(o, "schema_version")), 1);
    cr_assert(json_is_false(json_object_get(o, "driver_found")));
    cr_assert(json_is_null(json_object_get(o, "driver_version")));
    json_t *devs = json_object_get(o, "devices");
    cr_assert(json_is_array(devs));
    cr_assert_eq(json_array_size(devs), 0);
    json_decref(o);
    tu_proc_free(&p);
}

Test(bench_cli, empty_driver_variable_is_a_usage_error)
{
    tu_proc p;
    bench(&p, ARGS("devices"), ENV("VYRE_CUDA_LIBRARY="));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: VYRE_CUDA_LIBRARY is set but empty\n"
                            "hint: unset VYRE_CUDA_LIBRARY, or set it to the path of "
                            "libcuda.so.1\n");
    tu_proc_free(&p);
}

/* --- through the fake driver -------------------------------------------- */

static const char g_table_2[] =
    "GPU  NAME                          ARCH     SMS      MEMORY  COOP  UUID"
    "                                    \n"
    "0    NVIDIA Fake H100 80GB HBM3    sm_90    132    79.6 GiB   yes  "
    "GPU-00112233-4455-6677-8899-aabbccddeeff\n"
    "     compute capability 9.0, 1024 threads/block, 227 KiB shared/block, L2 50 MiB, "
    "5120-bit bus, ECC on, PCI 0000:18:00.0\n"
    "1    NVIDIA Fake Accelerator With  sm_86     84    24.0 GiB    no  "
    "GPU-5a4b7869-1e0f-3c2d-d2c3-f0e19687b4a5\n"
    "     compute capability 8.6, 1024 threads/block, 99 KiB shared/block, L2 6 MiB, "
    "384-bit bus, ECC off, PCI 0000:3b:00.0\n"
    "driver: CUDA 13.0 (13000), 2 devices\n";

Test(bench_cli, devices_table_through_fake_driver)
{
    tu_proc p;
    bench(&p, ARGS("devices"), ENV(FAKE, "FAKECUDA_DEVICES=2"));
    cr_assert_str_eq(p.err, "");
    cr_assert_eq(p.exit_code, 0);
    cr_assert_str_eq(p.out, g_table_2);
    tu_proc_free(&p);
    /* The driver's JIT cache was configured on the way. */
    char dir[700];
    snprintf(dir, sizeof dir, "%s/vyre/cuda-jit", g_xdg);
    struct stat st;
    cr_assert_eq(stat(dir, &st), 0, "%s was not created", dir);
    cr_assert(S_ISDIR(st.st_mode));
}

Test(bench_cli, devices_table_one_device_no_pci)
{
    tu_proc p;
    bench(&p, ARGS("devices"),
          ENV(FAKE, "FAKECUDA_DEVICES=1", "FAKECUDA_DRIVER_VERSION=12080",
              "FAKECUDA_MISSING=cuDeviceGetPCIBusId"));
    cr_assert_str_eq(p.err, "");
    cr_assert_eq(p.exit_code, 0);
    cr_assert_str_eq(p.out,
                     "GPU  NAME                          ARCH     SMS      MEMORY  COOP  UUID"
                     "                                    \n"
                     "0    NVIDIA Fake H100 80GB HBM3    sm_90    132    79.6 GiB   yes  "
                     "GPU-00112233-4455-6677-8899-aabbccddeeff\n"
                     "     compute capability 9.0, 1024 threads/block, 227 KiB "
                     "shared/block, L2 50 MiB, 5120-bit bus, ECC on\n"
                     "driver: CUDA 12.8 (12080), 1 device\n");
    tu_proc_free(&p);
}

static void expect_int(json_t *o, const char *key, json_int_t v)
{
    json_t *x = json_object_get(o, key);
    cr_assert(json_is_integer(x), "'%s' is not an integer", key);
    cr_assert_eq(json_integer_value(x), v, "'%s' is %lld, expected %lld", key,
                 (long long)json_integer_value(x), (long long)v);
}

static void expect_str(json_t *o, const char *key, const char *v)
{
    json_t *x = json_object_get(o, key);
    cr_assert(json_is_string(x), "'%s' is not a string", key);
    cr_assert_str_eq(json_string_value(x), v, "'%s'", key);
}

static void expect_bool(json_t *o, const char *key, int v)
{
    json_t *x = json_object_get(o, key);
    cr_assert(json_is_boolean(x), "'%s' is not a boolean", key);
    cr_assert_eq(json_is_true(x), v, "'%s'", key);
}

Test(bench_cli, devices_json_through_fake_driver)
{
    tu_proc p;
    bench(&p, ARGS("devices", "--json"), ENV(FAKE, "FAKECUDA_DEVICES=2"));
    cr_assert_str_eq(p.err, "");
    cr_assert_eq(p.exit_code, 0);
    json_error_t jerr;
    json_t *o = json_loads(p.out, 0, &jerr);
    cr_assert_not_null(o, "stdout is not JSON (%s): %s", jerr.text, p.out);
    cr_assert_eq(json_object_size(o), 4);
    expect_int(o, "schema_version", 1);
    expect_bool(o, "driver_found", 1);
    expect_int(o, "driver_version", 13000);
    json_t *devs = json_object_get(o, "devices");
    cr_assert(json_is_array(devs));
    cr_assert_eq(json_array_size(devs), 2);

    json_t *d = json_array_get(devs, 0);
    cr_assert_eq(json_object_size(d), 15);
    expect_int(d, "ordinal", 0);
    expect_str(d, "name", "NVIDIA Fake H100 80GB HBM3");
    expect_str(d, "uuid", "GPU-00112233-4455-6677-8899-aabbccddeeff");
    expect_str(d, "pci_bus_id", "0000:18:00.0");
    expect_str(d, "arch", "sm_90");
    expect_int(d, "cc_major", 9);
    expect_int(d, "cc_minor", 0);
    expect_int(d, "sm_count", 132);
    expect_int(d, "memory_bytes", 85520809984LL);
    expect_bool(d, "cooperative_launch", 1);
    expect_int(d, "max_threads_per_block", 1024);
    expect_int(d, "max_shared_mem_per_block_bytes", 232448);
    expect_int(d, "l2_cache_bytes", 52428800);
    expect_int(d, "memory_bus_width_bits", 5120);
    expect_bool(d, "ecc_enabled", 1);

    d = json_array_get(devs, 1);
    cr_assert_eq(json_object_size(d), 15);
    expect_int(d, "ordinal", 1);
    expect_str(d, "name", "NVIDIA Fake Accelerator With A Long Name"); /* not truncated */
    expect_str(d, "uuid", "GPU-5a4b7869-1e0f-3c2d-d2c3-f0e19687b4a5");
    expect_str(d, "pci_bus_id", "0000:3b:00.0");
    expect_str(d, "arch", "sm_86");
    expect_int(d, "cc_major", 8);
    expect_int(d, "cc_minor", 6);
    expect_int(d, "sm_count", 84);
    expect_int(d, "memory_bytes", 25769803776LL);
    expect_bool(d, "cooperative_launch", 0);
    expect_int(d, "max_shared_mem_per_block_bytes", 101376);
    expect_int(d, "l2_cache_bytes", 6291456);
    expect_int(d, "memory_bus_width_bits", 384);
    expect_bool(d, "ecc_enabled", 0);
    json_decref(o);
    tu_proc_free(&p);
}

Test(bench_cli, devices_with_no_gpu)
{
    tu_proc p;
    bench(&p, ARGS("devices"), ENV(FAKE, "FAKECUDA_DEVICES=0"));
    cr_assert_eq(p.exit_code, 3);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: the NVIDIA driver reports no GPU\n"
                            "hint: check nvidia-smi and CUDA_VISIBLE_DEVICES\n");
    tu_proc_free(&p);

    bench(&p, ARGS("devices", "--json"), ENV(FAKE, "FAKECUDA_DEVICES=0"));
    cr_assert_eq(p.exit_code, 3);
    json_error_t jerr;
    json_t *o = json_loads(p.out, 0, &jerr);
    cr_assert_not_null(o, "stdout is not JSON (%s): %s", jerr.text, p.out);
    expect_int(o, "schema_version", 1);
    expect_bool(o, "driver_found", 1);
    cr_assert_eq(json_array_size(json_object_get(o, "devices")), 0);
    json_decref(o);
    tu_proc_free(&p);
}

Test(bench_cli, devices_when_cuinit_finds_no_device)
{
    tu_proc p;
    bench(&p, ARGS("devices"), ENV(FAKE, "FAKECUDA_INIT_RESULT=100"));
    cr_assert_eq(p.exit_code, 3);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: cuInit failed: CUDA_ERROR_NO_DEVICE (fake: no "
                            "CUDA-capable device is detected)\n"
                            "hint: no GPU is visible to this process: check nvidia-smi and "
                            "CUDA_VISIBLE_DEVICES\n");
    tu_proc_free(&p);
}

Test(bench_cli, devices_with_a_driver_too_old)
{
    tu_proc p;
    bench(&p, ARGS("devices"), ENV("VYRE_CUDA_LIBRARY=" FAKECUDA_NOGETPROC_LIB));
    cr_assert_eq(p.exit_code, 3);
    cr_assert_str_eq(p.out, "");
    cr_assert(starts_with(p.err, "vyre-bench: error: '" FAKECUDA_NOGETPROC_LIB
                                 "' has no cuGetProcAddress_v2"),
              "stderr: %s", p.err);
    cr_assert(strstr(p.err, "\nhint: "), "stderr: %s", p.err);
    tu_proc_free(&p);
}

Test(bench_cli, devices_rejects_small_jit_cache)
{
    tu_proc p;
    bench(&p, ARGS("devices"), ENV(FAKE, "FAKECUDA_DEVICES=2", "CUDA_CACHE_MAXSIZE=12"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: CUDA_CACHE_MAXSIZE='12' is below the floor of "
                            "1073741824 bytes: real kernels would be evicted and re-JITed\n"
                            "hint: set CUDA_CACHE_MAXSIZE to a byte count of at least "
                            "1073741824 (e.g. 1073741824), or unset it\n");
    tu_proc_free(&p);

    bench(&p, ARGS("devices"), ENV(FAKE, "CUDA_CACHE_MAXSIZE=abc"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(starts_with(p.err, "vyre-bench: error: CUDA_CACHE_MAXSIZE='abc' is not a number"),
              "stderr: %s", p.err);
    cr_assert(strstr(p.err, "\nhint: set CUDA_CACHE_MAXSIZE"), "stderr: %s", p.err);
    tu_proc_free(&p);
}

Test(bench_cli, devices_without_home_is_an_environment_error)
{
    tu_proc p;
    bench(&p, ARGS("devices"), ENV(FAKE, "HOME", "XDG_CACHE_HOME"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert(starts_with(p.err, "vyre-bench: error: "), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "\nhint: set CUDA_CACHE_PATH"), "stderr: %s", p.err);
    tu_proc_free(&p);
}

/* ---- the compile suite's cold-JIT child --------------------------------------------- */

/* The parent side (vyre__bench_jit_cold_spawn) runs the real vyre-bench
 * as the child: its main() must call vyre_bench_host_start first, and
 * the child's error comes back whole. No GPU needed: the errors come
 * before (or instead of) the driver. */
Test(bench_cli, cold_jit_child_reports_its_error_to_the_parent)
{
    char xdg[700];
    snprintf(xdg, sizeof xdg, "%s/xdg", g_tmp);
    cr_assert_eq(setenv("XDG_CACHE_HOME", xdg, 1), 0); /* this test's own process */
    cr_assert_eq(setenv("VYRE_CUDA_LIBRARY", "/nonexistent", 1), 0);
    unsetenv("CUDA_CACHE_PATH");
    unsetenv("CUDA_CACHE_MAXSIZE");
    char ptx[700];
    snprintf(ptx, sizeof ptx, "%s/missing.ptx", g_tmp);
    double ns = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_jit_cold_spawn(VYRE_BENCH_BIN, ptx, &ns, &e), VYRE_ENOENT, "%s",
                 e.message);
    char want[900];
    snprintf(want, sizeof want,
             "the cold-JIT child failed: cannot read '%s': No such file or directory", ptx);
    cr_assert_str_eq(e.message, want);
    cr_assert_str_eq(e.hint, "check the path");

    tu_write_file(ptx, ".version 8.0\n", 13);
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_jit_cold_spawn(VYRE_BENCH_BIN, ptx, &ns, &e), VYRE_ENODRIVER, "%s",
                 e.message);
    cr_assert(strncmp(e.message, "the cold-JIT child failed: ", 27) == 0, "%s", e.message);
    cr_assert_str_neq(e.hint, "");
    cr_assert_eq(ns, 0);
}

Test(bench_cli, cold_jit_child_of_a_program_without_the_hook_is_an_error)
{
    double ns = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_jit_cold_spawn("/bin/true", "x.ptx", &ns, &e), VYRE_ECUDA);
    cr_assert_str_eq(e.message,
                     "the cold-JIT child '/bin/true' of 'x.ptx' gave no result (exit status 0)");
    cr_assert(strstr(e.hint, "vyre_bench_host_start"), "%s", e.hint);
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_jit_cold_spawn("/nonexistent/vyre-bench", "x.ptx", &ns, &e),
                 VYRE_ENOENT);
    cr_assert_str_eq(e.message, "cannot run '/nonexistent/vyre-bench': No such file or directory");
}

/* A marker that names another parent (inherited, or set by hand) is not a
 * request: vyre-bench runs as usual. */
Test(bench_cli, stale_child_marker_is_ignored)
{
    tu_proc p;
    bench(&p, ARGS("--version"), ENV("VYRE__BENCH_CHILD=jit-cold:1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strncmp(p.out, "vyre-bench ", 11) == 0, "%s", p.out);
    tu_proc_free(&p);
}

/* libcore says which remedy helps (VYRE_REMEDY_DEVICES); the tool names its
 * own command for it. */
Test(bench_cli, run_on_a_missing_device_names_the_devices_command)
{
    char db[700];
    snprintf(db, sizeof db, "%s/results.sqlite3", g_tmp);
    tu_proc p;
    bench(&p, ARGS("run", "--suite", "launch", "--devices", "3", "--db", db),
          ENV(FAKE, "FAKECUDA_DEVICES=2"));
    cr_assert_eq(p.exit_code, 3, "%s", p.err);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: no device 3: the driver sees 2 GPUs\n"
                            "hint: list the devices with 'vyre-bench devices'\n");
    tu_proc_free(&p);
}

/* --- the memcpy suite's copies are counted ----------------------------------- */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vyre/counters.h"
#include "vyre/telemetry.h"

/* vyre-bench's memcpy suite copies through cuMemcpy*Async directly, not
 * through vyre's dispatch: its telemetry page must still count what it
 * moves (issue 13: 55 GB/s showed as 0 MB/s). Run through the fake driver,
 * whose events and copies run on the CPU, and read the page while it runs
 * (it is removed when the process exits). */
Test(bench_cli, memcpy_suite_copies_show_in_its_telemetry)
{
    char tel[700], db[700];
    snprintf(tel, sizeof tel, "%s/tel", g_tmp);
    snprintf(db, sizeof db, "%s/results.sqlite3", g_tmp);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        setenv("HOME", g_tmp, 1);
        setenv("XDG_CACHE_HOME", g_xdg, 1);
        setenv("VYRE_TELEMETRY_DIR", tel, 1);
        setenv("VYRE_CUDA_LIBRARY", FAKECUDA_LIB, 1);
        setenv("VYRE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
        unsetenv("VYRE_TELEMETRY");
        unsetenv("FAKECUDA_FAIL");
        unsetenv("FAKECUDA_MISSING");
        setenv("FAKECUDA_WRITE_MAX", "4096", 1); /* the counters count n, not the fake's bytes */
        execl(VYRE_BENCH_BIN, VYRE_BENCH_BIN, "run", "--suite", "memcpy", "--quick", "--no-kernels",
              "--db", db, (char *)NULL);
        _exit(127);
    }
    char page[800];
    snprintf(page, sizeof page, "%s/%d.vtel", tel, (int)pid);
    static vyre_telemetry_snapshot s;
    const uint64_t *v = s.counters.v;
    int seen = 0, status = 0;
    for (int waited = 0; waited < 180000; waited += 50) {
        if (vyre__telemetry_read(page, &s, NULL) == VYRE_OK && v[VYRE_CTR_H2D_BYTES] >= 65536 &&
            v[VYRE_CTR_D2H_BYTES] >= 65536 && v[VYRE_CTR_D2D_BYTES] >= 65536) {
            seen = 1;
            break;
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            pid = 0;
            break;
        }
        struct timespec ts = {0, 50000000L};
        nanosleep(&ts, NULL);
    }
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    cr_assert(seen, "the page never counted the suite's copies (h2d %llu, d2h %llu, d2d %llu; %s)",
              (unsigned long long)v[VYRE_CTR_H2D_BYTES], (unsigned long long)v[VYRE_CTR_D2H_BYTES],
              (unsigned long long)v[VYRE_CTR_D2D_BYTES],
              pid == 0 ? "vyre-bench ended first" : "timed out");
    cr_assert_geq(v[VYRE_CTR_H2D_COPIES], 1);
    cr_assert_geq(v[VYRE_CTR_D2H_COPIES], 1);
    /* Whole copies of the suite's sizes (64 KiB the smallest). */
    cr_assert_eq(v[VYRE_CTR_H2D_BYTES] % 65536, 0);
    cr_assert_eq(v[VYRE_CTR_LAUNCHES], 0, "copies are not launches");
}

/* --- rounds and drift (issue 23) ----------------------------------------- */

Test(bench_cli, rounds_must_be_a_whole_number_from_1_to_100)
{
    static const char *const bad[] = {"0", "1.5", "101", "x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_proc p;
        bench(&p, ARGS("run", "--suite", "cache", "--rounds", bad[i]), ENV(NODRIVER));
        cr_assert_eq(p.exit_code, 2, "--rounds %s: %s", bad[i], p.err);
        cr_assert_str_eq(p.out, "");
        char want[200];
        snprintf(want, sizeof want, "vyre-bench: error: bad value '%s' for --rounds", bad[i]);
        cr_assert(starts_with(p.err, want), "%s", p.err);
        tu_proc_free(&p);
    }
}

/* A done run of two host references and two cache points, 5 rounds of 20
 * samples each (1% spread), the references scaled by ref and the points
 * by work. */
static void drift_run(vyre_results *db, double ref, double work, uint64_t seed)
{
    static const struct {
        const char *suite, *bench;
        double ns;
    } k_points[] = {{"reference", "reference.cpu", 300000},
                    {"reference", "reference.fsync", 2000000},
                    {"cache", "cache.store", 250000},
                    {"cache", "cache.hit", 9000}};
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "cache");
    snprintf(r.command_line, sizeof r.command_line, "test");
    cr_assert_eq(vyre__bench_run_begin(db, &r, NULL), 0);
    for (size_t k = 0; k < sizeof k_points / sizeof k_points[0]; k++) {
        vyre_bench_point p;
        memset(&p, 0, sizeof p);
        p.run_id = r.id;
        p.seq = (int)k;
        snprintf(p.suite, sizeof p.suite, "%s", k_points[k].suite);
        snprintf(p.benchmark, sizeof p.benchmark, "%s", k_points[k].bench);
        p.device = -1;
        p.mode = VYRE_BENCH_HOST;
        p.items = 1;
        cr_assert_eq(vyre__bench_point_begin(db, &p, NULL), 0);
        double scale = k < 2 ? ref : work;
        vyre_bench_sample s[100];
        double v[100];
        memset(s, 0, sizeof s);
        uint64_t st = seed + k;
        for (size_t i = 0; i < 100; i++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            double u = (double)(st >> 11) / 4503599627370496.0 - 1.0;
            s[i].value = v[i] = k_points[k].ns * scale * (1.0 + 0.01 * u);
            s[i].round = (unsigned)(i / 20);
        }
        cr_assert_eq(vyre__stats_compute(v, 100, &p.stats, NULL), 0);
        p.rounds = 5;
        snprintf(p.stop, sizeof p.stop, "test");
        cr_assert_eq(vyre__bench_point_finish(db, &p, s, 100, NULL), 0);
    }
    cr_assert_eq(vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, NULL), 0);
}

/* The machine drifted as much as the points: no verdict on the code, so
 * the comparison is INCONCLUSIVE (exit 4, issue 34), never FAIL. */
Test(bench_cli, compare_calls_a_change_the_references_share_drift_and_is_inconclusive)
{
    char path[700];
    snprintf(path, sizeof path, "%s/r.sqlite3", g_tmp);
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(path, &db, NULL), 0);
    drift_run(db, 1.0, 1.0, 10);
    drift_run(db, 1.2, 1.2, 20); /* the machine, not the code, got 20% slower */
    drift_run(db, 1.2, 1.6, 30); /* the code got slower beyond the machine's drift */
    vyre_results_close(db);

    tu_proc p;
    bench(&p, ARGS("compare", "--db", path, "1", "2"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 4, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "machine drift (references): reference.cpu B/A 1.2"), "%s", p.out);
    cr_assert(strstr(p.out, "\n0 faster, 0 slower, 0 same, 0 noisy, 4 drift, 0 unmatched\n"), "%s",
              p.out);
    cr_assert(strstr(p.out, "verdict: INCONCLUSIVE (0 of 2 points judged; not judged: 2 DRIFT)\n"),
              "%s", p.out);
    cr_assert(strstr(p.err, "vyre-bench: inconclusive: 2 of 2 points could not be judged (2 "
                            "DRIFT), more than a quarter; what helps: an idle machine between the "
                            "runs, or a pooled baseline (--baseline '... last:5')\n"),
              "%s", p.err);
    tu_proc_free(&p);

    bench(&p, ARGS("compare", "--db", path, "--json", "1", "2"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 4, "%s%s", p.out, p.err);
    json_error_t je;
    json_t *o = json_loads(p.out, 0, &je);
    cr_assert_not_null(o, "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(o, "schema_version")), 4);
    cr_assert_str_eq(json_string_value(json_object_get(o, "verdict")), "inconclusive");
    cr_assert_str_eq(json_string_value(json_object_get(o, "test")),
                     "hierarchical-bootstrap-median-ratio");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(o, "summary"), "drift")), 4);
    json_t *pt = json_array_get(json_object_get(o, "points"), 2);
    cr_assert_str_eq(json_string_value(json_object_get(pt, "benchmark")), "cache.store");
    cr_assert_str_eq(json_string_value(json_object_get(pt, "verdict")), "drift");
    cr_assert_str_eq(json_string_value(json_object_get(pt, "verdict_before_drift")), "slower");
    cr_assert(json_is_false(json_object_get(pt, "is_reference")));
    cr_assert_eq(json_integer_value(json_object_get(pt, "rounds_a")), 5);
    cr_assert_float_eq(json_real_value(json_object_get(pt, "drift_ratio")), 1.2, 0.01);
    cr_assert(json_is_null(json_object_get(pt, "cycles")));
    json_decref(o);
    tu_proc_free(&p);

    bench(&p, ARGS("compare", "--db", path, "1", "3"), ENV(NODRIVER));
    cr_assert_eq(p.exit_code, 1, "1.6x against a 1.2x drift is a regression: %s", p.out);
    cr_assert(strstr(p.out, "\n0 faster, 2 slower, 0 same, 0 noisy, 2 drift, 0 unmatched\n"), "%s",
              p.out);
    tu_proc_free(&p);
}

/* --- reference.gpu and the SM clock, through the fake driver and NVML ---------- */

/* The memcpy suite on the fake driver, quickly, in 2 rounds, with the fake
 * NVML naming the same GPU (FAKENVML_UUID_AS_CUDA), so SM clocks are
 * recorded with every GPU sample; clocks: FAKENVML_SM_CLOCKS or NULL
 * (1500 MHz throughout). */
static void bench_memcpy_nvml(tu_proc *p, const char *db, const char *clocks, int json)
{
    const char *const args[] = {"run",
                                "--suite",
                                "memcpy",
                                "--quick",
                                "--no-kernels",
                                "--db",
                                db,
                                "--rounds",
                                "2",
                                "--min-samples",
                                "4",
                                "--min-time",
                                "0",
                                "--max-noise",
                                "100",
                                "--timeout",
                                "20",
                                json ? "--json" : "-q",
                                NULL};
    bench(p, args,
          ENV(FAKE, "VYRE_NVML_LIBRARY=" FAKENVML_LIB, "FAKENVML_UUID_AS_CUDA=1",
              "FAKENVML_THROTTLE=0", "VYRE_TELEMETRY=0", "FAKECUDA_WRITE_MAX=4096",
              clocks ? clocks : "FAKENVML_SM_CLOCKS"));
}

Test(bench_cli, a_moving_sm_clock_is_noted_once_with_the_command_that_locks_it, .timeout = 120)
{
    char db[700];
    snprintf(db, sizeof db, "%s/results.sqlite3", g_tmp);
    tu_proc p;
    bench_memcpy_nvml(&p, db, "FAKENVML_SM_CLOCKS=1500,1980,1755", 0);
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert_str_eq(p.err,
                     "vyre-bench: note: the SM clock moved between 1500 and 1980 MHz during the "
                     "run: GPU times follow it, and compare falls back to clock cycles\n"
                     "hint: lock the clocks for comparable runs: sudo nvidia-smi "
                     "--lock-gpu-clocks=1980,1980 (undo: sudo nvidia-smi --reset-gpu-clocks)\n");
    tu_proc_free(&p);
}

/* A steady clock says nothing; two runs compare their GPU points through
 * reference.gpu, measured in both (the fake's times are whatever the CPU
 * gives: no verdict is asserted). */
Test(bench_cli, a_steady_clock_says_nothing_and_gpu_points_drift_by_reference_gpu, .timeout = 180)
{
    char db[700];
    snprintf(db, sizeof db, "%s/results.sqlite3", g_tmp);
    tu_proc p;
    for (int i = 0; i < 2; i++) {
        bench_memcpy_nvml(&p, db, NULL, 0);
        cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
        cr_assert_str_eq(p.err, "", "a locked clock: no note");
        cr_assert(strstr(p.out, "| reference.gpu "), "%s", p.out);
        /* 15 copies, 3 host references, reference.gpu of device 0. */
        cr_assert(strstr(p.out, " done, 19 points stored in "), "%s", p.out);
        tu_proc_free(&p);
    }
    bench(&p, ARGS("compare", "--db", db, "--json", "1", "2"), ENV(NODRIVER));
    cr_assert(p.exit_code == 0 || p.exit_code == 1 || p.exit_code == 4, "%d: %s", p.exit_code,
              p.err);
    json_error_t je;
    json_t *o = json_loads(p.out, 0, &je);
    cr_assert_not_null(o, "%s", p.out);
    /* Any verdict (the fake's times are the CPU's), but the exit status is it. */
    const char *v = json_string_value(json_object_get(o, "verdict"));
    cr_assert_str_eq(v, p.exit_code == 0 ? "pass" : p.exit_code == 1 ? "fail" : "inconclusive");
    json_t *pts = json_object_get(o, "points");
    size_t copies = 0, i;
    json_t *pt;
    json_array_foreach(pts, i, pt)
    {
        const char *b = json_string_value(json_object_get(pt, "benchmark"));
        if (strncmp(b, "memcpy.", 7) != 0)
            continue;
        copies++;
        json_t *ref = json_object_get(pt, "reference");
        cr_assert(json_is_string(ref), "%s: no drift reference", b);
        cr_assert_str_eq(json_string_value(ref), "reference.gpu", "%s", b);
    }
    cr_assert_eq(copies, 15);
    json_decref(o);
    tu_proc_free(&p);
}
